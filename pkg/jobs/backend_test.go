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

// Each built-in job recipe has exactly one backend, whose Build renders an object of the
// backend's own kind, and a backend refuses a recipe of another.
func TestBackendsBuildTheirKind(t *testing.T) {
	p := profile.Default()
	for name, kind := range map[string]string{"qlora": "PyTorchJob", "allreduce": "MPIJob"} {
		r, err := recipe.Load(name, nil)
		if err != nil {
			t.Fatal(err)
		}
		b, err := BackendForRecipe(r)
		if err != nil || b.Kind() != kind {
			t.Fatalf("%s: backend %v %v, want %s", name, b, err, kind)
		}
		bundle, err := b.Build(r, p, Options{Namespace: "ns"})
		if err != nil {
			t.Fatal(err)
		}
		if got := bundle.Objects[0].GetObjectKind().GroupVersionKind(); got.Kind != kind || got.GroupVersion() != b.GVR().GroupVersion() {
			t.Errorf("%s: built %v, backend says %s %v", name, got, kind, b.GVR())
		}
		for _, other := range Backends {
			if other.Kind() != kind {
				if _, err := other.Build(r, p, Options{}); err == nil {
					t.Errorf("%s backend built recipe %s", other.Kind(), name)
				}
			}
		}
	}
	if r, _ := recipe.Load("vllm", nil); r != nil {
		if b, err := BackendForRecipe(r); err == nil {
			t.Errorf("a serving recipe has job backend %s", b.Kind())
		}
	}
	if _, err := BackendFor("TrainJob"); err == nil {
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
