package cli

import (
	"cmp"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ain-hpc/ain/pkg/bench"
	"github.com/ain-hpc/ain/pkg/sandbox/sandboxtest"
)

// The hardware check of failure 2 on the sandbox: the RDMA port counters of the job's nodes,
// read by probe pods before and after each variant, move by what the simulated allreduce sent on
// an IB run, not at all on a socket fallback, and on another HCA than NCCL's in wrong-hca.
func TestBenchAllreduceWireSandbox(t *testing.T) {
	sb := sandboxtest.Get(t)
	for _, c := range []struct {
		scenario string
		code     int
		moved    bool
		problem  string
	}{
		{"", 0, true, ""},
		{"socket-fallback", 5, false, bench.ProblemSocketFallback},
		{"wrong-hca", 5, true, bench.ProblemWrongHCA + ": NCCL's log says it used mlx5_0:1, but on gpu-node-1 those ports sent 0 B and mlx5_1:1 sent"},
	} {
		t.Run(cmp.Or(c.scenario, "healthy"), func(t *testing.T) {
			if c.scenario != "" {
				sb.UseScenario(t, c.scenario)
			}
			ns := sb.Namespace(t)
			out := filepath.Join(t.TempDir(), "results")
			code, stdout, stderr := runBenchCLI(t, "bench", "allreduce", "--algo", "ring", "--skip-preflight", "--out", out, "--timeout", "4m", "--kubeconfig", sb.Kubeconfig, "-n", ns)
			if code != c.code {
				t.Fatalf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, c.code, stdout, stderr)
			}
			if !strings.Contains(stdout, "bytes that crossed each HCA") || !strings.Contains(stderr, "reading the RDMA port counters of gpu-node-1,gpu-node-2,gpu-node-3 (before ring)") {
				t.Errorf("no counter report:\nstdout:\n%s\nstderr:\n%s", stdout, stderr)
			}
			res, err := bench.Load(out)
			if err != nil {
				t.Fatal(err)
			}
			w := res.Variants[0].Wire
			if w == nil || len(w.Nodes) != 3 || w.FloorBytes == 0 || w.Note != "" {
				t.Fatalf("wire: %+v", w)
			}
			for _, n := range w.Nodes {
				if c.moved != (n.Sent >= w.FloorBytes) || !c.moved && n.Sent != 0 {
					t.Errorf("%s sent %d bytes, floor %d, want moved=%v", n.Node, n.Sent, w.FloorBytes, c.moved)
				}
			}
			if c.problem == "" && len(res.Problems) > 0 || !strings.Contains(strings.Join(res.Problems, "\n"), c.problem) {
				t.Errorf("problems %v, want %q", res.Problems, c.problem)
			}
			if c.scenario == "socket-fallback" && strings.Contains(strings.Join(res.Problems, "\n"), bench.ProblemWire) {
				t.Errorf("a socket run's still counters are not a contradiction: %v", res.Problems)
			}
		})
	}
}
