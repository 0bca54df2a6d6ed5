package cli

import (
	"testing"

	"github.com/ain-hpc/ain/pkg/jobs"
)

// TestRankResult: the summary's RESULT cell for each rank, against the job's phase (issue 19: a
// worker shown "Running" under a Succeeded job).
func TestRankResult(t *testing.T) {
	zero, one := int32(0), int32(1)
	for _, c := range []struct {
		job  string
		pod  jobs.PodInfo
		want string
	}{
		{jobs.PhaseSucceeded, jobs.PodInfo{Phase: "Succeeded", ExitCode: &zero}, "exit 0"},
		{jobs.PhaseFailed, jobs.PodInfo{Phase: "Failed", ExitCode: &one}, "exit 1"},
		{jobs.PhaseSucceeded, jobs.PodInfo{Phase: "Running"}, "still running at job end"},
		{jobs.PhaseFailed, jobs.PodInfo{Phase: "Pending"}, "never started (job ended)"},
		{jobs.PhaseRunning, jobs.PodInfo{Phase: "Running"}, "Running"},
		{jobs.PhaseSucceeded, jobs.PodInfo{Phase: "Unknown"}, "Unknown"},
	} {
		if got := rankResult(c.job, c.pod); got != c.want {
			t.Errorf("job %s, pod %s (exit %v): %q, want %q", c.job, c.pod.Phase, c.pod.ExitCode, got, c.want)
		}
	}
}
