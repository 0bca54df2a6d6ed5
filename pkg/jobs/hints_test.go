package jobs

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
		{&ImmutableError{Kind: "MPIJob", Name: "j", Namespace: "team"}, "run it under another name (--name j-2), or remove the old one first: ain delete j -n team"},
		{&StuckError{Name: "j", Namespace: "team"}, "read the failed worker's log: `ain logs j --replica worker -n team`; then end the job: `ain delete j -n team`"},
		{&ControllerStalledError{Name: "j"}, "`ain preflight` checks the job controllers; `ain logs j` shows what the pods did"},
		{&NoAPIError{Workload: WorkloadMPI}, (&NoAPIError{Workload: WorkloadMPI}).Fix()},
	} {
		if got := c.err.Hint(cmd); got != c.want {
			t.Errorf("%T:\n got %s\nwant %s", c.err, got, c.want)
		}
	}
}
