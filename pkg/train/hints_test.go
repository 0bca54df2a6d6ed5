package train

import (
	"testing"

	"github.com/ain-hpc/ain/pkg/next"
)

// The hints name the job in its namespace, the commands worded by the caller.
func TestErrorHints(t *testing.T) {
	cmd := func(c next.Command) string { return "ain " + string(c) }
	for _, c := range []struct {
		err  next.Hinter
		want string
	}{
		{&TimeoutError{Name: "j", Namespace: "team"}, "the job keeps running: `ain status j -n team`, or end it: `ain delete j -n team`"},
		{&TransportError{Name: "j", Namespace: "team", Require: "ib", Got: "Socket"}, "see the evidence above; `ain doctor nccl-log j -n team` explains it per rank"},
		{&TransportError{Name: "j", Require: "ib", Findings: []string{"node-1 moved no byte"}}, "see the bytes per HCA above; `ain doctor counters --node NODE` reads a node's counters"},
		{&PinnedNodesError{Need: 2, Usable: 1}, "nothing was applied; bring the node back (kubectl uncordon NODE, or repair it), or validate nodes that are up with a new `ain bench allreduce --out DIR/NAME` run, or drop --require-bench"},
	} {
		if got := c.err.Hint(cmd); got != c.want {
			t.Errorf("%T:\n got %s\nwant %s", c.err, got, c.want)
		}
	}
	if got := (&TransportError{Require: "ib"}).Problem(); got != "NCCL used unknown (no NCCL transport lines in the logs)" {
		t.Errorf("problem without a transport: %s", got)
	}
}
