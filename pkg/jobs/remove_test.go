package jobs

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/ain-hpc/ain/pkg/next"
)

func orphanRuntime(t *testing.T, c *Cluster, name string) {
	t.Helper()
	rt := &unstructured.Unstructured{Object: map[string]any{"apiVersion": TrainingRuntimeGVR.GroupVersion().String(), "kind": "TrainingRuntime",
		"metadata": map[string]any{"name": name, "namespace": "ns", "labels": map[string]any{LabelManagedBy: ManagedByAin, LabelRun: name}}}}
	if _, err := c.Dynamic.Resource(TrainingRuntimeGVR).Namespace("ns").Create(context.Background(), rt, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

func jobNames(t *testing.T, c *Cluster) []string {
	t.Helper()
	l, err := c.Dynamic.Resource(mpiV2.GVR()).Namespace("ns").List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, j := range l.Items {
		out = append(out, j.GetName())
	}
	return out
}

// DeleteNamed asks before deleting, keeps the job when the answer is no, deletes it on yes, and
// falls back to an orphan TrainingRuntime of that name; with neither it says not found.
func TestDeleteNamed(t *testing.T) {
	ctx := context.Background()
	c := fakeJobs(t, mpiJob("a", time.Now(), false))
	c.Kube = fake.NewSimpleClientset()
	no := errors.New("no")
	var asked []string
	_, err := c.DeleteNamed(ctx, "a", func(what, question string) error { asked = append(asked, what, question); return no })
	if err != no || len(jobNames(t, c)) != 1 {
		t.Fatalf("refused: %v, jobs %v", err, jobNames(t, c))
	}
	if want := []string{"delete MPIJob ns/a", "delete MPIJob ns/a (Pending) and its pods"}; strings.Join(asked, "|") != strings.Join(want, "|") {
		t.Errorf("asked %q, want %q", asked, want)
	}
	yes := func(string, string) error { return nil }
	r, err := c.DeleteNamed(ctx, "a", yes)
	if err != nil || len(jobNames(t, c)) != 0 || r.Objects[0] != "MPIJob/a" {
		t.Fatalf("deleted %+v, %v, jobs left %v", r, err, jobNames(t, c))
	}
	if _, err := c.DeleteNamed(ctx, "a", yes); !IsNotFound(err) {
		t.Fatalf("second delete: %v, want not found", err)
	}
	orphanRuntime(t, c, "q")
	r, err = c.DeleteNamed(ctx, "q", yes)
	if err != nil || r.Runtime != "q" {
		t.Fatalf("orphan runtime: %+v, %v", r, err)
	}
	var b strings.Builder
	r.WriteText(&b)
	if b.String() != "deleted TrainingRuntime/q (ain made it for a TrainJob that does not exist)\n" {
		t.Errorf("text %q", b.String())
	}
}

// Release asks once with the count, deletes every job (with finishedOnly only those that
// ended), then the orphan runtimes; with nothing to release it asks nothing.
func TestRelease(t *testing.T) {
	ctx := context.Background()
	c := fakeJobs(t, mpiJob("done", time.Now(), true), mpiJob("running", time.Now(), false))
	c.Kube = fake.NewSimpleClientset()
	orphanRuntime(t, c, "q")
	var out, log strings.Builder
	asked := 0
	n, err := c.Release(ctx, true, func(n int) error { asked = n; return nil }, func(e ReleaseEvent) {
		e.WriteText(&out, &log, func(c next.Command) string { return "ain " + string(c) })
	})
	if err != nil || n != 1 || asked != 1 {
		t.Fatalf("released %d (asked for %d), %v", n, asked, err)
	}
	if got := jobNames(t, c); len(got) != 1 || got[0] != "running" {
		t.Errorf("jobs left %v, want [running]", got)
	}
	want := "released MPIJob/done (Succeeded)\nservices deployed by ain serve are kept (ain serve status)\nreleased TrainingRuntime/q (no TrainJob uses it)\n"
	if out.String() != want || log.String() != "" {
		t.Errorf("out %q (want %q), log %q", out.String(), want, log.String())
	}
	n, err = fakeJobs(t).Release(ctx, false, func(int) error { t.Error("asked with nothing to release"); return nil }, func(ReleaseEvent) {})
	if n != 0 || err != nil {
		t.Errorf("empty namespace: %d, %v", n, err)
	}
}

// Logs says a job without pods has none, and reads the lead pod's log otherwise.
func TestLogs(t *testing.T) {
	ctx := context.Background()
	c := fakeJobs(t, mpiJob("a", time.Now(), false))
	c.Kube = fake.NewSimpleClientset()
	var b strings.Builder
	if err := c.Logs(ctx, &b, "a", LogOptions{Index: -1, Tail: -1}); !errors.As(err, new(*NoPodsError)) {
		t.Fatalf("no pods: %v", err)
	}
	if err := c.Logs(ctx, &b, "missing", LogOptions{Index: -1, Tail: -1}); !IsNotFound(err) {
		t.Fatalf("missing job: %v", err)
	}
	sel := strings.SplitN(mpiV2.PodSelector("a"), "=", 2)
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "a-launcher", Namespace: "ns", Labels: map[string]string{sel[0]: sel[1]}},
		Status: corev1.PodStatus{Phase: corev1.PodPending}}
	if _, err := c.Kube.CoreV1().Pods("ns").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := c.Logs(ctx, &b, "a", LogOptions{Index: -1, Tail: -1}); !errors.As(err, new(*NoPodMatchError)) && !errors.As(err, new(*NotStartedError)) {
		t.Fatalf("a Pending pod: %v, want no log yet", err)
	}
}
