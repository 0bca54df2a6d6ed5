package sandbox

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestNodeIsDown(t *testing.T) {
	node := func(ann map[string]string, ready corev1.ConditionStatus) *corev1.Node {
		n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "gpu-node-1", Annotations: ann}}
		if ready != "" {
			n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeMemoryPressure, Status: corev1.ConditionUnknown}, {Type: corev1.NodeReady, Status: ready}}
		}
		return n
	}
	down := map[string]string{AnnoNodeDown: "true"}
	for _, c := range []struct {
		name string
		n    *corev1.Node
		want bool
	}{
		{"marked, Unknown", node(down, corev1.ConditionUnknown), true},
		{"marked, False", node(down, corev1.ConditionFalse), true},
		// The node-down stage has not run yet: its pods are left alone until it has.
		{"marked, still Ready", node(down, corev1.ConditionTrue), false},
		{"marked, no Ready condition", node(down, ""), false},
		{"not marked, Unknown", node(nil, corev1.ConditionUnknown), false},
		{"other annotation", node(map[string]string{AnnoOutcome: "fail"}, corev1.ConditionFalse), false},
	} {
		if got := nodeIsDown(c.n); got != c.want {
			t.Errorf("%s: nodeIsDown = %v, want %v", c.name, got, c.want)
		}
	}
}
