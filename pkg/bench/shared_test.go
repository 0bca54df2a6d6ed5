package bench

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/ain-hpc/ain/pkg/probe"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

func TestSharing(t *testing.T) {
	from := time.Date(2026, 12, 5, 10, 0, 0, 0, time.UTC)
	to := from.Add(time.Minute)
	pod := func(ns, name, node string, gpus int64, started time.Time, phase corev1.PodPhase, finished time.Time, l map[string]string) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: l},
			Spec:   corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "c"}}},
			Status: corev1.PodStatus{Phase: phase, StartTime: &metav1.Time{Time: started}}}
		if gpus > 0 {
			p.Spec.Containers[0].Resources.Limits = corev1.ResourceList{"nvidia.com/gpu": *resource.NewQuantity(gpus, resource.DecimalSI)}
		}
		if !finished.IsZero() {
			p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "c", State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{FinishedAt: metav1.Time{Time: finished}}}}}
		}
		return p
	}
	before := from.Add(-time.Hour)
	objs := []runtime.Object{
		pod("bench", "mine-worker-0", "gpu-1", 8, from, corev1.PodRunning, time.Time{}, map[string]string{"job": "mine"}),
		pod("team-b", "other-worker-0", "gpu-1", 8, before, corev1.PodRunning, time.Time{}, nil),                                          // shares
		pod("team-b", "done-early", "gpu-2", 8, before, corev1.PodSucceeded, from.Add(-time.Second), nil),                                 // ended before
		pod("team-b", "ended-during", "gpu-2", 8, before, corev1.PodSucceeded, from.Add(30*time.Second), nil),                             // shares
		pod("team-b", "started-after", "gpu-2", 8, to.Add(time.Minute), corev1.PodRunning, time.Time{}, nil),                              // after
		pod("team-b", "cpu-only", "gpu-1", 0, before, corev1.PodRunning, time.Time{}, nil),                                                // no GPU
		pod("team-b", "elsewhere", "gpu-3", 8, before, corev1.PodRunning, time.Time{}, nil),                                               // other node
		pod("bench", "counters-probe", "gpu-1", 1, from, corev1.PodRunning, time.Time{}, map[string]string{probe.LabelProbe: "counters"}), // reads only
		pod("bench", "perftest-client", "gpu-2", 1, from, corev1.PodRunning, time.Time{}, map[string]string{probe.LabelProbe: "perftest", probe.LabelPairRole: "client"}),
	}
	own := func(p *corev1.Pod) bool { return p.Namespace == "bench" && p.Labels["job"] == "mine" }
	kube := fake.NewSimpleClientset(objs...)
	got, note, err := sharing(context.Background(), kube, "bench", []string{"gpu-1", "gpu-2"}, own, []string{"nvidia.com/gpu", ""}, from, to)
	want := "bench/perftest-client on gpu-2, team-b/ended-during on gpu-2, team-b/other-worker-0 on gpu-1"
	if err != nil || note != "" || strings.Join(got, ", ") != want {
		t.Fatalf("got %q (note %q, %v), want %q", strings.Join(got, ", "), note, err, want)
	}
	if p := sharedProblem(got); !strings.HasPrefix(p, ProblemSharedNodes+": ") || !strings.Contains(p, "team-b/other-worker-0 on gpu-1") {
		t.Errorf("problem %q", p)
	}

	// A user who may list pods only in its namespace: that namespace is read, and said so.
	kube = fake.NewSimpleClientset(objs...)
	kube.PrependReactor("list", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.GetNamespace() == "" {
			return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, "", errors.New("cluster scope"))
		}
		return false, nil, nil
	})
	got, note, err = sharing(context.Background(), kube, "bench", []string{"gpu-1", "gpu-2"}, own, []string{"nvidia.com/gpu"}, from, to)
	if err != nil || !strings.Contains(note, "other namespaces not visible") || strings.Join(got, ", ") != "bench/perftest-client on gpu-2" {
		t.Fatalf("namespace-only: %q note %q err %v", got, note, err)
	}
}
