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
