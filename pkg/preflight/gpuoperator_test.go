package preflight

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/ain-hpc/ain/pkg/profile"
)

// operatorNode is a GPU node as the GPU Operator labels it (controllers/state_manager.go).
func operatorNode(name string, gpu int64, extra map[string]string) *corev1.Node {
	n := node(name, gpu, 0, true)
	for k, v := range map[string]string{
		"nvidia.com/gpu.present":                      "true",
		"nvidia.com/gpu.deploy.driver":                "true",
		"nvidia.com/gpu.deploy.device-plugin":         "true",
		"nvidia.com/gpu.deploy.dcgm-exporter":         "true",
		"nvidia.com/gpu.deploy.gpu-feature-discovery": "true",
		"nvidia.com/gpu.deploy.container-toolkit":     "true",
	} {
		n.Labels[k] = v
	}
	for k, v := range extra {
		if v == "" {
			delete(n.Labels, k)
			continue
		}
		n.Labels[k] = v
	}
	return n
}

func operandPod(app, nodeName string, ready bool) *corev1.Pod {
	st := corev1.ConditionFalse
	phase := corev1.PodPending
	if ready {
		st, phase = corev1.ConditionTrue, corev1.PodRunning
	}
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "gpu-operator", Name: app + "-" + nodeName, Labels: map[string]string{"app": app}},
		Spec:       corev1.PodSpec{NodeName: nodeName},
		Status:     corev1.PodStatus{Phase: phase, Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: st}}},
	}
	if !ready {
		p.Status.InitContainerStatuses = []corev1.ContainerStatus{{Name: "driver-validation", State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "PodInitializing"}}}}
	}
	return p
}

func runGPUOperator(t *testing.T, objs ...runtime.Object) []Check {
	t.Helper()
	cs := fake.NewClientset(objs...)
	var nodes []corev1.Node
	for _, o := range objs {
		if n, ok := o.(*corev1.Node); ok {
			nodes = append(nodes, *n)
		}
	}
	o := Options{Kube: cs, Profile: profile.Default(), Nodes: len(nodes), GPUsPerNode: 8}
	o.defaults()
	return checkGPUOperator(context.Background(), o, nodes, nil)
}

func allOperands(nodeName string) []runtime.Object {
	return []runtime.Object{
		operandPod("nvidia-driver-daemonset", nodeName, true),
		operandPod("nvidia-device-plugin-daemonset", nodeName, true),
		operandPod("nvidia-dcgm-exporter", nodeName, true),
	}
}

func TestGPUOperator(t *testing.T) {
	cases := []struct {
		name   string
		objs   []runtime.Object
		status Status
		want   []string // in the first check's message or fix
	}{
		{"all ready", append([]runtime.Object{operatorNode("g1", 8, nil)}, allOperands("g1")...), Pass, []string{"1 node(s)"}},
		{"dcgm-exporter absent", []runtime.Object{operatorNode("g1", 8, nil),
			operandPod("nvidia-driver-daemonset", "g1", true), operandPod("nvidia-device-plugin-daemonset", "g1", true)},
			Warn, []string{"g1", "no dcgm-exporter pod", "no GPU metrics"}},
		{"device plugin not ready", []runtime.Object{operatorNode("g1", 8, nil),
			operandPod("nvidia-driver-daemonset", "g1", true), operandPod("nvidia-device-plugin-daemonset", "g1", false), operandPod("nvidia-dcgm-exporter", "g1", true)},
			Fail, []string{"gpu-operator/nvidia-device-plugin-daemonset-g1", "not ready", "driver-validation PodInitializing", "describe pod"}},
		{"driver not ready", []runtime.Object{operatorNode("g1", 8, nil),
			operandPod("nvidia-driver-daemonset", "g1", false), operandPod("nvidia-device-plugin-daemonset", "g1", true), operandPod("nvidia-dcgm-exporter", "g1", true)},
			Fail, []string{"(driver) not ready", "nvidia-driver-ctr"}},
		{"device plugin missing on one node", append(append([]runtime.Object{operatorNode("g1", 8, nil), operatorNode("g2", 8, nil)}, allOperands("g1")...),
			operandPod("nvidia-driver-daemonset", "g2", true), operandPod("nvidia-dcgm-exporter", "g2", true)),
			Fail, []string{"g2: nvidia.com/gpu.deploy.device-plugin=true but no device plugin pod", "get ds,pods -o wide -l app=nvidia-device-plugin-daemonset"}},
		{"plugin without operator", []runtime.Object{node("g1", 8, 0, true)},
			Warn, []string{"no nvidia.com/gpu.deploy.* label", "installed by hand"}},
		{"labels without pods", []runtime.Object{operatorNode("g1", 8, nil)},
			Warn, []string{"the labels say GPU Operator, the pods say"}},
		{"device plugin turned off, no GPUs", []runtime.Object{operatorNode("g1", 0, map[string]string{"nvidia.com/gpu.deploy.device-plugin": "false"}), operandPod("nvidia-driver-daemonset", "g1", true), operandPod("nvidia-dcgm-exporter", "g1", true)},
			Fail, []string{"device-plugin=false", "--overwrite"}},
		{"host driver", append([]runtime.Object{operatorNode("g1", 8, nil)},
			operandPod("nvidia-device-plugin-daemonset", "g1", true), operandPod("nvidia-dcgm-exporter", "g1", true)), Pass, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			checks := runGPUOperator(t, c.objs...)
			if len(checks) == 0 {
				t.Fatal("no check")
			}
			got := checks[0]
			if got.Status != c.status || got.Name != CheckGPUOperator {
				t.Fatalf("got %+v, want %s", checks, c.status)
			}
			text := got.Message + " | " + got.Fix
			for _, w := range c.want {
				if !strings.Contains(text, w) {
					t.Errorf("%q not in %q", w, text)
				}
			}
			if got.Status != Pass && got.Fix == "" {
				t.Errorf("no fix: %+v", got)
			}
		})
	}
}

func TestGPUOperatorForbiddenFallsBackToNamespace(t *testing.T) {
	objs := append([]runtime.Object{operatorNode("g1", 8, nil)}, allOperands("g1")...)
	cs := fake.NewClientset(objs...)
	cs.PrependReactor("list", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.GetNamespace() == "" {
			return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, "", nil)
		}
		return false, nil, nil
	})
	o := Options{Kube: cs, Profile: profile.Default()}
	o.defaults()
	checks := checkGPUOperator(context.Background(), o, []corev1.Node{*operatorNode("g1", 8, nil)}, nil)
	if len(checks) != 1 || checks[0].Status != Pass || !strings.Contains(checks[0].Message, "namespace gpu-operator") {
		t.Fatalf("%+v", checks)
	}
}

// A node the nodes check left out for 0 allocatable GPUs is still looked at: its device plugin
// pod not ready is why. It FAILs the job when the healthy nodes are too few for it, and is a
// WARN when enough remain (a broken node elsewhere does not block every job).
func TestGPUOperatorExplainsGPULessNode(t *testing.T) {
	g2 := operatorNode("g2", 0, nil)
	objs := append(append([]runtime.Object{operatorNode("g1", 8, nil), g2}, allOperands("g1")...),
		operandPod("nvidia-driver-daemonset", "g2", true), operandPod("nvidia-device-plugin-daemonset", "g2", false), operandPod("nvidia-dcgm-exporter", "g2", true))
	o := Options{Kube: fake.NewClientset(objs...), Profile: profile.Default(), Nodes: 1, GPUsPerNode: 8} // one node: no RDMA needed
	o.defaults()
	_, cands, short := checkNodesGPUShort(context.Background(), o)
	if len(cands) != 1 || len(short) != 1 || short[0].Name != "g2" {
		t.Fatalf("candidates %v, left out for GPUs %v", names(cands), names(short))
	}
	for _, c := range []struct {
		nodes  int
		status Status
		note   string
	}{
		{2, Fail, ""},
		{1, Warn, " (1 healthy node(s) are enough for the job's 1)"},
	} {
		o.Nodes = c.nodes
		checks := checkGPUOperator(context.Background(), o, cands, short)
		if len(checks) != 1 || checks[0].Status != c.status || !strings.HasPrefix(checks[0].Message, "g2: gpu-operator/nvidia-device-plugin-daemonset-g2 (device plugin) not ready") ||
			!strings.HasSuffix(checks[0].Message, "on that node"+c.note) {
			t.Fatalf("job of %d node(s): %+v", c.nodes, checks)
		}
	}
}

// An operand the operator paused for a driver upgrade is said as such, never "relabel it".
func TestGPUOperatorPausedForUpgrade(t *testing.T) {
	n := operatorNode("g1", 8, map[string]string{"nvidia.com/gpu.deploy.dcgm-exporter": "paused-for-driver-upgrade"})
	checks := runGPUOperator(t, n, operandPod("nvidia-driver-daemonset", "g1", true), operandPod("nvidia-device-plugin-daemonset", "g1", true))
	if len(checks) != 1 || checks[0].Status != Warn || !strings.Contains(checks[0].Message, "upgrading the driver") || strings.Contains(checks[0].Fix, "--overwrite") {
		t.Fatalf("%+v", checks)
	}
}

func TestGPUOperatorCPUJobSkipped(t *testing.T) {
	o := Options{Kube: fake.NewClientset(), Profile: profile.Default(), Nodes: 1, GPUsPerNode: 0}
	if c := checkGPUOperator(context.Background(), o, []corev1.Node{*node("c1", 0, 0, true)}, nil); c != nil {
		t.Fatalf("%+v", c)
	}
	p := profile.Default()
	p.Spec.GPUResource = "amd.com/gpu"
	o = Options{Kube: fake.NewClientset(), Profile: p}
	if c := checkGPUOperator(context.Background(), o, []corev1.Node{*node("a1", 0, 0, true)}, nil); c != nil {
		t.Fatalf("AMD GPUs: %+v", c)
	}
}

// Driver pods of an NVIDIADriver resource have a generated app label
// (nvidia-gpu-driver-<os>-<hash>, gpu-operator internal/state/driver.go) and are found by
// app.kubernetes.io/component=nvidia-driver; without that the node read "labels without pods"
// (a WARN) and a not-ready driver went unseen.
func TestGPUOperatorNVIDIADriverResource(t *testing.T) {
	driver := func(ready bool) *corev1.Pod {
		p := operandPod("nvidia-gpu-driver-ubuntu22.04-646cdfdb96", "g1", ready)
		p.Labels["app.kubernetes.io/component"] = "nvidia-driver"
		return p
	}
	for _, c := range []struct {
		ready  bool
		status Status
		want   string
	}{
		{true, Pass, "1 node(s)"},
		{false, Fail, "g1: gpu-operator/nvidia-gpu-driver-ubuntu22.04-646cdfdb96-g1 (driver) not ready"},
	} {
		checks := runGPUOperator(t, operatorNode("g1", 8, nil), driver(c.ready),
			operandPod("nvidia-device-plugin-daemonset", "g1", true), operandPod("nvidia-dcgm-exporter", "g1", true))
		if len(checks) != 1 || checks[0].Status != c.status || !strings.Contains(checks[0].Message, c.want) {
			t.Fatalf("driver ready=%v: %+v", c.ready, checks)
		}
	}
	// No driver pod where the label says one belongs: the fix selects by component.
	checks := runGPUOperator(t, operatorNode("g1", 8, nil), operatorNode("g2", 8, nil), driver(true),
		operandPod("nvidia-device-plugin-daemonset", "g1", true), operandPod("nvidia-dcgm-exporter", "g1", true),
		operandPod("nvidia-device-plugin-daemonset", "g2", true), operandPod("nvidia-dcgm-exporter", "g2", true))
	if len(checks) != 1 || checks[0].Status != Fail || !strings.Contains(checks[0].Message, "g2:") ||
		!strings.Contains(checks[0].Fix, "-l app.kubernetes.io/component=nvidia-driver") {
		t.Fatalf("driver missing on g2: %+v", checks)
	}
}

// An evicted copy listed beside the DaemonSet's live replacement does not decide the node,
// whichever order the list returns them in.
func TestGPUOperatorEvictedCopyIgnored(t *testing.T) {
	evicted := operandPod("nvidia-device-plugin-daemonset", "g1", false)
	evicted.Name += "-old"
	evicted.Status = corev1.PodStatus{Phase: corev1.PodFailed, Reason: "Evicted"}
	for _, order := range [][]runtime.Object{
		{evicted, operandPod("nvidia-device-plugin-daemonset", "g1", true)},
		{operandPod("nvidia-device-plugin-daemonset", "g1", true), evicted},
	} {
		objs := append([]runtime.Object{operatorNode("g1", 8, nil), operandPod("nvidia-driver-daemonset", "g1", true), operandPod("nvidia-dcgm-exporter", "g1", true)}, order...)
		if checks := runGPUOperator(t, objs...); len(checks) != 1 || checks[0].Status != Pass {
			t.Fatalf("%+v", checks)
		}
	}
	// An OnDelete upgrade: the old pod is still Ready while it terminates; its replacement, not
	// yet Ready, is what the node will have.
	old := operandPod("nvidia-device-plugin-daemonset", "g1", true)
	old.Name += "-old"
	now := metav1.Now()
	old.DeletionTimestamp = &now
	checks := runGPUOperator(t, operatorNode("g1", 8, nil), operandPod("nvidia-driver-daemonset", "g1", true), operandPod("nvidia-dcgm-exporter", "g1", true),
		old, operandPod("nvidia-device-plugin-daemonset", "g1", false))
	if len(checks) != 1 || checks[0].Status != Fail || !strings.Contains(checks[0].Message, "nvidia-device-plugin-daemonset-g1 (device plugin) not ready") {
		t.Fatalf("terminating Ready pod beside its replacement: %+v", checks)
	}
	// Only the evicted copy: the node has no working device plugin.
	checks = runGPUOperator(t, operatorNode("g1", 8, nil), operandPod("nvidia-driver-daemonset", "g1", true), operandPod("nvidia-dcgm-exporter", "g1", true), evicted)
	if len(checks) != 1 || checks[0].Status != Fail || !strings.Contains(checks[0].Message, "phase Failed") {
		t.Fatalf("%+v", checks)
	}
}
