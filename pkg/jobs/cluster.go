package jobs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"time"

	kubeflowv1 "github.com/kubeflow/training-operator/pkg/apis/kubeflow.org/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
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

// JobKinds maps kind names to resources, in lookup order.
var JobKinds = []struct {
	Kind string
	GVR  schema.GroupVersionResource
}{
	{kubeflowv1.PyTorchJobKind, PyTorchJobGVR},
	{kubeflowv1.MPIJobKind, MPIJobGVR},
}

// applyKinds are the kinds a job apply may create: the job kinds and what their builders add.
var applyKinds = map[string]kube.Resource{
	kubeflowv1.PyTorchJobKind: {GVR: PyTorchJobGVR, Namespaced: true},
	kubeflowv1.MPIJobKind:     {GVR: MPIJobGVR, Namespaced: true},
	"ConfigMap":               kube.ConfigMaps,
	"Secret":                  kube.Secrets,
	"Service":                 kube.Services,
}

// GVRFor returns the resource of a kind ain creates.
func GVRFor(kind string) (schema.GroupVersionResource, error) {
	if r, ok := applyKinds[kind]; ok {
		return r.GVR, nil
	}
	return schema.GroupVersionResource{}, fmt.Errorf("ain does not apply %s objects", kind)
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
	ap := &kube.Applier{Dynamic: c.Dynamic, Namespace: c.Namespace, Kinds: applyKinds, Force: true,
		KeepSpec: map[string]bool{kubeflowv1.PyTorchJobKind: true, kubeflowv1.MPIJobKind: true}}
	dry := kube.DryRunNone
	if dryRun {
		dry = kube.DryRunServer
	}
	out, err := ap.Apply(ctx, objs, dry)
	var sc *kube.SpecChangeError
	if errors.As(err, &sc) {
		return out, &ImmutableError{Kind: sc.Kind, Name: sc.Name, Namespace: sc.Namespace, Phase: PhaseOf(sc.Existing)}
	}
	return out, err
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
	phase, _ := phaseAndMessage(StatusOf(u))
	return phase
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

// Find returns the job called name, trying each backend in turn (PyTorchJob, MPIJob).
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
	return fmt.Sprintf("no PyTorchJob or MPIJob %q in namespace %s", e.Name, e.Namespace)
}

// IsNotFound reports whether err is a NotFoundError.
func IsNotFound(err error) bool {
	var nf *NotFoundError
	return errors.As(err, &nf)
}

// List returns ain's jobs in the namespace (label managed-by=ain), newest first.
func (c *Cluster) List(ctx context.Context) ([]unstructured.Unstructured, error) {
	var all []unstructured.Unstructured
	for _, k := range JobKinds {
		l, err := c.Dynamic.Resource(k.GVR).Namespace(c.Namespace).List(ctx, metav1.ListOptions{LabelSelector: LabelManagedBy + "=" + ManagedByAin})
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

// Pods returns the pods of job name (by the operator's job-name label), sorted by replica and index.
func (c *Cluster) Pods(ctx context.Context, name string) ([]corev1.Pod, error) {
	l, err := c.Kube.CoreV1().Pods(c.Namespace).List(ctx, metav1.ListOptions{LabelSelector: kubeflowv1.JobNameLabel + "=" + name})
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
		ri, rj := replicaOrder(pods[i].Labels[kubeflowv1.ReplicaTypeLabel]), replicaOrder(pods[j].Labels[kubeflowv1.ReplicaTypeLabel])
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
	case "worker":
		return 1
	}
	return 2
}

// ReplicaIndex is the pod's replica index label as a number (-1 when absent).
func ReplicaIndex(p *corev1.Pod) int {
	var n int
	if _, err := fmt.Sscanf(p.Labels[kubeflowv1.ReplicaIndexLabel], "%d", &n); err != nil {
		return -1
	}
	return n
}

// Delete deletes the job (its pods, services and config go with it through owner references)
// and every other object labelled with its run. It returns what it deleted.
func (c *Cluster) Delete(ctx context.Context, job *unstructured.Unstructured) ([]string, error) {
	gvr, err := GVRFor(job.GetKind())
	if err != nil {
		return nil, err
	}
	bg := metav1.DeletePropagationBackground
	uid := job.GetUID()
	if err := c.Dynamic.Resource(gvr).Namespace(c.Namespace).Delete(ctx, job.GetName(), metav1.DeleteOptions{
		PropagationPolicy: &bg, Preconditions: &metav1.Preconditions{UID: &uid},
	}); err != nil && !apierrors.IsNotFound(err) {
		return nil, err
	}
	deleted := []string{job.GetKind() + "/" + job.GetName()}
	// Pods are removed by the garbage collector through owner references; delete them here
	// too so nothing labelled with the run is left when this returns.
	sel := kubeflowv1.JobNameLabel + "=" + job.GetName()
	pods, err := c.Kube.CoreV1().Pods(c.Namespace).List(ctx, metav1.ListOptions{LabelSelector: sel})
	if err == nil {
		for _, p := range pods.Items {
			if len(p.OwnerReferences) > 0 && p.OwnerReferences[0].UID != types.UID(uid) {
				continue
			}
			if err := c.Kube.CoreV1().Pods(c.Namespace).Delete(ctx, p.Name, metav1.DeleteOptions{}); err == nil {
				deleted = append(deleted, "pod/"+p.Name)
			}
		}
	}
	return deleted, nil
}

// WaitGone waits until no pod of the job is left, or ctx ends: one list, then a watch from
// that list's resource version (re-listed only if the watch closes).
func (c *Cluster) WaitGone(ctx context.Context, name string) error {
	sel := metav1.ListOptions{LabelSelector: kubeflowv1.JobNameLabel + "=" + name}
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
