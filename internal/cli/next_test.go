package cli

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ain-hpc/ain/internal/ainerr"
	"github.com/ain-hpc/ain/pkg/bench"
	"github.com/ain-hpc/ain/pkg/hang"
	"github.com/ain-hpc/ain/pkg/jobs"
	"github.com/ain-hpc/ain/pkg/nccl"
	"github.com/ain-hpc/ain/pkg/next"
	"github.com/ain-hpc/ain/pkg/preflight"
	"github.com/ain-hpc/ain/pkg/profile"
	"github.com/ain-hpc/ain/pkg/recipe"
)

// The libraries name the ain command a finding, check or error suggests as data (package next);
// these tests fail when the command tree stops printing it where the user reads the fix.

func TestNextCommandsPrintedAfterTheFix(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"nccl finding", []string{"doctor", "nccl-log", testdataPath("nccl", "logs/socket-no-device.log")},
			"so check the node's ports (run `ain doctor ib-ports`)\n"},
		{"launcher report", []string{"doctor", "launcher", testdataPath("mpilauncher", "ompi-rank-killed-other.log")},
			"the analysis of its NCCL log) (run `ain doctor nccl-log`)\n"},
		{"counters finding", []string{"doctor", "counters", testdataPath("counters", "socket-fallback-before.txt"), testdataPath("counters", "socket-fallback-after.txt"), "--expect-bytes", "36G"},
			"did not run over these HCAs (run `ain doctor nccl-log`)\n"},
		{"dcgm problem", []string{"doctor", "gpu", testdataPath("dcgm", "idle-rank.txt")},
			"find the rank it waits on (run `ain doctor hang`)\n"},
	} {
		_, out, _ := runDoctorCLI(t, "", tc.args...)
		if !strings.Contains(out, tc.want) {
			t.Errorf("%s: the output lacks %q:\n%s", tc.name, tc.want, out)
		}
	}
}

func TestNextCommandsOfReportsAndChecks(t *testing.T) {
	var out bytes.Buffer
	a := &App{Streams: Streams{Out: &out, Err: &out}, Now: time.Now, Getenv: func(string) string { return "" }}

	(&hang.Report{Status: hang.StatusInCollective, NRanks: 2, Fix: "check the ports", Next: []next.Command{"doctor nccl-log", "doctor ib-ports"}}).WriteText(a.Streams.Out, withNext)
	(&preflight.Result{Checks: []preflight.Check{{Name: "operators", Status: preflight.Warn, Message: "unknown",
		Fix: "ask for the node read", Next: []next.Command{"preflight --print-role --node-read"}}}}).WriteText(a.Streams.Out, preflight.TextOptions{Brief: true, Fix: withNext})
	(&jobs.Summary{Transport: "ib", Problems: []nccl.Finding{{Code: "wire", Message: "counters contradict the log",
		Fix: "read the counters", Next: []next.Command{"doctor counters --node NODE", "doctor nccl-log"}}}}).WriteText(&out, a.textOptions())
	res, err := bench.Load(savedBench(t, "sock", "ib", "socket"))
	if err != nil {
		t.Fatal(err)
	}
	a.printBenchReport(res, nil)
	for _, want := range []string{
		"fix: check the ports (run `ain doctor nccl-log`, `ain doctor ib-ports`)\n",
		"fix: ask for the node read (run `ain preflight --print-role --node-read`)\n",
		"fix: read the counters (run `ain doctor counters --node NODE`, `ain doctor nccl-log`)\n",
		"next socket: run `ain doctor nccl-log`, `ain doctor ib-ports`\n",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the output lacks %q:\n%s", want, out.String())
		}
	}
}

func TestNextCommandsOfErrorsPrintedAsHints(t *testing.T) {
	serving, err := recipe.Load("vllm", nil)
	if err != nil {
		t.Fatal(err)
	}
	_, buildErr := jobs.Build(serving, profile.Default(), jobs.Options{})
	_, _, benchErr := bench.LastAllreduce(filepath.Join(t.TempDir(), "none"))
	badProfile := filepath.Join(t.TempDir(), "p.yaml")
	if err := os.WriteFile(badProfile, []byte("apiVersion: ain.dev/v1alpha1\nkind: FabricProfile\nspec:\n  gidIndex: \"x\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, profErr := profile.Load(profile.Options{Path: badProfile, Getenv: func(string) string { return "" }})
	_, _, recipeErr := recipe.Resolve("")
	for _, tc := range []struct {
		name string
		err  error
		want string
	}{
		{"jobs", buildErr, "hint: run `ain serve`\n"},
		{"bench", benchErr, "hint: run `ain bench allreduce`\n"},
		{"profile", profErr, "hint: run `ain doctor ib-ports`\n"},
		{"recipe", recipeErr, "hint: run `ain recipes list`\n"},
		// A command the CLI's own hint names already is not repeated.
		{"named", ainerr.New(ainerr.Usage, next.With(errors.New("x"), "recipes list"), "see `ain recipes list`"), "hint: see `ain recipes list`\n"},
	} {
		if tc.err == nil {
			t.Errorf("%s: no error", tc.name)
			continue
		}
		var out bytes.Buffer
		a := &App{Streams: Streams{Out: &out, Err: &out}}
		a.printHints(tc.err)
		if got := out.String(); !strings.HasSuffix(got, tc.want) || strings.Count(got, "hint:") != strings.Count(tc.want, "hint:") {
			t.Errorf("%s: printed %q, want it to end in %q (error: %v)", tc.name, got, tc.want, tc.err)
		}
	}
}

// Through the CLI: a profile's field problem keeps its suggested command after the CLI
// re-indents the problems (asUsage), beside the CLI's own hint.
func TestProfileProblemNextThroughCLI(t *testing.T) {
	bad := filepath.Join(t.TempDir(), "p.yaml")
	if err := os.WriteFile(bad, []byte("apiVersion: ain.dev/v1alpha1\nkind: FabricProfile\nspec:\n  gidIndex: \"x\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	code, _, errOut := runBenchCLI(t, "train", "allreduce", "--profile", bad, "--dry-run=client")
	if code != int(ainerr.Usage) || !strings.Contains(errOut, "spec.gidIndex") || !strings.Contains(errOut, "hint: run `ain doctor ib-ports`") {
		t.Fatalf("exit %d\n%s", code, errOut)
	}
}
