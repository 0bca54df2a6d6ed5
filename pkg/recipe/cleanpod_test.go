package recipe

import (
	"strings"
	"testing"
)

// An MPI recipe defaults to cleanPodPolicy Running (its workers sleep 365d and would hold GPUs
// and RDMA devices after the launcher ends); None is allowed but warned about.
func TestMPICleanPodPolicy(t *testing.T) {
	r, err := Load("allreduce", nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := r.MPI.RunPolicy.CleanPodPolicy; got != "Running" {
		t.Errorf("allreduce cleanPodPolicy %q, want Running", got)
	}
	q, err := Load("qlora", nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := q.Training.RunPolicy.CleanPodPolicy; got != "None" {
		t.Errorf("qlora cleanPodPolicy %q, want None", got)
	}
	r, err = Load("allreduce", []string{"runPolicy.cleanPodPolicy=None"})
	if err != nil {
		t.Fatal(err)
	}
	if w := r.Warnings().Error(); !strings.Contains(w, "spec.runPolicy.cleanPodPolicy") || !strings.Contains(w, "sleep 365d") {
		t.Errorf("no warning for None on an MPI recipe: %q", w)
	}
}
