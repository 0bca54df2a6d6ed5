package cli

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/ain-hpc/ain/internal/ainerr"
	"github.com/ain-hpc/ain/pkg/bench"
	"github.com/ain-hpc/ain/pkg/sandbox"
	"github.com/ain-hpc/ain/pkg/sandbox/sandboxtest"
)

// TestTrainWireSandbox: `ain train qlora` reads the RDMA port counters before the job and of its
// ranks' nodes after it, and reports the bytes per HCA: every node moved on NCCL's HCA on a
// healthy IB run; a socket fallback moves nothing and is not called IB (nor a wire
// contradiction); in wrong-hca the bytes cross mlx5_1 while NCCL names mlx5_0, which fails
// --require-transport ib.
func TestTrainWireSandbox(t *testing.T) {
	sb := sandboxtest.Get(t)
	for _, c := range []struct {
		scenario, transport string
		code                int
		moved               bool
		problem             string
	}{
		{"", "ib", 0, true, ""},
		{"socket-fallback", "socket", 0, false, ""},
		{"wrong-hca", "ib", int(ainerr.CheckFailed), true, bench.ProblemWrongHCA},
	} {
		t.Run(cmp.Or(c.scenario, "healthy"), func(t *testing.T) {
			if c.scenario != "" {
				sb.UseScenario(t, c.scenario)
			}
			ns := sb.Namespace(t)
			// The built-in recipes mount the shared NFS claim; the sandbox makes it in "default" only.
			if err := sandbox.EnsureSharedPVC(context.Background(), sb.REST, ns, sandbox.DefaultSharedClaim); err != nil {
				t.Fatal(err)
			}
			args := []string{"train", "qlora", "--skip-preflight", "--timeout", "3m", "-o", "json", "--kubeconfig", sb.Kubeconfig, "-n", ns}
			if c.problem != "" {
				args = append(args, "--require-transport", "ib")
			}
			code, out, errOut := runBenchCLI(t, args...)
			if code != c.code {
				t.Fatalf("exit %d, want %d\nstdout:\n%.2000s\nstderr:\n%s", code, c.code, out, errOut)
			}
			if !strings.Contains(errOut, "(before the job)") || !strings.Contains(errOut, "(after the job)") {
				t.Errorf("no counter snapshots:\n%s", errOut)
			}
			var got struct {
				Transport string `json:"transport"`
				Problems  []struct {
					Code string `json:"code"`
				} `json:"problems"`
				Wire *bench.Wire `json:"wire"`
			}
			if err := json.Unmarshal([]byte(out), &got); err != nil {
				t.Fatalf("%v\n%.2000s", err, out)
			}
			if got.Transport != c.transport {
				t.Errorf("transport %q, want %q", got.Transport, c.transport)
			}
			w := got.Wire
			if w == nil || len(w.Nodes) != 3 || w.Note != "" || w.FloorBytes != 1 {
				t.Fatalf("wire: %+v", w)
			}
			for _, n := range w.Nodes {
				if c.moved != (n.Sent > 0) {
					t.Errorf("%s sent %d bytes, want moved=%v", n.Node, n.Sent, c.moved)
				}
				wantPort := "mlx5_0:1"
				if c.scenario == "wrong-hca" {
					wantPort = "mlx5_1:1"
				}
				if c.moved && n.Ports[wantPort].XmitBytes == 0 {
					t.Errorf("%s: nothing on %s: %+v", n.Node, wantPort, n.Ports)
				}
			}
			var codes []string
			for _, p := range got.Problems {
				codes = append(codes, p.Code)
			}
			all := strings.Join(codes, ",")
			if strings.Contains(all, bench.ProblemWire) || c.problem == "" && strings.Contains(all, bench.ProblemWrongHCA) || !strings.Contains(all, c.problem) {
				t.Errorf("problems %v, want %q", codes, c.problem)
			}
			if c.problem != "" && len(w.Findings) != 3 {
				t.Errorf("findings %q, want one per node", w.Findings)
			}
		})
	}
}

// --require-bench (course 12.1.5, validate the nodes first): a passing two-node bench pins the
// training job's ranks to the nodes it measured; no bench, or one on fewer nodes than the job
// needs, refuses the job before anything is applied.
func TestTrainRequireBenchSandbox(t *testing.T) {
	sb := sandboxtest.Get(t)
	ns := sb.Namespace(t)
	if err := sandbox.EnsureSharedPVC(context.Background(), sb.REST, ns, sandbox.DefaultSharedClaim); err != nil {
		t.Fatal(err)
	}
	results := t.TempDir()
	common := []string{"--skip-preflight", "--timeout", "3m", "--kubeconfig", sb.Kubeconfig, "-n", ns}
	code, _, errOut := runBenchCLI(t, append([]string{"train", "qlora", "--require-bench", results, "--set", "nodes=2"}, common...)...)
	if code != int(ainerr.PreflightFailed) || !strings.Contains(errOut, "--require-bench: no allreduce bench under "+results) {
		t.Fatalf("no bench: exit %d\n%s", code, errOut)
	}
	code, out, errOut := runBenchCLI(t, append([]string{"bench", "allreduce", "--algo", "ring", "--nodes", "2", "--gpus-per-node", "1", "--out", filepath.Join(results, "b1")}, common...)...)
	if code != 0 {
		t.Fatalf("bench: exit %d\n%s\n%s", code, out, errOut)
	}
	res, err := bench.Load(filepath.Join(results, "b1"))
	if err != nil || len(res.Variants) != 1 || len(res.Variants[0].Nodes) != 2 {
		t.Fatalf("bench result: %v %+v", err, res)
	}
	measured := res.Variants[0].Nodes
	code, _, errOut = runBenchCLI(t, append([]string{"train", "qlora", "--require-bench", results, "--set", "nodes=3"}, common...)...)
	if code != int(ainerr.PreflightFailed) || !strings.Contains(errOut, "it measured 2 node(s)") || !strings.Contains(errOut, "the job needs 3") {
		t.Fatalf("too few nodes: exit %d\n%s", code, errOut)
	}
	code, out, errOut = runBenchCLI(t, append([]string{"train", "qlora", "--require-bench", results, "--set", "nodes=2", "--name", "validated", "-o", "json"}, common...)...)
	if code != 0 || !strings.Contains(errOut, "validated nodes: the ranks run only on "+strings.Join(measured, ",")) {
		t.Fatalf("validated train: exit %d\n%.2000s\n%s", code, out, errOut)
	}
	var sum struct {
		Pods []struct{ Name, Node string } `json:"pods"`
	}
	if err := json.Unmarshal([]byte(out), &sum); err != nil || len(sum.Pods) == 0 {
		t.Fatalf("summary: %v\n%.2000s", err, out)
	}
	for _, p := range sum.Pods {
		if !slices.Contains(measured, p.Node) {
			t.Errorf("rank %s ran on %s, not on the validated nodes %v", p.Name, p.Node, measured)
		}
	}
	// A measured node cordoned since the bench: refused before anything is applied (the pinned
	// ranks would stay Pending with only "didn't match Pod's node affinity/selector").
	cs := kubernetes.NewForConfigOrDie(sb.REST)
	cordon := func(off bool) {
		patch := fmt.Sprintf(`{"spec":{"unschedulable":%v}}`, off)
		if _, err := cs.CoreV1().Nodes().Patch(context.Background(), measured[0], types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	cordon(true)
	t.Cleanup(func() { cordon(false) })
	code, _, errOut = runBenchCLI(t, append([]string{"train", "qlora", "--require-bench", results, "--set", "nodes=2", "--name", "cordoned"}, common...)...)
	if code != int(ainerr.PreflightFailed) || !strings.Contains(errOut, measured[0]+": cordoned (spec.unschedulable)") || !strings.Contains(errOut, "nothing was applied") {
		t.Fatalf("cordoned validated node: exit %d\n%s", code, errOut)
	}
	tj := schema.GroupVersionResource{Group: "trainer.kubeflow.org", Version: "v1alpha1", Resource: "trainjobs"}
	if _, err := dynamic.NewForConfigOrDie(sb.REST).Resource(tj).Namespace(ns).Get(context.Background(), "cordoned", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("the refused job was applied: %v", err)
	}
	cordon(false)
	// The profile's spec.requireBench asks the same without the flag; its maxAge makes the
	// bench of a minute ago stale.
	prof := filepath.Join(t.TempDir(), "profile.yaml")
	body := "apiVersion: ain.dev/v1alpha1\nkind: FabricProfile\nspec:\n  fabric: ib\n  requireBench:\n    results: " + results + "\n    maxAge: 1ms\n"
	if err := os.WriteFile(prof, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, errOut = runBenchCLI(t, append([]string{"train", "qlora", "--profile", prof, "--set", "nodes=2", "--name", "stale"}, common...)...)
	if code != int(ainerr.PreflightFailed) || !strings.Contains(errOut, "the profile's spec.requireBench: the last allreduce bench") || !strings.Contains(errOut, "longer ago than 1ms allows") {
		t.Fatalf("stale bench from the profile: exit %d\n%s", code, errOut)
	}
}
