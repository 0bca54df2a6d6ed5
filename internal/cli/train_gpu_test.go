package cli

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ain-hpc/ain/pkg/sandbox"
	"github.com/ain-hpc/ain/pkg/sandbox/sandboxtest"
)

// TestTrainGPUMetricsSandbox: `ain train qlora --gpu-metrics` shows, while the job runs, a GPU
// line for each of its three ranks from its own node's dcgm-exporter (read through the API
// server's port-forward) and a verdict on the whole.
func TestTrainGPUMetricsSandbox(t *testing.T) {
	sb := sandboxtest.Get(t)
	ns := sb.Namespace(t)
	if err := sandbox.EnsureSharedPVC(context.Background(), sb.REST, ns, sandbox.DefaultSharedClaim); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := runBenchCLI(t, "train", "qlora", "--skip-preflight", "--gpu-metrics", "--timeout", "3m", "--kubeconfig", sb.Kubeconfig, "-n", ns)
	if code != 0 {
		t.Fatalf("exit %d\nstdout:\n%.2000s\nstderr:\n%s", code, out, errOut)
	}
	for _, rank := range []string{"master-0", "worker-0", "worker-1"} { // the PyTorchJob's replicas
		found := false
		for _, l := range strings.Split(errOut, "\n") {
			found = found || strings.Contains(l, "GPU ") && strings.Contains(l, rank+" on gpu-node-") && strings.Contains(l, "(1 GPU): util ")
		}
		if !found {
			t.Errorf("no GPU line for %s:\n%s", rank, errOut)
		}
	}
	if !strings.Contains(errOut, "GPU-bound") {
		t.Errorf("no verdict on the whole:\n%s", errOut)
	}
}

// TestBenchGPUMetricsSandbox: bench allreduce --gpu-metrics reads the MPI workers' GPUs; the
// launcher, which the mpi-operator gives no GPU, is not reported as missing one.
func TestBenchGPUMetricsSandbox(t *testing.T) {
	sb := sandboxtest.Get(t)
	ns := sb.Namespace(t)
	code, stdout, stderr := runBenchCLI(t, "bench", "allreduce", "--algo", "ring", "--gpu-metrics", "--profile", benchProfile(t), "--skip-preflight",
		"--out", filepath.Join(t.TempDir(), "ring"), "--timeout", "3m", "--kubeconfig", sb.Kubeconfig, "-n", ns)
	if code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	if !strings.Contains(stderr, "worker-0 on gpu-node-") || !strings.Contains(stderr, "(1 GPU): util ") || strings.Contains(stderr, "GPU-bound") {
		t.Errorf("no worker GPU line:\n%s", stderr)
	}
	if strings.Contains(stderr, "launcher on") {
		t.Errorf("the launcher is reported:\n%s", stderr)
	}
}
