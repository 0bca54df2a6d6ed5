package jobs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	mpiv2beta1 "github.com/kubeflow/mpi-operator/pkg/apis/kubeflow/v2beta1"
	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	kubeflowv1 "github.com/kubeflow/training-operator/pkg/apis/kubeflow.org/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/ain-hpc/ain/pkg/kube"
)

// GVRs of the job kinds ain runs.
var (
	PyTorchJobGVR = schema.GroupVersionResource{Group: "kubeflow.org", Version: "v1", Resource: "pytorchjobs"}
	MPIJobGVR     = schema.GroupVersionResource{Group: "kubeflow.org", Version: "v1", Resource: "mpijobs"}
)

// jobResources are the resources of what a job apply may create, by apiVersion and kind: the
// job kinds and what their builders add (two MPIJob versions share a kind, so the kind alone
// does not say where an object goes).
var jobResources = map[schema.GroupVersionKind]kube.Resource{
	PyTorchJobGVR.GroupVersion().WithKind(kubeflowv1.PyTorchJobKind):        {GVR: PyTorchJobGVR, Namespaced: true},
	MPIJobGVR.GroupVersion().WithKind(kubeflowv1.MPIJobKind):                {GVR: MPIJobGVR, Namespaced: true},
	MPIJobV2GVR.GroupVersion().WithKind(mpiv2beta1.Kind):                    {GVR: MPIJobV2GVR, Namespaced: true},
	TrainJobGVR.GroupVersion().WithKind(trainer.TrainJobKind):               {GVR: TrainJobGVR, Namespaced: true},
	TrainingRuntimeGVR.GroupVersion().WithKind(trainer.TrainingRuntimeKind): {GVR: TrainingRuntimeGVR, Namespaced: true},
	{Version: "v1", Kind: "ConfigMap"}:                                      kube.ConfigMaps,
	{Version: "v1", Kind: "Secret"}:                                         kube.Secrets,
	{Version: "v1", Kind: "Service"}:                                        kube.Services,
}

// keepSpec are the kinds whose spec a re-run must not change: the jobs, and the TrainingRuntime
// a running TrainJob uses.
var keepSpec = map[string]bool{kubeflowv1.PyTorchJobKind: true, kubeflowv1.MPIJobKind: true,
	trainer.TrainJobKind: true, trainer.TrainingRuntimeKind: true}

// GVRFor returns the resource of an object ain creates, from its apiVersion and kind.
func GVRFor(gvk schema.GroupVersionKind) (schema.GroupVersionResource, error) {
	if r, ok := jobResources[gvk]; ok {
		return r.GVR, nil
	}
	return schema.GroupVersionResource{}, fmt.Errorf("ain does not apply %s %s objects", gvk.GroupVersion(), gvk.Kind)
}

// Cluster talks to the API server for one namespace.
type Cluster struct {
	Kube      kubernetes.Interface
	Dynamic   dynamic.Interface
	Namespace string
	// Now is the clock (nil: time.Now), injected so tests control ages and timeouts.
	Now func() time.Time
}

// ImmutableError says an existing job of the same name has a different spec.
type ImmutableError struct {
	Kind, Name, Namespace string
	Phase                 string
}

func (e *ImmutableError) Error() string {
	if e.Phase == "" {
		// Not a job: the TrainingRuntime of an earlier run of this name.
		return fmt.Sprintf("%s %s/%s already exists with a different spec: an earlier run of this name uses it, and a submitted job's pod templates cannot be changed in place",
			e.Kind, e.Namespace, e.Name)
	}
	return fmt.Sprintf("%s %s/%s already exists (%s) with a different spec; a submitted job's replicas and pod templates cannot be changed in place",
		e.Kind, e.Namespace, e.Name, e.Phase)
}

// ApplyResult is the outcome of applying one object (Unchanged: it existed with the same spec,
// nothing was changed: an idempotent re-run).
type ApplyResult = kube.Applied

// Apply server-side applies objs (field manager "ain", forcing ownership as before). An
// existing job whose spec would change is not touched: ImmutableError. dryRun asks the API
// server (schema, webhooks) without persisting.
func (c *Cluster) Apply(ctx context.Context, objs []runtime.Object, dryRun bool) ([]ApplyResult, error) {
	// The kinds of this bundle, each to the resource of its own apiVersion: one apply never
	// holds a v1 and a v2beta1 MPIJob.
	kinds := map[string]kube.Resource{}
	for _, o := range objs {
		gvk := o.GetObjectKind().GroupVersionKind()
		if r, ok := jobResources[gvk]; ok {
			kinds[gvk.Kind] = r
		}
	}
	ap := &kube.Applier{Dynamic: c.Dynamic, Namespace: c.Namespace, Kinds: kinds, Force: true, KeepSpec: keepSpec}
	dry := kube.DryRunNone
	if dryRun {
		dry = kube.DryRunServer
	}
	out, err := ap.Apply(ctx, objs, dry)
	if runtimeNotSeenYet(err) {
		// The Trainer's TrainJob webhook reads the TrainingRuntime from its informer cache
		// (v2.3.0 pkg/runtime/core/trainingruntime.go ValidateObjects: "specified trainingRuntime
		// must be created before the TrainJob is created"), which lags the runtime applied just
		// before: apply again (idempotent) for a few seconds until the cache has it.
		_ = wait.ExponentialBackoffWithContext(ctx, wait.Backoff{Duration: 250 * time.Millisecond, Factor: 2, Steps: 6},
			func(ctx context.Context) (bool, error) {
				out, err = ap.Apply(ctx, objs, dry)
				return !runtimeNotSeenYet(err), nil
			})
	}
	var sc *kube.SpecChangeError
	if errors.As(err, &sc) {
		e := &ImmutableError{Kind: sc.Kind, Name: sc.Name, Namespace: sc.Namespace}
		if _, err := BackendOf(sc.Existing); err == nil {
			e.Phase = PhaseOf(sc.Existing)
		}
		return out, e
	}
	return out, err
}

// runtimeNotSeenYet: the Trainer's webhook refused a TrainJob for a TrainingRuntime its cache
// does not hold yet.
func runtimeNotSeenYet(err error) bool {
	return err != nil && kube.IsWebhookDenial(err) && strings.Contains(err.Error(), "must be created before the TrainJob is created")
}

// DryRunSkipped is an object a server dry run did not send, and why.
type DryRunSkipped struct{ What, Why string }

// ApplyDryRun is Apply as a server dry run (schema, defaulting, admission webhooks; nothing is
// persisted). A TrainJob whose TrainingRuntime does not exist yet is not sent: the Trainer's
// webhook refuses a TrainJob before its runtime exists, and a dry run creates no runtime, so
// the answer would be about the dry run, not the job; skipped says so.
func (c *Cluster) ApplyDryRun(ctx context.Context, objs []runtime.Object) (res []ApplyResult, skipped []DryRunSkipped, err error) {
	var send []runtime.Object
	for _, o := range objs {
		tj, ok := o.(*trainer.TrainJob)
		if !ok {
			send = append(send, o)
			continue
		}
		ns := tj.Namespace
		if ns == "" {
			ns = c.Namespace
		}
		_, gerr := c.Dynamic.Resource(TrainingRuntimeGVR).Namespace(ns).Get(ctx, tj.Spec.RuntimeRef.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(gerr) {
			skipped = append(skipped, DryRunSkipped{What: trainer.TrainJobKind + "/" + tj.Name,
				Why: "its TrainingRuntime " + tj.Spec.RuntimeRef.Name + " does not exist yet (the Trainer's webhook checks a TrainJob against its runtime; a real apply creates the runtime first)"})
			continue
		}
		send = append(send, o)
	}
	res, err = c.Apply(ctx, send, true)
	return res, skipped, err
}

// Phases of a job, from its conditions.
const (
	PhasePending    = "Pending" // no condition yet: the operator has not picked it up
	PhaseCreated    = "Created"
	PhaseRunning    = "Running"
	PhaseRestarting = "Restarting"
	PhaseSucceeded  = "Succeeded"
	PhaseFailed     = "Failed"
	PhaseSuspended  = "Suspended"
	PhaseDeleted    = "Deleted"
)

// Terminal reports whether a phase is an end state.
func Terminal(phase string) bool {
	return phase == PhaseSucceeded || phase == PhaseFailed || phase == PhaseDeleted
}

// JobStatus is the part of a kubeflow job's status ain reads.
type JobStatus struct {
	Conditions      []kubeflowv1.JobCondition                            `json:"conditions"`
	ReplicaStatuses map[kubeflowv1.ReplicaType]*kubeflowv1.ReplicaStatus `json:"replicaStatuses"`
	StartTime       *metav1.Time                                         `json:"startTime"`
	CompletionTime  *metav1.Time                                         `json:"completionTime"`
}

// StatusOf decodes a job's status.
func StatusOf(u *unstructured.Unstructured) JobStatus {
	var s JobStatus
	if raw, ok := u.Object["status"]; ok {
		b, _ := json.Marshal(raw)
		_ = json.Unmarshal(b, &s)
	}
	return s
}

// PhaseOf returns the job's current phase: the last condition whose status is True, with
// Succeeded and Failed taking precedence.
func PhaseOf(u *unstructured.Unstructured) string {
	return StateOf(u).Phase
}

// StateOf reads a job's state through its backend (a kind ain does not run reads as kubeflow's).
func StateOf(u *unstructured.Unstructured) State {
	if b, err := BackendOf(u); err == nil {
		return b.State(u)
	}
	return kubeflowState(u)
}

func phaseAndMessage(s JobStatus) (string, string) {
	phase, msg := PhasePending, ""
	var lastT time.Time
	for _, c := range s.Conditions {
		if c.Status != corev1.ConditionTrue {
			continue
		}
		t := string(c.Type)
		if t == PhaseSucceeded || t == PhaseFailed {
			return t, c.Message
		}
		if ts := c.LastTransitionTime.Time; !ts.Before(lastT) {
			phase, msg, lastT = t, c.Message, ts
		}
	}
	return phase, msg
}

// Find returns the job called name, trying each backend in turn (v1 PyTorchJob and MPIJob,
// v2beta1 MPIJob, TrainJob); an API the cluster does not serve answers not found.
func (c *Cluster) Find(ctx context.Context, name string) (*unstructured.Unstructured, error) {
	for _, b := range Backends {
		u, err := b.Find(ctx, c, name)
		if err == nil {
			return u, nil
		}
		if !IsNotFound(err) {
			return nil, err
		}
	}
	return nil, &NotFoundError{Name: name, Namespace: c.Namespace}
}

// NotFoundError says no job of that name exists.
type NotFoundError struct{ Name, Namespace string }

func (e *NotFoundError) Error() string {
	return fmt.Sprintf("no job (PyTorchJob, MPIJob, TrainJob) %q in namespace %s", e.Name, e.Namespace)
}

// DeletedError says a job was deleted before it finished.
type DeletedError struct{ Kind, Namespace, Name string }

func (e *DeletedError) Error() string {
	return fmt.Sprintf("%s %s/%s was deleted before it finished", e.Kind, e.Namespace, e.Name)
}

// IsNotFound reports whether err is a NotFoundError.
func IsNotFound(err error) bool {
	var nf *NotFoundError
	return errors.As(err, &nf)
}

// List returns ain's jobs in the namespace (label managed-by=ain), newest first.
func (c *Cluster) List(ctx context.Context) ([]unstructured.Unstructured, error) {
	var all []unstructured.Unstructured
	seen := map[schema.GroupVersionResource]bool{}
	for _, b := range Backends {
		if seen[b.GVR()] {
			continue
		}
		seen[b.GVR()] = true
		l, err := c.Dynamic.Resource(b.GVR()).Namespace(c.Namespace).List(ctx, metav1.ListOptions{LabelSelector: LabelManagedBy + "=" + ManagedByAin})
		if err != nil {
			if apierrors.IsNotFound(err) {
				continue // CRD not installed
			}
			return nil, err
		}
		all = append(all, l.Items...)
	}
	sort.SliceStable(all, func(i, j int) bool {
		return all[i].GetCreationTimestamp().After(all[j].GetCreationTimestamp().Time)
	})
	return all, nil
}

// JobPods returns the pods of a job (through its backend), sorted as SortPods sorts them.
func (c *Cluster) JobPods(ctx context.Context, job *unstructured.Unstructured) ([]corev1.Pod, error) {
	b, err := BackendOf(job)
	if err != nil {
		return nil, err
	}
	return b.Pods(ctx, c, job.GetName())
}

// podsBySelector lists the pods matching a label selector, sorted by replica and index.
func (c *Cluster) podsBySelector(ctx context.Context, sel string) ([]corev1.Pod, error) {
	l, err := c.Kube.CoreV1().Pods(c.Namespace).List(ctx, metav1.ListOptions{LabelSelector: sel})
	if err != nil {
		return nil, err
	}
	pods := l.Items
	SortPods(pods)
	return pods, nil
}

// SortPods orders pods master/launcher first, then workers by index.
func SortPods(pods []corev1.Pod) {
	sort.SliceStable(pods, func(i, j int) bool {
		ri, rj := replicaOrder(Replica(&pods[i])), replicaOrder(Replica(&pods[j]))
		if ri != rj {
			return ri < rj
		}
		return ReplicaIndex(&pods[i]) < ReplicaIndex(&pods[j])
	})
}

func replicaOrder(t string) int {
	switch t {
	case "master", "launcher":
		return 0
	case "worker", TrainerNodeJob:
		return 1
	}
	return 2
}

// Replica is the pod's role in its job, from the labels its controller sets: the
// training-operator's replica-type (master, worker, launcher), the mpi-operator's job-role
// (launcher, worker), JobSet's replicated job (a TrainJob's node or launcher).
func Replica(p *corev1.Pod) string {
	for _, k := range []string{kubeflowv1.ReplicaTypeLabel, mpiv2beta1.JobRoleLabel, ReplicatedJobLabel} {
		if v := p.Labels[k]; v != "" {
			return strings.ToLower(v)
		}
	}
	return ""
}

// ReplicaIndex is the pod's index within its replica (-1 when absent): the kubeflow operators'
// replica-index label, or an Indexed Job's completion index (a TrainJob node's rank). An
// mpi-operator launcher has no index label: it is the only one, index 0.
func ReplicaIndex(p *corev1.Pod) int {
	for _, k := range []string{kubeflowv1.ReplicaIndexLabel, CompletionIndexLabel} {
		var n int
		if v, ok := p.Labels[k]; ok {
			if _, err := fmt.Sscanf(v, "%d", &n); err == nil {
				return n
			}
		}
	}
	if v, ok := p.Annotations[CompletionIndexLabel]; ok {
		var n int
		if _, err := fmt.Sscanf(v, "%d", &n); err == nil {
			return n
		}
	}
	if p.Labels[mpiv2beta1.JobRoleLabel] == "launcher" {
		return 0
	}
	return -1
}

// Delete deletes the job through its backend (its pods, and what ain applied with it).
func (c *Cluster) Delete(ctx context.Context, job *unstructured.Unstructured) ([]string, error) {
	b, err := BackendOf(job)
	if err != nil {
		return nil, err
	}
	return b.Delete(ctx, c, job)
}

// deleteJob deletes the job (its pods, services and config go with it through owner
// references) and the pods of b's selector. With ownedOnly, only pods the job itself owns are
// deleted here (a re-created job of the same name keeps its new pods); backends whose pods
// belong to an intermediate Job (mpi-operator's launcher, JobSet's Jobs) delete by label.
func (c *Cluster) deleteJob(ctx context.Context, b Backend, job *unstructured.Unstructured, ownedOnly bool) ([]string, error) {
	bg := metav1.DeletePropagationBackground
	uid := job.GetUID()
	if err := c.Dynamic.Resource(b.GVR()).Namespace(c.Namespace).Delete(ctx, job.GetName(), metav1.DeleteOptions{
		PropagationPolicy: &bg, Preconditions: &metav1.Preconditions{UID: &uid},
	}); err != nil && !apierrors.IsNotFound(err) {
		return nil, err
	}
	deleted := []string{job.GetKind() + "/" + job.GetName()}
	// Pods are removed by the garbage collector through owner references; delete them here
	// too so nothing labelled with the run is left when this returns.
	// Every pod of the job is named: one the garbage collector took first (NotFound) is gone
	// all the same, and one this user may not delete goes with the job through its owner
	// reference, which is said rather than leaving it out of the list.
	pods, err := c.Kube.CoreV1().Pods(c.Namespace).List(ctx, metav1.ListOptions{LabelSelector: b.PodSelector(job.GetName())})
	if err != nil {
		return append(deleted, fmt.Sprintf("its pods, removed with it by the garbage collector (listing them: %s)", apiReason(err))), nil
	}
	for _, p := range pods.Items {
		if ownedOnly && len(p.OwnerReferences) > 0 && p.OwnerReferences[0].UID != types.UID(uid) {
			continue
		}
		switch err := c.Kube.CoreV1().Pods(c.Namespace).Delete(ctx, p.Name, metav1.DeleteOptions{}); {
		case err == nil || apierrors.IsNotFound(err):
			deleted = append(deleted, "pod/"+p.Name)
		default:
			deleted = append(deleted, fmt.Sprintf("pod/%s, removed with the job by the garbage collector (deleting it here: %s)", p.Name, apiReason(err)))
		}
	}
	return deleted, nil
}

// apiReason is an API error in a few words ("forbidden"), else the error.
func apiReason(err error) string {
	if r := apierrors.ReasonForError(err); r != metav1.StatusReasonUnknown {
		return strings.ToLower(string(r))
	}
	return err.Error()
}

// WaitGone waits until no pod of the job is left, or ctx ends: one list, then a watch from
// that list's resource version (re-listed only if the watch closes).
func (c *Cluster) WaitGone(ctx context.Context, b Backend, name string) error {
	sel := metav1.ListOptions{LabelSelector: b.PodSelector(name)}
	for {
		l, err := c.Kube.CoreV1().Pods(c.Namespace).List(ctx, sel)
		if err != nil {
			return err
		}
		left := map[string]bool{}
		for _, p := range l.Items {
			left[p.Name] = true
		}
		if len(left) == 0 {
			return nil
		}
		wo := sel
		wo.ResourceVersion = l.ResourceVersion
		w, err := c.Kube.CoreV1().Pods(c.Namespace).Watch(ctx, wo)
		if err != nil {
			return err
		}
		for ev := range w.ResultChan() {
			p, ok := ev.Object.(*corev1.Pod)
			if !ok {
				continue
			}
			switch ev.Type {
			case watch.Deleted:
				delete(left, p.Name)
			case watch.Added:
				left[p.Name] = true
			}
			if len(left) == 0 {
				w.Stop()
				return nil
			}
		}
		w.Stop()
		if err := ctx.Err(); err != nil {
			return err
		}
	}
}
