package recipe

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// Requests parses what is set, leaves out what is not, and names the field it could not parse.
func TestResourcesRequests(t *testing.T) {
	got, err := Resources{CPU: "7500m", Memory: "64Gi"}.Requests("spec.resources")
	if err != nil || got.Cpu().MilliValue() != 7500 || got.Memory().Value() != 64<<30 {
		t.Fatalf("%v %v", got, err)
	}
	if got, err := (Resources{Memory: "2Gi"}).Requests("spec.launcher.resources"); err != nil || len(got) != 1 {
		t.Errorf("memory only: %v %v", got, err)
	} else if _, ok := got[corev1.ResourceCPU]; ok {
		t.Errorf("an unset CPU was requested: %v", got)
	}
	for _, c := range []struct {
		r    Resources
		want string
	}{{Resources{CPU: "eight"}, "spec.launcher.resources.cpu: "}, {Resources{CPU: "1", Memory: "64 GB"}, "spec.launcher.resources.memory: "}} {
		if _, err := c.r.Requests("spec.launcher.resources"); err == nil || !strings.HasPrefix(err.Error(), c.want) {
			t.Errorf("%+v: %v, want %q...", c.r, err, c.want)
		}
	}
}
