package jobs

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/ain-hpc/ain/pkg/next"
)

// fakeJobs is a dynamic fake serving every job API with the given MPIJobs (v2beta1) in ns.
func fakeJobs(t *testing.T, jobs ...*unstructured.Unstructured) *Cluster {
	kinds := map[schema.GroupVersionResource]string{TrainingRuntimeGVR: "TrainingRuntimeList"}
	for _, b := range Backends {
		kinds[b.GVR()] = b.Kind() + "List"
	}
	dyn := dynfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), kinds)
	for _, j := range jobs {
		if _, err := dyn.Resource(mpiV2.GVR()).Namespace("ns").Create(context.Background(), j, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	return &Cluster{Dynamic: dyn, Namespace: "ns"}
}

func mpiJob(name string, created time.Time, succeeded bool) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": mpiV2.GVR().GroupVersion().String(), "kind": mpiV2.Kind(),
		"metadata": map[string]any{"name": name, "namespace": "ns", "labels": map[string]any{LabelManagedBy: ManagedByAin, LabelRecipe: "allreduce"}}}}
	u.SetCreationTimestamp(metav1.NewTime(created))
	if succeeded {
		u.Object["status"] = map[string]any{"conditions": []any{map[string]any{"type": "Succeeded", "status": "True"}}}
	}
	return u
}

// ListRows gives ain's jobs newest first with their age by the cluster's clock; Releasable
// with finishedOnly keeps only the jobs that ended.
func TestListRowsAndReleasable(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	c := fakeJobs(t, mpiJob("old", now.Add(-3*time.Hour), true), mpiJob("new", now.Add(-90*time.Second), false))
	c.Now = func() time.Time { return now }
	rows, err := c.ListRows(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 2 || rows[0].Name != "new" || rows[0].Age != "90s" || rows[1].Age != "3h" || rows[1].Recipe != "allreduce" {
		t.Fatalf("rows: %+v", rows)
	}
	if rows[1].State != PhaseSucceeded {
		t.Errorf("old's state %q, want %s", rows[1].State, PhaseSucceeded)
	}
	var b bytes.Buffer
	WriteListText(&b, rows, false)
	if !strings.Contains(b.String(), "MPIJob kubeflow.org/v2beta1  new") {
		t.Errorf("table:\n%s", b.String())
	}
	todo, err := c.Releasable(context.Background(), true)
	if err != nil || len(todo) != 1 || todo[0].GetName() != "old" {
		t.Fatalf("finished only: %v, %v", todo, err)
	}
	if all, _ := c.Releasable(context.Background(), false); len(all) != 2 {
		t.Errorf("all: %d jobs, want 2", len(all))
	}
}

// An empty namespace lists as an empty list (JSON []), not nil.
func TestListRowsEmptyIsNotNil(t *testing.T) {
	rows, err := fakeJobs(t).ListRows(context.Background())
	if err != nil || rows == nil || len(rows) != 0 {
		t.Fatalf("%#v, %v", rows, err)
	}
}

// A TrainingRuntime of ain's whose TrainJob does not exist is released; done hears of it.
func TestReleaseOrphanRuntimes(t *testing.T) {
	c := fakeJobs(t)
	rt := &unstructured.Unstructured{Object: map[string]any{"apiVersion": TrainingRuntimeGVR.GroupVersion().String(), "kind": "TrainingRuntime",
		"metadata": map[string]any{"name": "q", "namespace": "ns", "labels": map[string]any{LabelManagedBy: ManagedByAin, LabelRun: "q"}}}}
	if _, err := c.Dynamic.Resource(TrainingRuntimeGVR).Namespace("ns").Create(context.Background(), rt, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var released []string
	if err := c.ReleaseOrphanRuntimes(context.Background(), func(name string, err error) {
		if err == nil {
			released = append(released, name)
		}
	}); err != nil {
		t.Fatal(err)
	}
	if len(released) != 1 || released[0] != "q" {
		t.Fatalf("released %v, want [q]", released)
	}
	if l, _ := c.Dynamic.Resource(TrainingRuntimeGVR).Namespace("ns").List(context.Background(), metav1.ListOptions{}); len(l.Items) != 0 {
		t.Errorf("the runtime is still there")
	}
}

// Started refuses a selection whose every pod is Pending, naming them; a following read takes it.
func TestSelectPodsStarted(t *testing.T) {
	pod := func(name, replica string, phase corev1.PodPhase) corev1.Pod {
		return corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"training.kubeflow.org/replica-type": replica, "training.kubeflow.org/replica-index": "0"}},
			Status: corev1.PodStatus{Phase: phase}}
	}
	pods := []corev1.Pod{pod("j-master-0", "master", corev1.PodPending), pod("j-worker-0", "worker", corev1.PodRunning)}
	_, err := SelectPods("j", pods, LogSelection{Index: -1, Started: true})
	var ns *NotStartedError
	if !errors.As(err, &ns) || err.Error() != "no log yet: j-master-0 is Pending (not started)" {
		t.Fatalf("err = %v", err)
	}
	if sel, err := SelectPods("j", pods, LogSelection{Index: -1}); err != nil || len(sel) != 1 {
		t.Fatalf("without Started: %v, %v", sel, err)
	}
	if sel, err := SelectPods("j", pods, LogSelection{Index: -1, All: true, Started: true}); err != nil || len(sel) != 2 {
		t.Fatalf("one started pod among them: %v, %v", sel, err)
	}
}

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

// A nil confirmation callback refuses, never deletes and never panics (the CLI's rule when
// there is nobody to ask): DeleteNamed of a job and of an orphan runtime, and Release; a nil
// event callback of a confirmed Release drops the events.
func TestNilConfirmRefuses(t *testing.T) {
	ctx := context.Background()
	c := fakeJobs(t, mpiJob("a", time.Now(), true))
	c.Kube = fake.NewSimpleClientset()
	orphanRuntime(t, c, "q")
	var nc *NotConfirmedError
	if _, err := c.DeleteNamed(ctx, "a", nil); !errors.As(err, &nc) || err.Error() != "refusing to delete MPIJob ns/a: no confirmation callback (one that returns nil deletes without asking)" {
		t.Errorf("delete a job: %v", err)
	}
	if _, err := c.DeleteNamed(ctx, "q", nil); !errors.As(err, &nc) || nc.What != "delete TrainingRuntime ns/q (its TrainJob does not exist)" {
		t.Errorf("delete an orphan runtime: %v", err)
	}
	if n, err := c.Release(ctx, false, nil, nil); n != 1 || !errors.As(err, &nc) || nc.What != "delete 1 job(s) in ns" {
		t.Errorf("release: %d, %v", n, err)
	}
	if orphans, err := c.OrphanRuntimes(ctx, "q"); len(jobNames(t, c)) != 1 || len(orphans) != 1 || err != nil {
		t.Fatalf("jobs left %v, runtimes %v (%v): deleted without a confirmation", jobNames(t, c), orphans, err)
	}
	if n, err := c.Release(ctx, false, func(int) error { return nil }, nil); n != 1 || err != nil || len(jobNames(t, c)) != 0 {
		t.Errorf("release without events: %d, %v, jobs left %v", n, err, jobNames(t, c))
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
