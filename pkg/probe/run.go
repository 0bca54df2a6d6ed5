package probe

import (
	"context"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
)

// Outcome is what a probe pod left behind.
type Outcome struct {
	// Pod is the pod's latest state seen (the pod as built when it was not created).
	Pod     *corev1.Pod
	Created bool
	// CreateErr says why it was not created.
	CreateErr error
	// Ended: the pod Succeeded or Failed within the timeout.
	Ended bool
	// Log is the probe's output (nil: none read), LogErr why reading it failed.
	Log    []byte
	LogErr error
	// FromMessage: Log is the container's termination message, not a log read.
	FromMessage bool
	// Timeout is the run's bound, for the errors.
	Timeout time.Duration
}

// Run creates the pods of run, waits (one watch) until each has ended or o.Timeout, reads the
// output of those that ended (and of those still Running at the timeout), and deletes them all,
// also when ctx is cancelled (Ctrl-C). The outcomes are in the order of pods.
func Run(ctx context.Context, o Options, run string, pods []*corev1.Pod) []*Outcome {
	o = o.Defaults()
	outs := make([]*Outcome, len(pods))
	for i, p := range pods {
		outs[i] = &Outcome{Pod: p, Timeout: o.Timeout}
	}
	kind := ""
	if len(pods) > 0 {
		kind = pods[0].Labels[LabelProbe]
	}
	shards := labelShards(pods)
	owner := ownProbes(o, run, kind, pods)
	defer func() {
		if !handOff(o, owner, len(pods)) {
			cleanup(o, run, shards, pods)
		}
	}()
	pctx, cancel := context.WithTimeout(ctx, o.Timeout)
	defer cancel()
	// Follow the run's pods from before the first create: one label-selected watch, read at
	// once so the server never drops a slow watcher.
	tr, werr := Follow(pctx, o, run)
	EachBounded(len(outs), parallel, func(i int) {
		out := outs[i]
		if pctx.Err() != nil {
			out.CreateErr = pctx.Err()
			return
		}
		created, err := Create(o, out.Pod)
		if err != nil {
			out.CreateErr = err
			return
		}
		out.Created = true
		out.Pod = created
	})
	if werr == nil {
		tr.Wait(pctx, outs...)
	}
	// Logs of the pods that ended, and of those still Running at the timeout: the dump is
	// printed at once, so a pod that did not exit in time has usually said all it had to. A pod
	// whose termination message holds its whole result needs no log read (termmsg.go).
	EachBounded(len(outs), parallel, func(i int) {
		out := outs[i]
		if !out.Created || (!out.Ended && out.Pod.Status.Phase != corev1.PodRunning) {
			return
		}
		if msg, ok := resultMessage(out.Pod); ok {
			out.Log, out.FromMessage = msg, true
			return
		}
		ReadLog(ctx, o, out)
	})
	return outs
}

// ReadLog reads out's log, bounded to 20 s within ctx.
func ReadLog(ctx context.Context, o Options, out *Outcome) {
	lctx, lcancel := context.WithTimeout(ctx, 20*time.Second)
	defer lcancel()
	out.Log, out.LogErr = o.Kube.CoreV1().Pods(o.Namespace).GetLogs(out.Pod.Name, &corev1.PodLogOptions{Container: Container}).Do(lctx).Raw()
}

// EachBounded runs fn(0) ... fn(n-1), each in its own goroutine but at most limit at a time,
// and returns when all have: API calls, bounded so a large cluster does not send hundreds of
// requests at once.
func EachBounded(n, limit int, fn func(i int)) {
	var wg sync.WaitGroup
	sem := make(chan struct{}, limit)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			fn(i)
		}()
	}
	wg.Wait()
}

// Create creates a probe pod. Its context is not the caller's: a create cut off by Ctrl-C
// could still land on the server after the cleanup ran, so every create started is finished
// (bounded) before the cleanup. A namespace just created may not have its default
// ServiceAccount yet: that is retried for a few seconds.
func Create(o Options, pod *corev1.Pod) (*corev1.Pod, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs := o.Kube
	if o.FanOut != nil {
		cs = o.FanOut
	}
	for {
		created, err := cs.CoreV1().Pods(o.Namespace).Create(ctx, pod, metav1.CreateOptions{})
		if err == nil || !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "serviceaccount") || ctx.Err() != nil {
			return created, err
		}
		select {
		case <-ctx.Done():
			return nil, err
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// Tracker keeps the latest state of a run's probe pods, from one watch.
type Tracker struct {
	mu      sync.Mutex
	pods    map[string]*corev1.Pod
	changed chan struct{}
}

// Follow watches run's pods until ctx ends.
func Follow(ctx context.Context, o Options, run string) (*Tracker, error) {
	sel := LabelProbeRun + "=" + run
	t := &Tracker{pods: map[string]*corev1.Pod{}, changed: make(chan struct{}, 1)}
	w, err := o.Kube.CoreV1().Pods(o.Namespace).Watch(ctx, metav1.ListOptions{LabelSelector: sel, AllowWatchBookmarks: true})
	if err != nil {
		return nil, err
	}
	go t.follow(ctx, o, sel, w)
	return t, nil
}

func (t *Tracker) set(p *corev1.Pod) {
	t.mu.Lock()
	t.pods[p.Name] = p
	t.mu.Unlock()
	select {
	case t.changed <- struct{}{}:
	default:
	}
}

// follow reads the watch until ctx ends. When the server closes it (a busy server drops slow
// watchers), it watches again from the last resource version seen; only when that is too old
// does it resync with one list.
func (t *Tracker) follow(ctx context.Context, o Options, sel string, w watch.Interface) {
	rv := ""
	for {
		for ev := range w.ResultChan() {
			switch p, ok := ev.Object.(*corev1.Pod); {
			case ev.Type == watch.Error:
				rv = "" // 410 Gone and friends: resync
			case ok && ev.Type == watch.Bookmark:
				rv = p.ResourceVersion
			case ok:
				rv = p.ResourceVersion
				t.set(p)
			}
		}
		w.Stop()
		for {
			if ctx.Err() != nil {
				return
			}
			var err error
			if rv != "" {
				w, err = o.Kube.CoreV1().Pods(o.Namespace).Watch(ctx, metav1.ListOptions{LabelSelector: sel, ResourceVersion: rv, AllowWatchBookmarks: true})
				if apierrors.IsResourceExpired(err) || apierrors.IsGone(err) {
					rv = ""
				}
			} else {
				var l *corev1.PodList
				if l, err = o.Kube.CoreV1().Pods(o.Namespace).List(ctx, metav1.ListOptions{LabelSelector: sel}); err == nil {
					for i := range l.Items {
						t.set(&l.Items[i])
					}
					rv = l.ResourceVersion
					w, err = o.Kube.CoreV1().Pods(o.Namespace).Watch(ctx, metav1.ListOptions{LabelSelector: sel, ResourceVersion: rv, AllowWatchBookmarks: true})
				}
			}
			if err == nil {
				break
			}
			select {
			case <-ctx.Done():
				return
			case <-time.After(time.Second):
			}
		}
	}
}

// Update gives out its pod's latest state and returns it.
func (t *Tracker) Update(out *Outcome) *corev1.Pod {
	t.mu.Lock()
	defer t.mu.Unlock()
	if p := t.pods[out.Pod.Name]; p != nil {
		out.Pod = p
	}
	return out.Pod
}

// Changed is signalled when a pod's state changed.
func (t *Tracker) Changed() <-chan struct{} { return t.changed }

// Wait returns when every created pod of outs has ended (Ended set) or ctx ends; each outcome
// gets its pod's latest state.
func (t *Tracker) Wait(ctx context.Context, outs ...*Outcome) {
	for {
		pending := 0
		for _, out := range outs {
			if !out.Created {
				continue
			}
			ph := t.Update(out).Status.Phase
			if ph == corev1.PodSucceeded || ph == corev1.PodFailed {
				out.Ended = true
			} else {
				pending++
			}
		}
		if pending == 0 {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-t.changed:
		}
	}
}
