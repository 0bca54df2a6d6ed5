package strict

import (
	"testing"

	"github.com/ain-hpc/ain/pkg/next"
)

// Counted counts the problems, indents each line and keeps the commands they suggest.
func TestProblemsCounted(t *testing.T) {
	ps := Problems{{Source: "r.yaml", Line: 3, Path: "spec.nodes", Msg: "must be at least 1", Next: []next.Command{"recipes show qlora"}},
		{Source: "r.yaml", Line: 7, Path: "spec.gpus", Msg: "unknown field"}}
	err := ps.Counted()
	want := "2 problems:\n  " + ps[0].Error() + "\n  " + ps[1].Error()
	if err.Error() != want {
		t.Errorf("got %q\nwant %q", err.Error(), want)
	}
	if cmds := next.Of(err); len(cmds) != 1 || cmds[0] != "recipes show qlora" {
		t.Errorf("commands %v", cmds)
	}
	if got := ps[:1].Counted().Error(); got != "1 problem:\n  "+ps[0].Error() {
		t.Errorf("one: %q", got)
	}
}
