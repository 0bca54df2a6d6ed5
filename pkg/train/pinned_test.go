package train

import (
	"context"
	"errors"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

func pinNode(name string, cordoned bool, ready corev1.ConditionStatus) *corev1.Node {
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.NodeSpec{Unschedulable: cordoned}}
	if ready != "" {
		n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: ready, Reason: "KubeletNotReady", Message: "PLEG is not healthy"}}
	}
	return n
}

func TestCheckPinned(t *testing.T) {
	cs := fake.NewClientset(pinNode("ok", false, corev1.ConditionTrue), pinNode("cordoned", true, corev1.ConditionTrue),
		pinNode("down", false, corev1.ConditionFalse), pinNode("fresh", false, ""))
	if nc, err := checkPinned(context.Background(), cs, []string{"ok"}); err != nil || nc != nil {
		t.Fatalf("healthy node: %v %v", nc, err)
	}
	_, err := checkPinned(context.Background(), cs, []string{"ok", "cordoned", "down", "gone", "fresh"})
	var pe *PinnedNodesError
	if !errors.As(err, &pe) {
		t.Fatalf("got %v", err)
	}
	want := []string{"cordoned: cordoned (spec.unschedulable)", "down: not Ready (KubeletNotReady: PLEG is not healthy)",
		"gone: no such node (removed or renamed since the bench)", "fresh: no Ready condition"}
	if strings.Join(pe.Why, "|") != strings.Join(want, "|") {
		t.Fatalf("got %q\nwant %q", pe.Why, want)
	}
	// A restricted user may not read nodes: said, not refused.
	cs.PrependReactor("get", "nodes", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: "nodes"}, "ok", errors.New("no"))
	})
	if nc, err := checkPinned(context.Background(), cs, []string{"ok"}); err != nil || len(nc) != 1 {
		t.Fatalf("forbidden: %v %v", nc, err)
	}
}
