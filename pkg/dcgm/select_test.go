package dcgm

import (
	"context"
	"errors"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
)

// A job's pods select their nodes' pages: none bound yet is a NoNodeError (nothing is asked of
// the cluster); nodes without an exporter fail the read with the nodes named.
func TestReadLiveSelection(t *testing.T) {
	ctx := context.Background()
	cs := fake.NewClientset()
	pending := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "j-0", Namespace: "team"}}
	if _, err := ReadLive(ctx, nil, cs, Live{Pods: []corev1.Pod{pending}}); !errors.As(err, new(NoNodeError)) {
		t.Errorf("no pod on a node: %v", err)
	}
	if n := len(cs.Actions()); n != 0 {
		t.Errorf("%d API calls before any node was known", n)
	}
	bound := pending
	bound.Spec.NodeName = "n1"
	other := bound
	other.Name, other.Spec.NodeName = "j-1", "n2"
	_, err := ReadLive(ctx, nil, cs, Live{Pods: []corev1.Pod{bound, other, bound}})
	var ne *NoExporterError
	if !errors.As(err, &ne) || strings.Join(ne.Nodes, ",") != "n1,n2" {
		t.Errorf("no exporter: %v, want a *NoExporterError naming n1,n2", err)
	}
}

func TestParsePage(t *testing.T) {
	if _, err := ParsePage(strings.NewReader("# HELP up\nup 1\n")); !errors.As(err, new(NoMetricsError)) {
		t.Errorf("a page without DCGM series: %v", err)
	}
	if _, err := ParsePage(strings.NewReader("{\"status\":\"success\"}\n")); !errors.As(err, new(*FormatError)) {
		t.Errorf("not the text format: %v", err)
	}
	gpus, err := ParsePage(strings.NewReader(`DCGM_FI_DEV_GPU_UTIL{gpu="0",UUID="GPU-a",Hostname="n1"} 97` + "\n"))
	if err != nil || len(gpus) != 1 {
		t.Errorf("a page with one GPU: %d GPUs, %v", len(gpus), err)
	}
}
