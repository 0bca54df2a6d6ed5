package jobs

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	mpiv2beta1 "github.com/kubeflow/mpi-operator/pkg/apis/kubeflow/v2beta1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	dynfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/ain-hpc/ain/pkg/profile"
	"github.com/ain-hpc/ain/pkg/recipe"
)

// Every backend that handles a built-in job recipe renders an object of its own kind and
// apiVersion as the bundle's job, and a backend refuses a recipe it does not run.
func TestBackendsBuildTheirKind(t *testing.T) {
	p := profile.Default()
	for _, name := range []string{"qlora", "allreduce"} {
		r := loadRecipe(t, name)
		handled := 0
		for _, b := range Backends {
			bundle, err := b.Build(r, p, Options{Namespace: "ns"})
			if !b.Handles(r) {
				if err == nil {
					t.Errorf("%s %s backend built recipe %s", b.API(), b.Kind(), name)
				}
				continue
			}
			handled++
			if err != nil {
				t.Fatalf("%s %s: %v", b.API(), name, err)
			}
			got := bundle.Job().GetObjectKind().GroupVersionKind()
			if got.Kind != b.Kind() || got.GroupVersion() != b.GVR().GroupVersion() {
				t.Errorf("%s: built %v, backend says %s %v", name, got, b.Kind(), b.GVR())
			}
			u, err := ToUnstructured(bundle.Job())
			if err != nil {
				t.Fatal(err)
			}
			if back, err := BackendOf(u); err != nil || back.API() != b.API() || back.Kind() != b.Kind() {
				t.Errorf("%s: BackendOf(built %s) = %v %v", name, b.Kind(), back, err)
			}
		}
		// training-operator and trainer run both kinds, mpi-operator MPI only.
		if want := map[string]int{"qlora": 2, "allreduce": 3}[name]; handled != want {
			t.Errorf("%s: %d backends handle it, want %d", name, handled, want)
		}
	}
	if r, _ := recipe.Load("vllm", nil); r != nil {
		if b, err := BackendForRecipe(r); err == nil {
			t.Errorf("a serving recipe has job backend %s", b.Kind())
		}
	}
	u := &unstructured.Unstructured{}
	u.SetAPIVersion("batch/v1")
	u.SetKind("Job")
	if _, err := BackendOf(u); err == nil {
		t.Error("a backend for a kind ain does not run")
	}
}

// Cluster.Find asks each backend in turn and gives NotFoundError only when none has the job.
func TestFindThroughBackends(t *testing.T) {
	job := func(kind, name string) *unstructured.Unstructured {
		u := &unstructured.Unstructured{}
		u.SetAPIVersion("kubeflow.org/v1")
		u.SetKind(kind)
		u.SetName(name)
		u.SetNamespace("ns")
		return u
	}
	dyn := dynfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{
		PyTorchJobGVR: "PyTorchJobList", MPIJobGVR: "MPIJobList"}, job("PyTorchJob", "train"), job("MPIJob", "sweep"))
	c := &Cluster{Dynamic: dyn, Namespace: "ns"}
	for name, kind := range map[string]string{"train": "PyTorchJob", "sweep": "MPIJob"} {
		u, err := c.Find(context.Background(), name)
		if err != nil || u.GetKind() != kind {
			t.Errorf("%s: %v %v", name, u, err)
		}
	}
	if _, err := c.Find(context.Background(), "gone"); !IsNotFound(err) {
		t.Errorf("missing job: %v", err)
	}
}

// A controller that died mid-job: the launcher Succeeded, the workers still run sshd, and the
// MPIJob says Created for ever. Watch ends saying the mpi-operator is not updating it, instead of
// watching in silence; a job whose launcher still runs is not called stalled.
func TestWatchControllerStalled(t *testing.T) {
	job := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "kubeflow.org/v2beta1", "kind": "MPIJob",
		"metadata": map[string]any{"name": "ar", "namespace": "ns", "resourceVersion": "7"},
		"spec":     map[string]any{"launcherCreationPolicy": "WaitForWorkersReady"},
		"status":   map[string]any{"conditions": []any{map[string]any{"type": "Created", "status": "True"}}}}}
	pod := func(name, role string, phase corev1.PodPhase) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", CreationTimestamp: metav1.Now(),
			Labels: map[string]string{mpiv2beta1.JobNameLabel: "ar", mpiv2beta1.JobRoleLabel: role}}, Status: corev1.PodStatus{Phase: phase}}
	}
	watch := func(launcher corev1.PodPhase) (Snapshot, error) {
		dyn := dynfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
			map[schema.GroupVersionResource]string{MPIJobV2GVR: "MPIJobList"}, job.DeepCopy())
		kc := fake.NewClientset(pod("ar-launcher-abcde", "launcher", launcher), pod("ar-worker-0", "worker", corev1.PodRunning))
		c := &Cluster{Kube: kc, Dynamic: dyn, Namespace: "ns"}
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		defer cancel()
		return c.Watch(ctx, mpiV2, "ar", WatchOptions{StaleAfter: 200 * time.Millisecond})
	}
	_, err := watch(corev1.PodSucceeded)
	var se *ControllerStalledError
	if !errors.As(err, &se) || se.Outcome != "Succeeded" || !strings.Contains(err.Error(), "the mpi-operator is not updating it") {
		t.Fatalf("launcher Succeeded, MPIJob still Created: %v", err)
	}
	if _, err := watch(corev1.PodRunning); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("launcher still running: %v, want the watch to go on until its deadline", err)
	}
}

// Same-name runs: a TrainingRuntime whose TrainJob does not exist (refused after the runtime was
// applied) is ain's to clean up; one with its TrainJob, or not labelled as ain's, is not. The
// Trainer webhook's "runtime must be created first" (its cache lagging) is retried, nothing else.
func TestOrphanRuntimes(t *testing.T) {
	obj := func(gvr schema.GroupVersionResource, kind, name string, labels map[string]string) *unstructured.Unstructured {
		u := &unstructured.Unstructured{}
		u.SetAPIVersion(gvr.GroupVersion().String())
		u.SetKind(kind)
		u.SetName(name)
		u.SetNamespace("ns")
		u.SetLabels(labels)
		return u
	}
	ours := func(run string) map[string]string {
		return map[string]string{LabelManagedBy: ManagedByAin, LabelRun: run}
	}
	dyn := dynfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{
		TrainingRuntimeGVR: "TrainingRuntimeList", TrainJobGVR: "TrainJobList"},
		obj(TrainingRuntimeGVR, "TrainingRuntime", "left", ours("left")),
		obj(TrainingRuntimeGVR, "TrainingRuntime", "used", ours("used")),
		obj(TrainJobGVR, "TrainJob", "used", ours("used")),
		obj(TrainingRuntimeGVR, "TrainingRuntime", "shared", nil))
	c := &Cluster{Dynamic: dyn, Namespace: "ns"}
	ctx := context.Background()
	got, err := c.OrphanRuntimes(ctx, "")
	if err != nil || strings.Join(got, ",") != "left" {
		t.Fatalf("orphans %v %v, want [left]", got, err)
	}
	if got, _ := c.OrphanRuntimes(ctx, "used"); len(got) != 0 {
		t.Errorf("a runtime with its TrainJob: %v", got)
	}
	if err := c.DeleteRuntime(ctx, "left"); err != nil {
		t.Fatal(err)
	}
	if got, _ := c.OrphanRuntimes(ctx, ""); len(got) != 0 {
		t.Errorf("after delete: %v", got)
	}
	denied := func(msg string) error {
		return &apierrors.StatusError{ErrStatus: metav1.Status{Code: 403, Reason: metav1.StatusReasonForbidden,
			Message: `admission webhook "validate.trainjob.trainer.kubeflow.org" denied the request: ` + msg}}
	}
	if !runtimeNotSeenYet(denied(`spec.runtimeRef: Invalid value: "x": specified trainingRuntime must be created before the TrainJob is created`)) {
		t.Error("the webhook's cache lag is not retried")
	}
	if runtimeNotSeenYet(denied("spec.trainer.numNodes: must be positive")) || runtimeNotSeenYet(errors.New("must be created before the TrainJob is created")) {
		t.Error("another refusal is retried")
	}
}

// The job's terminal condition and its pods' last updates come on two watches, and the pods' can
// lag: the snapshot Watch returns at the end takes each pod from a read of the API server, not
// from a pod watch that has not caught up (here one that delivers nothing after its first list);
// a pod that read no longer has (a worker that cleanPodPolicy deleted) keeps its last state.
func TestWatchFinalPodsRead(t *testing.T) {
	job := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "kubeflow.org/v2beta1", "kind": "MPIJob",
		"metadata": map[string]any{"name": "ar", "namespace": "ns"},
		"status":   map[string]any{"conditions": []any{map[string]any{"type": "Created", "status": "True"}}}}}
	pod := func(name, role, node string, phase corev1.PodPhase) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", CreationTimestamp: metav1.Now(),
			Labels: map[string]string{mpiv2beta1.JobNameLabel: "ar", mpiv2beta1.JobRoleLabel: role}},
			Spec: corev1.PodSpec{NodeName: node}, Status: corev1.PodStatus{Phase: phase}}
	}
	dyn := dynfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
		map[schema.GroupVersionResource]string{MPIJobV2GVR: "MPIJobList"}, job.DeepCopy())
	kc := fake.NewClientset(pod("ar-launcher-abcde", "launcher", "gpu-1", corev1.PodRunning),
		pod("ar-worker-9", "worker", "gpu-3", corev1.PodRunning))
	kc.PrependWatchReactor("pods", func(k8stesting.Action) (bool, watch.Interface, error) {
		return true, watch.NewFake(), nil // a pod watch that never delivers an event
	})
	c := &Cluster{Kube: kc, Dynamic: dyn, Namespace: "ns"}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var finished []string
	type result struct {
		snap Snapshot
		err  error
	}
	done := make(chan result, 1)
	seen := make(chan struct{})
	var once sync.Once
	go func() {
		s, err := c.Watch(ctx, mpiV2, "ar", WatchOptions{
			OnChange:      func(Snapshot) { once.Do(func() { close(seen) }) },
			OnPodFinished: func(p corev1.Pod) { finished = append(finished, p.Name) }})
		done <- result{s, err}
	}()
	select { // both informers have listed: the first snapshot came
	case <-seen:
	case r := <-done:
		t.Fatalf("Watch ended before its first snapshot: %v", r.err)
	}
	pods := kc.CoreV1().Pods("ns")
	if _, err := pods.Update(ctx, pod("ar-launcher-abcde", "launcher", "gpu-1", corev1.PodSucceeded), metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	for i, n := range []string{"gpu-1", "gpu-2"} {
		if _, err := pods.Create(ctx, pod("ar-worker-"+string(rune('0'+i)), "worker", n, corev1.PodRunning), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if err := pods.Delete(ctx, "ar-worker-9", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	ended := job.DeepCopy()
	_ = unstructured.SetNestedSlice(ended.Object, []any{map[string]any{"type": "Created", "status": "True"},
		map[string]any{"type": "Succeeded", "status": "True", "message": "MPIJob ns/ar successfully completed."}}, "status", "conditions")
	if _, err := dyn.Resource(MPIJobV2GVR).Namespace("ns").UpdateStatus(ctx, ended, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	r := <-done
	if r.err != nil || r.snap.Phase != PhaseSucceeded {
		t.Fatalf("Watch: %v, phase %q", r.err, r.snap.Phase)
	}
	phases := map[string]string{}
	for _, p := range r.snap.Pods {
		phases[p.Name] = p.Phase + "@" + p.Node
	}
	want := map[string]string{"ar-launcher-abcde": "Succeeded@gpu-1", "ar-worker-0": "Running@gpu-1", "ar-worker-1": "Running@gpu-2",
		"ar-worker-9": "Running@gpu-3"}
	if len(phases) != len(want) {
		t.Errorf("final pods %v, want %v", phases, want)
	}
	for n, w := range want {
		if phases[n] != w {
			t.Errorf("final pod %s: %q, want %q (all: %v)", n, phases[n], w, phases)
		}
	}
	if len(finished) != 1 || finished[0] != "ar-launcher-abcde" {
		t.Errorf("OnPodFinished: %v, want the launcher once", finished)
	}
}
