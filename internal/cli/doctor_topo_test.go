package cli

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ain-hpc/ain/internal/ainerr"
	"github.com/ain-hpc/ain/pkg/probe"
	"github.com/ain-hpc/ain/pkg/sandbox"
	"github.com/ain-hpc/ain/pkg/sandbox/sandboxtest"
)

// TestDoctorTopo: the JSON keys the issue fixes (gpus[].gpu/nic/device/path/gdr, layout), the exit
// code per layout, stdin, and the error of a file without a matrix.
func TestDoctorTopo(t *testing.T) {
	code, out, _ := runDoctorCLI(t, "", "doctor", "topo", testdataPath("topo", "smi-h100-ideal-tabs.txt"), "-o", "json")
	if code != 0 {
		t.Fatalf("ideal layout: exit %d\n%s", code, out)
	}
	var r struct {
		GPUs   []map[string]any `json:"gpus"`
		Layout string           `json:"layout"`
		HCA    string           `json:"ncclIbHca"`
	}
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if r.Layout != "ideal" || len(r.GPUs) != 8 || !strings.HasPrefix(r.HCA, "=mlx5_8,") {
		t.Errorf("layout %s, %d GPUs, hca %s", r.Layout, len(r.GPUs), r.HCA)
	}
	g := r.GPUs[0]
	if g["gpu"] != float64(0) || g["nic"] != "NIC8" || g["device"] != "mlx5_8" || g["path"] != "PIX" || g["gdr"] != true {
		t.Errorf("gpus[0] = %v", g)
	}

	b, err := os.ReadFile(testdataPath("topo", "smi-dgx-2gpu-per-nic-mlx5-header.txt"))
	if err != nil {
		t.Fatal(err)
	}
	code, out, _ = runDoctorCLI(t, string(b), "doctor", "topo", "-")
	if code != int(ainerr.CheckFailed) || !strings.HasPrefix(out, "PROBLEM: constrained layout: fewer NICs (4) than GPUs (8)") ||
		!strings.Contains(out, "NCCL_IB_HCA==mlx5_0,mlx5_1,mlx5_2,mlx5_3") {
		t.Errorf("constrained layout: exit %d\n%s", code, out)
	}

	code, out, _ = runDoctorCLI(t, "", "doctor", "topo", testdataPath("topo", "smi-2gpu-gpu-only.txt"), "-o", "json")
	if code != int(ainerr.CheckFailed) || !strings.Contains(out, `"layout": "no-nics"`) || !strings.Contains(out, `"nic": null`) {
		t.Errorf("GPU-only: exit %d\n%s", code, out)
	}

	code, _, errOut := runDoctorCLI(t, "just text\n", "doctor", "topo", "-")
	if code != int(ainerr.Failure) || !strings.Contains(errOut, "no topology matrix found") {
		t.Errorf("no matrix: exit %d, stderr %s", code, errOut)
	}
	code, _, errOut = runDoctorCLI(t, "", "doctor", "topo", "a", "b")
	if code != int(ainerr.Usage) || !strings.Contains(errOut, "give one topology") {
		t.Errorf("two files: exit %d, stderr %s", code, errOut)
	}
}

// TestDoctorTopoNodeSandbox: `ain doctor topo --node` runs its probe pod on the sandbox's real
// API server (pinned to the node, holding its 8 GPUs and the RDMA resource); the simulated
// kubelet answers with an 8x H100 matrix, which reads as the ideal layout.
func TestDoctorTopoNodeSandbox(t *testing.T) {
	sb := sandboxtest.Get(t)
	ns := sb.Namespace(t)
	node := sandbox.NodeName(1)
	code, out, errOut := runBenchCLI(t, "doctor", "topo", "--node", node, "--kubeconfig", sb.Kubeconfig, "-n", ns, "-o", "json")
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
	if !strings.Contains(errOut, "probing "+node+": nvidia-smi topo -m in a pod holding its 8 GPU(s)") {
		t.Errorf("stderr: %s", errOut)
	}
	var r struct {
		Layout string
		GPUs   []map[string]any
	}
	if err := json.Unmarshal([]byte(out), &r); err != nil || r.Layout != "ideal" || len(r.GPUs) != 8 {
		t.Fatalf("%v: %s", err, out)
	}
	// The probe pod is gone afterwards.
	pods, err := sb.Clientset(t).CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{LabelSelector: probe.LabelProbe})
	if err != nil || len(pods.Items) != 0 {
		t.Errorf("probe pods left: %v %d", err, len(pods.Items))
	}
	code, _, errOut = runBenchCLI(t, "doctor", "topo", "--node", "no-such-node", "--kubeconfig", sb.Kubeconfig, "-n", ns)
	if code == 0 || !strings.Contains(errOut, "no-such-node") {
		t.Errorf("unknown node: exit %d %s", code, errOut)
	}
}
