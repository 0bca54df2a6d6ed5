package sandboxtest

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
)

// The diagnosis names each node's heartbeat age and the last Warning events, oldest first, at
// most diagnoseEvents of them. (The API server's type=Warning selector, which the fake clientset
// ignores, is run against the sandbox in pkg/sandbox's TestIntegrationDiagnose.)
func TestDiagnoseCluster(t *testing.T) {
	now := time.Date(2026, 12, 6, 13, 34, 40, 0, time.UTC)
	objs := []runtime.Object{&corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: "gpu-node-2"},
		Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionUnknown,
			LastHeartbeatTime: metav1.NewTime(now.Add(-124 * time.Second))}}},
	}}
	for i := range diagnoseEvents + 5 {
		objs = append(objs, &corev1.Event{
			ObjectMeta:     metav1.ObjectMeta{Name: fmt.Sprintf("e%02d", i), Namespace: "gpu-operator"},
			InvolvedObject: corev1.ObjectReference{Kind: "Pod", Namespace: "gpu-operator", Name: fmt.Sprintf("p%02d", i)},
			Type:           corev1.EventTypeWarning, Reason: "NodeNotReady", Message: "Node is not ready",
			// stored newest first: the output must sort them
			LastTimestamp: metav1.NewTime(now.Add(-time.Duration(i) * time.Second)),
		})
	}
	var b bytes.Buffer
	if err := diagnoseCluster(context.Background(), fake.NewClientset(objs...), &b, now); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{
		"node gpu-node-2: Ready Unknown, last heartbeat 2m4s ago",
		fmt.Sprintf("Warning events: %d, the last %d", diagnoseEvents+5, diagnoseEvents),
		"13:34:21 pod gpu-operator/p19: NodeNotReady: Node is not ready (x1)",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("diagnosis lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "p20") || strings.Index(out, "p19") > strings.Index(out, "p00") {
		t.Errorf("not the last %d events, oldest first:\n%s", diagnoseEvents, out)
	}
}
