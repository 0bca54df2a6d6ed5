package cli

import (
	"strings"
	"testing"

	"github.com/ain-hpc/ain/internal/ainerr"
)

// A bad value given on the command line is blamed on the flag the user typed, never on a line
// of the built-in recipe it was merged into: one byte grammar (the recipe's) for --min/--max,
// and --set values reported at the --set flag.
func TestFlagProblemsNameTheFlag(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"bench", "allreduce", "--max", "1T"}, `--max: "1T" is not a size`},
		{[]string{"bench", "allreduce", "--min", "0"}, `--min: "0": a size must be at least 1 byte`},
		{[]string{"render", "qlora", "--set", "nodes=0"}, "--set nodes=0: spec.nodes: must be at least 1, got 0"},
		{[]string{"render", "allreduce", "--set", "ncclTests.maxBytes=1T"}, "--set ncclTests.maxBytes=1T: spec.ncclTests.maxBytes"},
	} {
		code, _, errb := runDoctorCLI(t, "", c.args...)
		if code != int(ainerr.Usage) || !strings.Contains(errb, c.want) {
			t.Errorf("%v: exit %d, want %d and %q in:\n%s", c.args, code, ainerr.Usage, c.want, errb)
		}
		if strings.Contains(errb, "builtin:") || strings.Contains(errb, ".yaml:") {
			t.Errorf("%v: blamed on a recipe line:\n%s", c.args, errb)
		}
	}
}

// A value urfave/cli cannot parse is said as --flag "value" and what the flag takes, from its
// type (it was Go's `invalid value "x" for flag -qps: parse error`).
func TestFlagParseErrorsSayTheType(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"bench", "rdma", "--qps", "x"}, `--qps "x": not a whole number`},
		{[]string{"bench", "allreduce", "--timeout", "5q"}, `--timeout "5q": not a duration (e.g. 90s, 30m, 2h)`},
		{[]string{"doctor", "counters", "--node", "n", "--interval", "zz"}, `--interval "zz": not a duration`},
	} {
		code, _, errb := runDoctorCLI(t, "", c.args...)
		if code != int(ainerr.Usage) || !strings.Contains(errb, c.want) || strings.Contains(errb, "parse error") {
			t.Errorf("%v: exit %d, want %d and %q in:\n%s", c.args, code, ainerr.Usage, c.want, errb)
		}
	}
}
