package preflight

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/ain-hpc/ain/pkg/next"
	"github.com/ain-hpc/ain/pkg/profile"
)

func gpuNode(name string, gpus int64) *corev1.Node {
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name},
		Status: corev1.NodeStatus{Allocatable: corev1.ResourceList{"nvidia.com/gpu": *resource.NewQuantity(gpus, resource.DecimalSI)}}}
}

// A node whose GPUs running pods hold all of gets no probe pod (the kubelet would refuse it):
// the error names the holders, and nothing was said to be probed.
func TestNodeTopologyGPUsHeld(t *testing.T) {
	holder := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "train-0", Namespace: "team"},
		Spec: corev1.PodSpec{NodeName: "gpu-1", Containers: []corev1.Container{{Name: "c",
			Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("2")}}}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning}}
	kc := fake.NewClientset(gpuNode("gpu-1", 2), holder)
	var said []string
	_, err := NodeTopology(context.Background(), Options{Kube: kc, Profile: profile.Default()}, "gpu-1", func(s string) { said = append(said, s) })
	var held *GPUsHeldError
	if !errors.As(err, &held) || held.Use.Allocatable != 2 || strings.Join(held.Use.Holders, ",") != "team/train-0" {
		t.Fatalf("err %v (%#v), want a *GPUsHeldError naming team/train-0", err, held)
	}
	if !strings.Contains(err.Error(), "all 2 nvidia.com/gpu of gpu-1 are held by running pods (team/train-0)") || len(said) > 0 {
		t.Errorf("err %q, progress %q", err, said)
	}
}

// A node that is not there is a *NodeGetError for the caller to classify; the same while
// interrupted is an interrupt before any probe pod.
func TestNodeFlowsNodeMissing(t *testing.T) {
	o := Options{Kube: fake.NewClientset(), Profile: profile.Default()}
	none := func(string) { t.Error("progress before the node was read") }
	_, err := NodeTopology(context.Background(), o, "gone", none)
	var get *NodeGetError
	if !errors.As(err, &get) || get.Node != "gone" || !strings.HasPrefix(err.Error(), "get node gone: ") {
		t.Errorf("topology: err %v, want a *NodeGetError", err)
	}
	if _, err := NodeCounterSnapshots(context.Background(), o, "gone", time.Second, none); !errors.As(err, &get) {
		t.Errorf("counters: err %v, want a *NodeGetError", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = NodeCounterSnapshots(ctx, o, "gone", time.Second, none)
	var intr *NodeInterruptedError
	if !errors.As(err, &intr) || intr.Started || err.Error() != "interrupted before a probe pod was created: nothing was left" {
		t.Errorf("interrupted: err %v, want an interrupt before any probe pod", err)
	}
}

func TestWritePortCause(t *testing.T) {
	var b bytes.Buffer
	fix := func(s string, cmds []next.Command) string { return s + " +" + string(cmds[0]) }
	WritePortCauseHeading(&b, []string{"n1", "n2"})
	WritePortCause(&b, []Check{
		{Status: Pass, Message: "n1: 1 port ACTIVE"},
		{Status: Fail, Target: "n2", Message: "mlx5_0:1 INIT", Evidence: []string{"state: 2: INIT"}, Fix: "start a subnet manager", Next: []next.Command{"doctor ib-ports"}},
	}, fix)
	want := "\nIB ports of the job's nodes (n1, n2), probed now: a port not ACTIVE is skipped by NCCL silently\n" +
		"  ok: n1: 1 port ACTIVE\n  cause [FAIL] n2: mlx5_0:1 INIT\n    evidence: state: 2: INIT\n    fix: start a subnet manager +doctor ib-ports\n"
	if b.String() != want {
		t.Errorf("got\n%q\nwant\n%q", b.String(), want)
	}
	b.Reset()
	WritePortCause(&b, []Check{{Status: Pass, Message: "ok"}}, fix)
	if b.String() != "  ok: ok\n  the port state is not the cause: look at the other causes above (RDMA resource, IPC_LOCK, NCCL_IB_HCA, libibverbs)\n" {
		t.Errorf("all ports ACTIVE: %q", b.String())
	}
}

func TestGateResultWriteTextCached(t *testing.T) {
	var b bytes.Buffer
	g := &GateResult{Result: &Result{Checks: []Check{{Name: "nodes", Status: Pass}}}, Cached: true, Age: 61400 * time.Millisecond, Rechecked: true}
	g.WriteText(&b, TextOptions{Brief: true, Rerun: "RERUN"})
	want := "preflight: " + g.Summary() + " (cached 1m1s ago, the job controllers checked now; RERUN)\n"
	if b.String() != want {
		t.Errorf("got %q, want %q", b.String(), want)
	}
}

func TestSaveJSON(t *testing.T) {
	file := filepath.Join(t.TempDir(), "r.json")
	res := &Result{Checks: []Check{{Name: "nodes", Status: Pass}}}
	if err := res.SaveJSON(""); err != nil {
		t.Errorf("no file: %v", err)
	}
	if err := res.SaveJSON(file); err != nil {
		t.Fatal(err)
	}
	want, _ := json.MarshalIndent(res, "", "  ")
	if got, _ := os.ReadFile(file); string(got) != string(want)+"\n" {
		t.Errorf("saved %s", got)
	}
	if err := res.SaveJSON(filepath.Join(file, "x")); err == nil {
		t.Error("a file under a file was written")
	}
}

func TestRoleObjects(t *testing.T) {
	objs, err := RoleObjects("team", "ServiceAccount:ci", true)
	if err != nil || len(objs) != 4 {
		t.Fatalf("objects %d, err %v; want Role, RoleBinding, ClusterRole, ClusterRoleBinding", len(objs), err)
	}
	if objs, _ := RoleObjects("", "User:u", false); len(objs) != 2 || objs[0].(*rbacv1.Role).Namespace != "default" {
		t.Errorf("without node-read, no namespace: %d objects (want 2), %+v", len(objs), objs)
	}
	if _, err := RoleObjects("team", "nobody", false); err == nil {
		t.Error("a subject without a kind was taken")
	}
}
