package jobs

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	mpiv2beta1 "github.com/kubeflow/mpi-operator/pkg/apis/kubeflow/v2beta1"
)

// TestLauncherAndGateFailed: the launcher is found by its replica label, and its gate has failed
// only when the gate container ended non-zero.
func TestLauncherAndGateFailed(t *testing.T) {
	worker := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "w", Labels: map[string]string{mpiv2beta1.JobRoleLabel: "worker"}}}
	launcher := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "l", Labels: map[string]string{mpiv2beta1.JobRoleLabel: "launcher"}}}
	if Launcher([]corev1.Pod{worker}) != nil {
		t.Fatal("a worker taken for the launcher")
	}
	if got := Launcher([]corev1.Pod{worker, launcher}); got == nil || got.Name != "l" {
		t.Fatalf("launcher %v", got)
	}
	l := &corev1.Pod{Status: corev1.PodStatus{InitContainerStatuses: []corev1.ContainerStatus{{Name: GateContainer,
		State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 1}}}}}}
	if !GateFailed(l) {
		t.Error("exit 1 of the gate not seen")
	}
	l.Status.InitContainerStatuses[0].State.Terminated.ExitCode = 0
	if GateFailed(l) {
		t.Error("a gate that passed counted as failed")
	}
}
