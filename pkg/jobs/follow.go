package jobs

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// LogSelection picks which pods of a job to read: the master/launcher by default, one replica
// type (and index), or all of them.
type LogSelection struct {
	Replica string // master, worker or launcher ("" with All false: the master or launcher)
	Index   int    // replica index with Replica (-1: every index)
	All     bool
	// Started refuses a selection whose every pod is Pending (NotStartedError): without
	// following, its log is empty, which reads as "it ran and printed nothing".
	Started bool
}

// NotStartedError says every selected pod is Pending: no log yet.
type NotStartedError struct{ Pods []string }

func (e *NotStartedError) Error() string {
	return fmt.Sprintf("no log yet: %s %s Pending (not started)", strings.Join(e.Pods, ", "), map[bool]string{true: "is", false: "are"}[len(e.Pods) == 1])
}

// NoPodMatchError says no pod of the job matches the selection; Have lists what the job has
// (replica-index), for the message.
type NoPodMatchError struct {
	Job  string
	Have []string
	// NoLead: the default selection (the master, launcher or node 0) found none: the operator
	// has not created that pod yet (it creates workers first), not a bad --replica/--index.
	NoLead bool
}

func (e *NoPodMatchError) Error() string {
	if e.NoLead {
		return fmt.Sprintf("%s has no master, launcher or node-0 pod yet (it has %s)", e.Job, strings.Join(e.Have, ", "))
	}
	return fmt.Sprintf("no pod of %s matches (it has %s)", e.Job, strings.Join(e.Have, ", "))
}

// SelectPods returns the pods of s among pods (sorted as SortPods sorts them).
func SelectPods(job string, pods []corev1.Pod, s LogSelection) ([]corev1.Pod, error) {
	var sel []corev1.Pod
	// The lead pod: the master or launcher; a TrainJob on a torch runtime has neither, and its
	// node 0 is the rendezvous master (PET_MASTER_ADDR).
	hasLead := false
	for i := range pods {
		if rt := Replica(&pods[i]); rt == "master" || rt == "launcher" {
			hasLead = true
		}
	}
	for _, p := range pods {
		rt := Replica(&p)
		switch {
		case s.All:
		case s.Replica != "":
			if rt != strings.ToLower(s.Replica) || (s.Index >= 0 && ReplicaIndex(&p) != s.Index) {
				continue
			}
		case hasLead:
			if rt != "master" && rt != "launcher" {
				continue
			}
			if cur, _ := CurrentLauncher(pods); rt == "launcher" && cur.Name != p.Name {
				continue // an earlier attempt of a retried launcher Job
			}
		default:
			if rt != TrainerNodeJob || ReplicaIndex(&p) != 0 {
				continue
			}
		}
		sel = append(sel, p)
	}
	if len(sel) == 0 {
		e := &NoPodMatchError{Job: job, NoLead: !s.All && s.Replica == ""}
		for _, p := range pods {
			have := fmt.Sprintf("%s-%d", Replica(&p), ReplicaIndex(&p))
			if e.NoLead {
				have += " " + string(p.Status.Phase)
			}
			e.Have = append(e.Have, have)
		}
		return nil, e
	}
	if s.Started {
		var pending []string
		for _, p := range sel {
			if p.Status.Phase == corev1.PodPending {
				pending = append(pending, p.Name)
			}
		}
		if len(pending) == len(sel) {
			return nil, &NotStartedError{Pods: pending}
		}
	}
	return sel, nil
}

// LogStreamError says reading one pod's log failed to start; Err is the API's error.
type LogStreamError struct {
	Pod string
	Err error
}

func (e *LogStreamError) Error() string { return "reading the log of " + e.Pod + ": " + e.Err.Error() }
func (e *LogStreamError) Unwrap() error { return e.Err }

// StreamLogs copies the logs of pods (container of the job kind's main container) to w: one pod
// as it is, several interleaved by line, each prefixed with [pod]. With follow, streams stay
// open for new lines until the pod finishes (a pod watch ends each stream a short grace after
// its pod Succeeded or Failed, since some log servers keep a finished pod's stream open) or ctx
// ends. tail < 0 means every line.
func (c *Cluster) StreamLogs(ctx context.Context, w io.Writer, b Backend, job string, pods []corev1.Pod, tail int64, follow bool) error {
	container := b.Container()
	prefix := len(pods) > 1
	out := &lockedWriter{w: w}
	var wg sync.WaitGroup
	errs := make(chan error, len(pods))
	streamCtx := map[string]context.Context{}
	if follow {
		cancels := map[string]context.CancelFunc{}
		for _, p := range pods {
			streamCtx[p.Name], cancels[p.Name] = context.WithCancel(ctx)
		}
		go c.endFollowWhenDone(ctx, b.PodSelector(job), cancels)
	}
	for _, p := range pods {
		wg.Add(1)
		go func(p corev1.Pod) {
			defer wg.Done()
			sctx, f := ctx, follow
			if f {
				sctx = streamCtx[p.Name]
				f = p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed
			}
			rc, err := c.PodLogs(sctx, p.Name, container, tail, f)
			if err != nil {
				errs <- &LogStreamError{Pod: p.Name, Err: err}
				return
			}
			defer rc.Close()
			if prefix {
				errs <- Prefixed(out, rc, "["+p.Name+"] ")
				return
			}
			_, err = io.Copy(out, bufio.NewReader(rc))
			errs <- err
		}(p)
		if !prefix {
			break
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil && ctx.Err() == nil && !errors.Is(err, context.Canceled) {
			return err
		}
	}
	return nil
}

// endFollowWhenDone watches the job's pods and cancels a pod's log stream once it has finished
// (after a short grace so the last lines arrive).
func (c *Cluster) endFollowWhenDone(ctx context.Context, selector string, cancels map[string]context.CancelFunc) {
	w, err := c.Kube.CoreV1().Pods(c.Namespace).Watch(ctx, metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		return
	}
	defer w.Stop()
	for ev := range w.ResultChan() {
		p, ok := ev.Object.(*corev1.Pod)
		if !ok {
			continue
		}
		if cancel, ok := cancels[p.Name]; ok && (p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed) {
			time.AfterFunc(2*time.Second, cancel)
		}
	}
}

type lockedWriter struct {
	w  io.Writer
	mu sync.Mutex
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// CurrentLauncher is the launcher pod whose log tells an MPI job's outcome. The launcher is a
// batch Job's pod, and a Job whose backoffLimit allows retries makes a new pod for each attempt
// (batch/v1's default backoffLimit is 6), so the first launcher by name may be a failed earlier
// attempt: the one that Succeeded is taken, else the newest. ok is false without a launcher.
func CurrentLauncher(pods []corev1.Pod) (corev1.Pod, bool) {
	var best corev1.Pod
	found := false
	for _, p := range pods {
		if Replica(&p) != RoleLauncher {
			continue
		}
		switch {
		case !found:
		case (p.Status.Phase == corev1.PodSucceeded) != (best.Status.Phase == corev1.PodSucceeded):
			if p.Status.Phase != corev1.PodSucceeded {
				continue
			}
		case !best.CreationTimestamp.Before(&p.CreationTimestamp):
			continue
		}
		best, found = p, true
	}
	return best, found
}

// NoPodsError says job Name has no pods: not yet, or they were cleaned up.
type NoPodsError struct{ Name string }

func (e *NoPodsError) Error() string {
	return e.Name + " has no pods (yet, or they were cleaned up)"
}

// LogOptions choose the pods whose logs Logs reads (LogSelection: Started is !Follow) and how.
type LogOptions struct {
	Replica string
	Index   int
	All     bool
	Tail    int64 // the last lines of each pod; < 0: every line
	Follow  bool
}

// Logs copies the logs of job name's pods that o selects to w (StreamLogs). Its errors: the
// job's lookup (NotFoundError), NoPodsError, the selection's (NoPodMatchError,
// NotStartedError), LogStreamError, or a ClusterError.
func (c *Cluster) Logs(ctx context.Context, w io.Writer, name string, o LogOptions) error {
	job, err := c.Find(ctx, name)
	if err != nil {
		if IsNotFound(err) {
			return err
		}
		return &ClusterError{Doing: "reading the job", Err: err}
	}
	pods, err := c.JobPods(ctx, job)
	if err != nil {
		return &ClusterError{Doing: "reading the job's pods", Err: err}
	}
	if len(pods) == 0 {
		return &NoPodsError{Name: name}
	}
	sel, err := SelectPods(name, pods, LogSelection{Replica: o.Replica, Index: o.Index, All: o.All, Started: !o.Follow})
	if err != nil {
		return err
	}
	be, err := BackendOf(job)
	if err != nil {
		return err
	}
	return c.StreamLogs(ctx, w, be, name, sel, o.Tail, o.Follow)
}
