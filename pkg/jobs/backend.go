package jobs

import (
	"context"
	"fmt"
	"io"
	"time"

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
// a job of that API and follow it, so that a new API is a new file implementing it plus a line
// in Backends, not edits across the commands.
type Backend interface {
	// API is the family (what --api names); Kind and GVR name the job object.
	API() API
	Kind() string
	GVR() schema.GroupVersionResource
	// Handles reports whether this backend runs recipe r.
	Handles(r *recipe.Recipe) bool
	// Build renders r for the fabric p (pure, no I/O). The job is the bundle's last object
	// (Bundle.Job); what it needs (a TrainingRuntime) comes before it.
	Build(r *recipe.Recipe, p *profile.Profile, o Options) (*Bundle, error)
	// Find returns the job called name; a missing job (or a missing CRD) is a NotFoundError.
	Find(ctx context.Context, c *Cluster, name string) (*unstructured.Unstructured, error)
	// State reads the job's phase (ain's phases: Pending ... Succeeded, Failed), message and times.
	State(job *unstructured.Unstructured) State
	// PodSelector is the label selector of the pods the job's controller creates for job name.
	PodSelector(name string) string
	// Pods returns the job's pods, launcher/master first, then workers by index.
	Pods(ctx context.Context, c *Cluster, name string) ([]corev1.Pod, error)
	// Container is the container that runs the work in every pod (for logs).
	Container() string
	// Logs opens a pod's log from the container holding the work.
	Logs(ctx context.Context, c *Cluster, pod string, tail int64, follow bool) (io.ReadCloser, error)
	// Delete deletes the job, its pods and what ain applied with it; it returns "Kind/name" of each.
	Delete(ctx context.Context, c *Cluster, job *unstructured.Unstructured) ([]string, error)
	// Shape is the number of GPU pods and GPUs the job asks for.
	Shape(job *unstructured.Unstructured) (nodes int, gpus int64)
}

// State is a job's status as ain reads it, the same for every API.
type State struct {
	Phase, Message    string
	Started, Finished time.Time
	// Conditions are the job's conditions in kubeflow's shape (TrainJob's metav1.Conditions
	// converted).
	Conditions []kubeflowv1.JobCondition
}

// Backends are the workload APIs ain knows, in lookup order (Find tries them in turn): the
// kubeflow.org/v1 PyTorchJob and MPIJob first (index 0 and 1 are relied on by backendFor), then
// the v2beta1 MPIJob and the TrainJob.
var Backends = []Backend{
	kubeflowV1{jobAPI: jobAPI{kind: kubeflowv1.PyTorchJobKind, gvr: PyTorchJobGVR, container: PyTorchContainer, selector: kubeflowv1.JobNameLabel},
		handles: func(r *recipe.Recipe) bool { return r.Training != nil }},
	kubeflowV1{jobAPI: jobAPI{kind: kubeflowv1.MPIJobKind, gvr: MPIJobGVR, container: MPIContainer, selector: kubeflowv1.JobNameLabel},
		handles: func(r *recipe.Recipe) bool { return r.MPI != nil }},
	mpiV2,
	trainJob,
}

// BackendOf returns the backend of a job object (by its apiVersion and kind).
func BackendOf(u *unstructured.Unstructured) (Backend, error) {
	gvk := u.GroupVersionKind()
	for _, b := range Backends {
		if b.Kind() == gvk.Kind && b.GVR().GroupVersion() == gvk.GroupVersion() {
			return b, nil
		}
	}
	return nil, fmt.Errorf("ain runs no %s %s jobs", gvk.GroupVersion(), gvk.Kind)
}

// BackendForRecipe returns the backend that runs r with no cluster to ask: the documented
// default (Preference), as `ain render` uses.
func BackendForRecipe(r *recipe.Recipe) (Backend, error) {
	return Choose(r, Served{}, APIAuto)
}

// jobAPI is what every backend has: a kind, its resource, the main container, and the pod label
// whose value is the job name.
type jobAPI struct {
	kind      string
	gvr       schema.GroupVersionResource
	container string
	selector  string
}

func (b jobAPI) Kind() string                     { return b.kind }
func (b jobAPI) GVR() schema.GroupVersionResource { return b.gvr }
func (b jobAPI) Container() string                { return b.container }
func (b jobAPI) PodSelector(name string) string   { return b.selector + "=" + name }

func (b jobAPI) Find(ctx context.Context, c *Cluster, name string) (*unstructured.Unstructured, error) {
	u, err := c.Dynamic.Resource(b.gvr).Namespace(c.Namespace).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, &NotFoundError{Name: name, Namespace: c.Namespace}
	}
	return u, err
}

func (b jobAPI) Pods(ctx context.Context, c *Cluster, name string) ([]corev1.Pod, error) {
	return c.podsBySelector(ctx, b.PodSelector(name))
}

func (b jobAPI) Logs(ctx context.Context, c *Cluster, pod string, tail int64, follow bool) (io.ReadCloser, error) {
	return c.PodLogs(ctx, pod, b.container, tail, follow)
}

// kubeflowState reads the conditions the kubeflow operators share (training-operator v1 and
// mpi-operator v2beta1 write the same JobCondition types: Created, Running, Restarting,
// Succeeded, Failed, Suspended), plus status.startTime and completionTime.
func kubeflowState(u *unstructured.Unstructured) State {
	st := StatusOf(u)
	phase, msg := phaseAndMessage(st)
	s := State{Phase: phase, Message: msg, Conditions: st.Conditions}
	if st.StartTime != nil {
		s.Started = st.StartTime.Time
	}
	if st.CompletionTime != nil {
		s.Finished = st.CompletionTime.Time
	}
	return s
}

// kubeflowV1 is a kubeflow.org/v1 job run by the training-operator (v1.8): PyTorchJob or
// MPIJob. Both share the operator's conditions, its job-name/replica-type/replica-index pod
// labels and owner-referenced pods, so one type serves both.
type kubeflowV1 struct {
	jobAPI
	handles func(*recipe.Recipe) bool
}

func (b kubeflowV1) API() API                                        { return APITrainingOperator }
func (b kubeflowV1) Handles(r *recipe.Recipe) bool                   { return b.handles(r) }
func (b kubeflowV1) State(u *unstructured.Unstructured) State        { return kubeflowState(u) }
func (b kubeflowV1) Shape(u *unstructured.Unstructured) (int, int64) { return replicaShape(u) }

// Build wraps the builders of build.go (which pick the kind from the recipe).
func (b kubeflowV1) Build(r *recipe.Recipe, p *profile.Profile, o Options) (*Bundle, error) {
	if !b.handles(r) {
		return nil, fmt.Errorf("recipe %s is not a %s recipe", r.Metadata.Name, b.kind)
	}
	return Build(r, p, o)
}

func (b kubeflowV1) Delete(ctx context.Context, c *Cluster, job *unstructured.Unstructured) ([]string, error) {
	return c.deleteJob(ctx, b, job, true)
}
