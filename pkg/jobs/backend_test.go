package jobs

import (
	"context"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynfake "k8s.io/client-go/dynamic/fake"

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
