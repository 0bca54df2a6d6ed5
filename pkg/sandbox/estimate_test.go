package sandbox

import (
	"testing"
	"time"
)

// The estimate follows the components' known costs, not the average of those done: when the
// cheap components are done and Kubernetes starts, most of the build is still ahead.
func TestBuildEstimate(t *testing.T) {
	comps := []string{"etcd", "kwok", "mpi-operator", "jobset", "trainer", "kubernetes"}
	var all, firstFive time.Duration
	for i, c := range comps {
		all += ColdCost(c)
		if i < 5 {
			firstFive += ColdCost(c)
		}
	}
	k8s := ColdCost("kubernetes")
	if k8s < all/3 {
		t.Fatalf("kubernetes %s of %s: the table lost its largest component", k8s, all)
	}
	for _, c := range []struct {
		name          string
		done          int
		took, current time.Duration
		want          time.Duration
	}{
		{"nothing built yet: the reference figures", 0, 0, 0, all},
		{"five done at the reference pace, kubernetes starting", 5, firstFive, 0, k8s},
		{"five done twice as slow", 5, 2 * firstFive, 0, 2 * k8s},
		{"kubernetes half way at the reference pace", 5, firstFive, k8s / 2, k8s / 2},
		{"kubernetes over its estimate: a tenth of it left", 5, firstFive, 3 * k8s, k8s / 10},
		{"everything built", 6, all, 0, 0},
	} {
		got := BuildEstimate(comps, c.done, c.took, c.current)
		if d := got - c.want; d < -time.Second || d > time.Second {
			t.Errorf("%s: %s, want %s", c.name, got, c.want)
		}
	}
	if ColdCost("no-such") <= 0 {
		t.Error("a component with no figure has no cost")
	}
}
