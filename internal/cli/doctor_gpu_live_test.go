package cli

import (
	"strings"
	"testing"

	"github.com/ain-hpc/ain/pkg/sandbox/sandboxtest"
)

// TestDoctorGPULiveSandbox reads the sandbox's dcgm-exporter pages through the API server: a
// healthy sandbox is OK (exit 0); with the gpu-xid scenario the XID 79 and the thermal slowdown
// are problems (exit 5) naming their nodes; a node with no exporter is named.
func TestDoctorGPULiveSandbox(t *testing.T) {
	sb := sandboxtest.Get(t)
	code, stdout, stderr := runBenchCLI(t, "doctor", "gpu", "--node", "gpu-node-1,gpu-node-2", "--kubeconfig", sb.Kubeconfig)
	if code != 0 || !strings.HasPrefix(stdout, "OK") || !strings.Contains(stdout, "gpu-node-2") {
		t.Fatalf("healthy: exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	sb.UseScenario(t, "gpu-xid")
	code, stdout, stderr = runBenchCLI(t, "doctor", "gpu", "--node", "gpu-node-1,gpu-node-2", "--kubeconfig", sb.Kubeconfig)
	if code != 5 || !strings.Contains(stdout, "XID 79") || !strings.Contains(stdout, "gpu-node-2") || !strings.Contains(strings.ToLower(stdout), "thermal") {
		t.Errorf("gpu-xid: exit %d, want 5 with XID 79 and thermal\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	code, _, stderr = runBenchCLI(t, "doctor", "gpu", "--node", "no-such-node", "--kubeconfig", sb.Kubeconfig)
	if code != 5 || !strings.Contains(stderr, "no running dcgm-exporter pod") || !strings.Contains(stderr, "no-such-node") {
		t.Errorf("no exporter: exit %d\n%s", code, stderr)
	}
}
