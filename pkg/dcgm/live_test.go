package dcgm

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

// TestFindExportersWithoutClusterList: a user who may not list pods cluster-wide still finds the
// exporters in the GPU Operator's namespace; a node without one is named.
func TestFindExportersWithoutClusterList(t *testing.T) {
	exp := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "nvidia-dcgm-exporter-x", Namespace: "gpu-operator", Labels: map[string]string{"app": "nvidia-dcgm-exporter"}},
		Spec: corev1.PodSpec{NodeName: "n1"}, Status: corev1.PodStatus{Phase: corev1.PodRunning}}
	cs := fake.NewSimpleClientset(exp)
	cs.PrependReactor("list", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.GetNamespace() != "gpu-operator" {
			return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, "", errors.New("no"))
		}
		return false, nil, nil
	})
	exps, err := FindExporters(context.Background(), cs, []string{"n1", "n2"})
	var ne *NoExporterError
	if len(exps) != 1 || exps[0].Pod != "nvidia-dcgm-exporter-x" || !errors.As(err, &ne) || len(ne.Nodes) != 1 || ne.Nodes[0] != "n2" {
		t.Fatalf("%+v %v", exps, err)
	}
}

// TestNotJudged: a page from dcgm-exporter's default counters (no clock event reasons) says
// throttling was not judged, in the summary a user reads first.
func TestNotJudged(t *testing.T) {
	util := 97.0
	xid := int64(0)
	r := Analyze([]GPU{{Host: "n1", GPU: "0", UtilPct: &util, XID: &xid}})
	if len(r.NotJudged) != 1 || !strings.Contains(r.Summary, "not judged: throttling (the exporter collects no DCGM_FI_DEV_CLOCKS_EVENT_REASONS") {
		t.Errorf("summary %q, not judged %q", r.Summary, r.NotJudged)
	}
}

// TestFindExportersPort: each exporter is read on its pod's container port named metrics, else
// its first TCP container port, else 9400.
func TestFindExportersPort(t *testing.T) {
	exporter := func(node string, ports ...corev1.ContainerPort) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "dcgm-exporter-" + node, Namespace: "monitoring", Labels: map[string]string{"app.kubernetes.io/name": "dcgm-exporter"}},
			Spec:   corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "sidecar"}, {Name: "exporter", Ports: ports}}},
			Status: corev1.PodStatus{Phase: corev1.PodRunning}}
	}
	cs := fake.NewClientset(
		exporter("n1", corev1.ContainerPort{Name: "health", ContainerPort: 8080}, corev1.ContainerPort{Name: "metrics", ContainerPort: 9500}),
		exporter("n2", corev1.ContainerPort{Name: "stats", ContainerPort: 9100, Protocol: corev1.ProtocolUDP}, corev1.ContainerPort{ContainerPort: 9401}),
		exporter("n3"),
	)
	exps, err := FindExporters(context.Background(), cs, []string{"n1", "n2", "n3"})
	if err != nil || len(exps) != 3 {
		t.Fatalf("%+v %v", exps, err)
	}
	for i, want := range []int{9500, 9401, ExporterPort} {
		if exps[i].Port != want {
			t.Errorf("%s: port %d, want %d", exps[i], exps[i].Port, want)
		}
	}
}
