package jobs

import (
	"context"
	"fmt"
	"io"

	kubeflowv1 "github.com/kubeflow/training-operator/pkg/apis/kubeflow.org/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/ain-hpc/ain/pkg/profile"
	"github.com/ain-hpc/ain/pkg/recipe"
)

// Backend is one workload API that ain runs recipes on: everything a command needs to submit
// a job of that API and follow it, so that a new API (kubeflow.org/v2beta1 MPIJob,
// trainer.kubeflow.org TrainJob) is a new file implementing it plus a line in Backends, not
// edits across the commands.
type Backend interface {
	// Kind and GVR name the job object.
	Kind() string
	GVR() schema.GroupVersionResource
	// Handles reports whether this backend runs recipe r.
	Handles(r *recipe.Recipe) bool
	// Build renders r for the fabric p (pure, no I/O).
	Build(r *recipe.Recipe, p *profile.Profile, o Options) (*Bundle, error)
	// Find returns the job called name; a missing job (or a missing CRD) is a NotFoundError.
	Find(ctx context.Context, c *Cluster, name string) (*unstructured.Unstructured, error)
	// Status reads the job's phase and its message from its status.
	Status(job *unstructured.Unstructured) (phase, message string)
	// Pods returns the job's pods, launcher/master first, then workers by index.
	Pods(ctx context.Context, c *Cluster, name string) ([]corev1.Pod, error)
	// Logs opens a pod's log from the container holding the work.
	Logs(ctx context.Context, c *Cluster, pod string, tail int64, follow bool) (io.ReadCloser, error)
	// Delete deletes the job and its pods and returns "Kind/name" of each.
	Delete(ctx context.Context, c *Cluster, job *unstructured.Unstructured) ([]string, error)
}

// Backends are the workload APIs ain knows, in lookup order (Find tries them in turn).
var Backends = []Backend{
	kubeflowV1{kind: kubeflowv1.PyTorchJobKind, gvr: PyTorchJobGVR, container: PyTorchContainer,
		handles: func(r *recipe.Recipe) bool { return r.Training != nil }},
	kubeflowV1{kind: kubeflowv1.MPIJobKind, gvr: MPIJobGVR, container: MPIContainer,
		handles: func(r *recipe.Recipe) bool { return r.MPI != nil }},
}

// BackendFor returns the backend of a job kind.
func BackendFor(kind string) (Backend, error) {
	for _, b := range Backends {
		if b.Kind() == kind {
			return b, nil
		}
	}
	return nil, fmt.Errorf("ain runs no %s jobs", kind)
}

// BackendForRecipe returns the backend that runs r.
func BackendForRecipe(r *recipe.Recipe) (Backend, error) {
	for _, b := range Backends {
		if b.Handles(r) {
			return b, nil
		}
	}
	return nil, fmt.Errorf("recipe %s (kind %s) is not a job ain runs", r.Metadata.Name, r.Kind)
}

// kubeflowV1 is a kubeflow.org/v1 job run by the training-operator (v1.8): PyTorchJob or
// MPIJob. Both share the operator's conditions, its job-name/replica-type/replica-index pod
// labels and owner-referenced pods, so one type serves both.
type kubeflowV1 struct {
	kind      string
	gvr       schema.GroupVersionResource
	container string
	handles   func(*recipe.Recipe) bool
}

func (b kubeflowV1) Kind() string                     { return b.kind }
func (b kubeflowV1) GVR() schema.GroupVersionResource { return b.gvr }
func (b kubeflowV1) Handles(r *recipe.Recipe) bool    { return b.handles(r) }
func (b kubeflowV1) Status(u *unstructured.Unstructured) (string, string) {
	return phaseAndMessage(StatusOf(u))
}

// Build wraps the builders of build.go (which pick the kind from the recipe).
func (b kubeflowV1) Build(r *recipe.Recipe, p *profile.Profile, o Options) (*Bundle, error) {
	if !b.handles(r) {
		return nil, fmt.Errorf("recipe %s is not a %s recipe", r.Metadata.Name, b.kind)
	}
	return Build(r, p, o)
}

func (b kubeflowV1) Find(ctx context.Context, c *Cluster, name string) (*unstructured.Unstructured, error) {
	u, err := c.Dynamic.Resource(b.gvr).Namespace(c.Namespace).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, &NotFoundError{Name: name, Namespace: c.Namespace}
	}
	return u, err
}

func (b kubeflowV1) Pods(ctx context.Context, c *Cluster, name string) ([]corev1.Pod, error) {
	return c.Pods(ctx, name)
}

func (b kubeflowV1) Logs(ctx context.Context, c *Cluster, pod string, tail int64, follow bool) (io.ReadCloser, error) {
	return c.PodLogs(ctx, pod, b.container, tail, follow)
}

func (b kubeflowV1) Delete(ctx context.Context, c *Cluster, job *unstructured.Unstructured) ([]string, error) {
	return c.Delete(ctx, job)
}
