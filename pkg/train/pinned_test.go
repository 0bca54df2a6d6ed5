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
		pinNode("down", false, corev1.ConditionFalse), pinNode("fresh", false, ""), pinNode("ok2", false, corev1.ConditionTrue))
	if pn, err := checkPinned(context.Background(), cs, []string{"ok"}, 1); err != nil || pn.unusable != nil || pn.notChecked != nil {
		t.Fatalf("healthy node: %+v %v", pn, err)
	}
	all := []string{"ok", "cordoned", "down", "gone", "fresh"}
	want := []string{"cordoned: cordoned (spec.unschedulable)", "down: not Ready (KubeletNotReady: PLEG is not healthy)",
		"gone: no such node (removed or renamed since the bench)", "fresh: no Ready condition"}
	_, err := checkPinned(context.Background(), cs, all, 2)
	var pe *PinnedNodesError
	if !errors.As(err, &pe) || pe.Usable != 1 || pe.Need != 2 {
		t.Fatalf("got %v", err)
	}
	if strings.Join(pe.Why, "|") != strings.Join(want, "|") {
		t.Fatalf("got %q\nwant %q", pe.Why, want)
	}
	// Enough usable nodes remain for the job (the ranks may take any pinned node): not refused,
	// the others are named.
	pn, err := checkPinned(context.Background(), cs, []string{"ok", "ok2", "cordoned"}, 2)
	if err != nil || strings.Join(pn.unusable, "|") != "cordoned: cordoned (spec.unschedulable)" {
		t.Fatalf("two of three usable for a 2-node job: %+v %v", pn, err)
	}
	// A restricted user may not read nodes: said, not refused.
	cs.PrependReactor("get", "nodes", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: "nodes"}, "ok", errors.New("no"))
	})
	if pn, err := checkPinned(context.Background(), cs, []string{"ok"}, 1); err != nil || len(pn.notChecked) != 1 {
		t.Fatalf("forbidden: %+v %v", pn, err)
	}
}
