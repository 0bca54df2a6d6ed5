package preflight_test

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/ain-hpc/ain/pkg/preflight"
	"github.com/ain-hpc/ain/pkg/sandbox/sandboxtest"
)

// gpuOperatorChecks runs ain preflight (no probes) and returns its gpu-operator rows.
func gpuOperatorChecks(t *testing.T, sb *sandboxtest.Sandbox, ns string) []preflight.Check {
	t.Helper()
	_, out, _ := ain(t, context.Background(), sb, newEnv(t), ns, "preflight", "allreduce", "--no-probes", "-o", "json")
	var got []preflight.Check
	for _, c := range decode(t, out).Checks {
		if c.Name == preflight.CheckGPUOperator {
			got = append(got, c)
		}
	}
	if len(got) == 0 {
		t.Fatalf("no %s check in\n%s", preflight.CheckGPUOperator, out)
	}
	return got
}

// operandPod runs one GPU Operator operand on a sandbox node, as its DaemonSet would
// (gpu-operator assets/state-*/…daemonset.yaml: app=<DaemonSet name>), and waits until it is Ready
// (kwok plays the pod's lifecycle).
func operandPod(t *testing.T, cs kubernetes.Interface, app, nodeName string) {
	t.Helper()
	ctx := context.Background()
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "gpu-operator", Name: app + "-" + nodeName, Labels: map[string]string{"app": app}},
		Spec: corev1.PodSpec{NodeName: nodeName, Containers: []corev1.Container{{Name: "main", Image: "nvcr.io/nvidia/" + app + ":sim"}},
			Tolerations: []corev1.Toleration{{Operator: corev1.TolerationOpExists}}},
	}
	if _, err := cs.CoreV1().Pods("gpu-operator").Create(ctx, p, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		zero := int64(0)
		_ = cs.CoreV1().Pods("gpu-operator").Delete(context.Background(), p.Name, metav1.DeleteOptions{GracePeriodSeconds: &zero})
	})
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		got, err := cs.CoreV1().Pods("gpu-operator").Get(ctx, p.Name, metav1.GetOptions{})
		if err == nil {
			for _, c := range got.Status.Conditions {
				if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue {
					return
				}
			}
		}
		time.Sleep(300 * time.Millisecond)
	}
	t.Fatalf("operand pod %s not Ready in 60s", p.Name)
}

// TestGPUOperator: the sandbox's nodes carry the GPU Operator's labels but run none of its
// operand pods, so out of the box the check says the labels and the pods disagree (WARN);
// with the operands running on every node it passes; with the device plugin missing on one
// node the job needs, it fails naming that node; without dcgm-exporter it warns.
func TestGPUOperator(t *testing.T) {
	sb, ns := setup(t, "healthy")
	cs := sb.Clientset(t)
	ctx := context.Background()

	got := gpuOperatorChecks(t, sb, ns)
	if got[0].Status != preflight.Warn || !strings.Contains(got[0].Message, "the labels say GPU Operator, the pods say") {
		t.Errorf("out of the box: %+v", got)
	}

	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "gpu-operator"}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	nodes, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, n := range nodes.Items {
		if n.Labels["nvidia.com/gpu.present"] == "true" {
			names = append(names, n.Name)
		}
	}
	if len(names) < 2 {
		t.Fatalf("GPU nodes %v", names)
	}
	for i, n := range names {
		operandPod(t, cs, "nvidia-driver-daemonset", n)
		if i > 0 { // the first node the job needs has no device plugin
			operandPod(t, cs, "nvidia-device-plugin-daemonset", n)
		}
	}
	got = gpuOperatorChecks(t, sb, ns)
	if got[0].Status != preflight.Fail || !strings.Contains(got[0].Message, names[0]+": nvidia.com/gpu.deploy.device-plugin=true but no device plugin pod") ||
		!strings.Contains(got[0].Fix, "get ds,pods -o wide -l app=nvidia-device-plugin-daemonset") {
		t.Errorf("device plugin missing on %s: %+v", names[0], got)
	}

	operandPod(t, cs, "nvidia-device-plugin-daemonset", names[0])
	got = gpuOperatorChecks(t, sb, ns)
	// The sandbox labels no node for dcgm-exporter (no nvidia.com/gpu.deploy.dcgm-exporter):
	// metrics unavailable, jobs run.
	if len(got) != 1 || got[0].Status != preflight.Warn || !strings.Contains(got[0].Message, "dcgm-exporter") {
		t.Errorf("device plugin and driver everywhere, no dcgm-exporter: %+v", got)
	}
	for _, n := range names {
		operandPod(t, cs, "nvidia-dcgm-exporter", n)
	}
	got = gpuOperatorChecks(t, sb, ns)
	if len(got) != 1 || got[0].Status != preflight.Pass {
		t.Errorf("all operands ready: %+v", got)
	}
}
