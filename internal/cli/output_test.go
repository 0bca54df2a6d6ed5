package cli

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/ain-hpc/ain/internal/ainerr"
)

type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, errors.New("broken pipe") }

// The one JSON writer keeps <, > and & readable and reports a failed write.
func TestWriteJSON(t *testing.T) {
	var buf bytes.Buffer
	a := &App{Streams: Streams{Out: &buf}}
	if err := a.writeJSON(map[string]string{"line": "NCCL INFO Channel 00/0 : 0[0] -> 1[1] <0> & more"}); err != nil {
		t.Fatal(err)
	}
	if want := "{\n  \"line\": \"NCCL INFO Channel 00/0 : 0[0] -> 1[1] <0> & more\"\n}\n"; buf.String() != want {
		t.Errorf("got %q, want %q", buf.String(), want)
	}
	a.Streams.Out = failingWriter{}
	if err := a.writeJSON(1); err == nil || !strings.Contains(err.Error(), "broken pipe") {
		t.Errorf("a failed write was not reported: %v", err)
	}
	if err := a.writeJSON(func() {}); err == nil {
		t.Error("an unencodable value was not reported")
	}
}

// -o is checked when the flags are parsed: a bad format is a usage error naming -o and the
// accepted values, before any work (preflight would otherwise contact the cluster first).
func TestOutputFormatCheckedAtParse(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"preflight", "-o", "yaml"}, "-o yaml: use table or json"},
		{[]string{"recipes", "list", "-o", "csv"}, "-o csv: use table or json"},
		{[]string{"doctor", "nccl-log", "missing.log", "-o", "xml"}, "-o xml: use text or json"},
		{[]string{"render", "qlora", "-o", "table"}, "-o table: use yaml or json"},
		{[]string{"models", "-o", "yaml"}, "-o yaml: use table or json"},
		{[]string{"chat", "test", "-f", "qa.yaml", "-o", "csv"}, "-o csv: use text or json"},
		{[]string{"serve", "status", "-o", "yaml"}, "-o yaml: use text or json"},
		{[]string{"bench", "compare", "a.json", "-o", "yaml"}, "-o yaml: use text, json or csv"},
	} {
		code, _, errb := runDoctorCLI(t, "", c.args...)
		if code != int(ainerr.Usage) || !strings.Contains(errb, c.want) {
			t.Errorf("%v: exit %d, want %d and %q:\n%s", c.args, code, ainerr.Usage, c.want, errb)
		}
	}
}
