package sandbox

import "testing"

func TestLookupRealImage(t *testing.T) {
	for _, tc := range []struct {
		image string
		port  int
		ok    bool
	}{
		{"ghcr.io/coreweave/nccl-tests:12.4.1-cudnn-devel-ubuntu22.04-nccl2.21.5-1-85f9143", 22, true},
		{"mpioperator/openmpi:v0.8.0", 2222, true},
		{"docker.io/mpioperator/base:latest", 2222, true},
		{"mpioperator/openmpi@sha256:0123", 2222, true},
		{"ghcr.io/coreweave/nccl-tests:other-tag", 0, false},
		{"busybox:1.36", 0, false},
		{"localhost:5000/mpioperator/base", 0, false},
	} {
		r, ok := lookupRealImage(tc.image)
		if ok != tc.ok || r.SSHPort != tc.port {
			t.Errorf("%s: %+v %v, want port %d %v", tc.image, r, ok, tc.port, tc.ok)
		}
	}
}

// The real mode is off unless asked for: a Config without it runs no pod for real.
func TestRealPodsOffByDefault(t *testing.T) {
	if (Config{}).WithDefaults().RealPods {
		t.Fatal("RealPods on by default")
	}
	a := &agent{}
	if _, ok := a.realImageOf(nil); ok {
		t.Fatal("an agent without real mode runs pods for real")
	}
}
