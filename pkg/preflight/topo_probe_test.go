package preflight

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
)

// The topology probe asks for the GPUs left on a busy node (the kubelet refuses a pod asking
// for more): running pods count as the scheduler counts them, finished ones not at all.
func TestUseOnNode(t *testing.T) {
	gpu := corev1.ResourceName("nvidia.com/gpu")
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "gpu-1"}, Status: corev1.NodeStatus{Allocatable: corev1.ResourceList{gpu: resource.MustParse("8")}}}
	pod := func(name string, phase corev1.PodPhase, containers, init int64) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "team"}, Spec: corev1.PodSpec{NodeName: "gpu-1",
			Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{gpu: *resource.NewQuantity(containers, resource.DecimalSI)}}}}},
			Status: corev1.PodStatus{Phase: phase}}
		if init > 0 {
			p.Spec.InitContainers = []corev1.Container{{Name: "i", Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{gpu: *resource.NewQuantity(init, resource.DecimalSI)}}}}
		}
		return p
	}
	kc := fake.NewClientset(pod("train-0", corev1.PodRunning, 3, 0), pod("done", corev1.PodSucceeded, 4, 0), pod("starting", corev1.PodPending, 1, 2), pod("cpu", corev1.PodRunning, 0, 0))
	u, err := UseOnNode(context.Background(), kc, node, string(gpu))
	if err != nil {
		t.Fatal(err)
	}
	if u.Allocatable != 8 || u.Requested != 5 || u.Free() != 3 || strings.Join(u.Holders, ",") != "team/starting,team/train-0" && strings.Join(u.Holders, ",") != "team/train-0,team/starting" {
		t.Errorf("use %+v, free %d; want 8 allocatable, 5 requested (3 + max(1, init 2)), 3 free, two holders", u, u.Free())
	}
	if (NodeUse{Allocatable: 2, Requested: 4}).Free() != 0 {
		t.Error("an overcommitted count is not negative")
	}
}
