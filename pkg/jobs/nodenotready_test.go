package jobs

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
)

func readyNode(name string, st corev1.ConditionStatus, reason, msg string, since time.Time) *corev1.Node {
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}, Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{
		{Type: corev1.NodeMemoryPressure, Status: corev1.ConditionFalse},
		{Type: corev1.NodeReady, Status: st, Reason: reason, Message: msg, LastTransitionTime: metav1.NewTime(since)},
	}}}
}

func TestNodeNotReady(t *testing.T) {
	since := time.Date(2026, 12, 3, 15, 20, 0, 0, time.UTC)
	cases := []struct {
		name string
		node *corev1.Node
		want []string
	}{
		{"false", readyNode("gpu-3", corev1.ConditionFalse, "KubeletNotReady", "PLEG is not healthy\nmore", since),
			[]string{"node gpu-3 is NotReady since 2026-12-03T15:20:00Z (KubeletNotReady: PLEG is not healthy)", "containers are not running there"}},
		{"unknown", readyNode("gpu-4", corev1.ConditionUnknown, "NodeStatusUnknown", "Kubelet stopped posting node status.", since),
			[]string{"node gpu-4 is NotReady since 2026-12-03T15:20:00Z (NodeStatusUnknown: Kubelet stopped posting node status.)", "kubelet stopped reporting"}},
		{"no reason", readyNode("n", corev1.ConditionFalse, "", "", since), []string{"node n is NotReady since 2026-12-03T15:20:00Z: the pod's"}},
		{"ready", readyNode("ok", corev1.ConditionTrue, "KubeletReady", "", since), nil},
		{"new node", &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "fresh"}}, nil},
	}
	for _, c := range cases {
		got := NodeNotReady(c.node)
		if c.want == nil && got != "" {
			t.Errorf("%s: %q, want nothing", c.name, got)
		}
		for _, w := range c.want {
			if !strings.Contains(got, w) {
				t.Errorf("%s: %q lacks %q", c.name, got, w)
			}
		}
	}
}

func TestExplainPodDisruption(t *testing.T) {
	p := corev1.Pod{Spec: corev1.PodSpec{NodeName: "gpu-2"}, Status: corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{
		{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue, Reason: "DeletionByTaintManager", Message: "Taint manager: deleting due to NoExecute taint"},
	}}}
	got := ExplainPod(&p)
	for _, w := range []string{"being terminated (DeletionByTaintManager)", "node gpu-2 is NotReady or unreachable", "NoExecute taint"} {
		if !strings.Contains(got, w) {
			t.Errorf("%q lacks %q", got, w)
		}
	}
	p.Status.Conditions[0] = corev1.PodCondition{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue, Reason: "EvictionByEvictionAPI", Message: "Eviction API: evicting"}
	if got := ExplainPod(&p); got != "being terminated (EvictionByEvictionAPI): Eviction API: evicting" {
		t.Errorf("eviction: %q", got)
	}
	p.Status.Conditions[0].Status = corev1.ConditionFalse // the kubelet may record a disruption that did not happen
	if got := ExplainPod(&p); got != "" {
		t.Errorf("DisruptionTarget False must say nothing: %q", got)
	}
}

func TestNeedsExplain(t *testing.T) {
	cases := []struct {
		pi   PodInfo
		want bool
	}{
		{PodInfo{Why: "unschedulable: 0/3"}, true},
		{PodInfo{Phase: "Running", Node: "n1", Ready: false}, true},
		{PodInfo{Phase: "Running", Node: "n1", Ready: true}, false},
		{PodInfo{Phase: "Running", Node: "n1", Why: "crash-looping (3 restarts)"}, false},
		{PodInfo{Phase: "Pending", Node: "n1"}, false},
		{PodInfo{Phase: "Succeeded", Node: "n1"}, false},
	}
	for _, c := range cases {
		if got := NeedsExplain(&c.pi); got != c.want {
			t.Errorf("%+v: %v, want %v", c.pi, got, c.want)
		}
	}
}

// TestExplainPendingNodeNotReady reads the pod's node through the clientset: a NotReady node is
// named, a Ready one and an unreadable one (a Role without node rights) say nothing.
func TestExplainPendingNodeNotReady(t *testing.T) {
	since := time.Date(2026, 12, 3, 15, 20, 0, 0, time.UTC)
	cs := fake.NewClientset(readyNode("bad", corev1.ConditionUnknown, "NodeStatusUnknown", "Kubelet stopped posting node status.", since),
		readyNode("good", corev1.ConditionTrue, "KubeletReady", "", since))
	c := &Cluster{Kube: cs, Namespace: "ns"}
	pod := &corev1.Pod{Spec: corev1.PodSpec{NodeName: "bad"}, Status: corev1.PodStatus{Phase: corev1.PodRunning}}
	if got := c.ExplainPending(context.Background(), pod); !strings.HasPrefix(got, "node bad is NotReady since 2026-12-03T15:20:00Z") {
		t.Errorf("bad node: %q", got)
	}
	for _, n := range []string{"good", "missing", ""} {
		pod.Spec.NodeName = n
		if got := c.ExplainPending(context.Background(), pod); got != "" {
			t.Errorf("node %q: %q, want nothing", n, got)
		}
	}
}
