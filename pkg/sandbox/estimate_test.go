package sandbox

import (
	"testing"
	"time"
)

// The estimate follows the components' known costs, not the average of those done: when the
// cheap components are done and Kubernetes starts, most of the build is still ahead.
func TestBuildEstimate(t *testing.T) {
	comps := []string{"etcd", "kwok", "mpi-operator", "jobset", "trainer", "kubernetes"}
	min := func(m float64) time.Duration { return time.Duration(m * float64(time.Minute)) }
	for _, c := range []struct {
		name          string
		done          int
		took, current time.Duration
		wantMin       float64 // the estimate in minutes, within ±0.1
	}{
		{"nothing built yet: the reference figures", 0, 0, 0, 22.0},
		{"five done at the reference pace, kubernetes starting", 5, min(9), 0, 13.0},
		{"five done twice as slow", 5, min(18), 0, 26.0},
		{"kubernetes half way at the reference pace", 5, min(9), min(6.5), 6.5},
		{"kubernetes over its estimate: a tenth of it left", 5, min(9), min(20), 1.3},
		{"everything built", 6, min(22), 0, 0},
	} {
		got := BuildEstimate(comps, c.done, c.took, c.current).Minutes()
		if got < c.wantMin-0.1 || got > c.wantMin+0.1 {
			t.Errorf("%s: %.2f min, want %.1f", c.name, got, c.wantMin)
		}
	}
	if ColdCost("no-such") <= 0 {
		t.Error("a component with no figure has no cost")
	}
}
