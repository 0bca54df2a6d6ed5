package train

import (
	"context"
	"errors"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/ain-hpc/ain/pkg/jobs"
	"github.com/ain-hpc/ain/pkg/trainlog"
)

// The fake clientset's pod log is "fake logs": no loss in it, which RankZeroRun says by the
// master's name (chosen over the worker listed first).
func TestRankZeroRunReadsTheMaster(t *testing.T) {
	pods := []corev1.Pod{
		{ObjectMeta: metav1.ObjectMeta{Name: "q-worker-0", Namespace: "ns"}},
		{ObjectMeta: metav1.ObjectMeta{Name: "q-master-0", Namespace: "ns"}},
	}
	cl := &jobs.Cluster{Kube: fake.NewSimpleClientset(&pods[0], &pods[1]), Namespace: "ns"}
	_, err := RankZeroRun(context.Background(), cl, "PyTorchJob", "q", pods, trainlog.ParseOptions{})
	var nl *NoLossError
	if !errors.As(err, &nl) || nl.Pod != "q-master-0" {
		t.Fatalf("err = %v, want a NoLossError of q-master-0", err)
	}
}
