// Package train submits one training job built from a recipe and follows it to its end: the
// readiness gate, a counter snapshot of the candidate nodes, the server-side apply, the watch,
// the summary read from every rank's log, the saved logs, the counters again and the verdict.
// It prints nothing: each step is an Event given to Progress, and its errors are typed (errors.go)
// so that the command decides exit codes and hints.
package train

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/ain-hpc/ain/pkg/next"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/ain-hpc/ain/pkg/bench"
	"github.com/ain-hpc/ain/pkg/counters"
	"github.com/ain-hpc/ain/pkg/jobs"
	"github.com/ain-hpc/ain/pkg/kube"
	"github.com/ain-hpc/ain/pkg/nccl"
	"github.com/ain-hpc/ain/pkg/profile"
	"github.com/ain-hpc/ain/pkg/recipe"
)

// Runner holds what a run needs from its surroundings. Cluster, Backend and Now are required.
type Runner struct {
	Cluster *jobs.Cluster
	Backend jobs.Backend
	// GangSchedulers are the gang schedulers the cluster serves: with the mpi-operator's
	// PodGroup API among them the job is built with gang scheduling (jobs.OperatorGang).
	GangSchedulers []string
	Now            func() time.Time
	// Gate runs the readiness preflight before anything is applied; its error is returned as
	// it is. nil: no gate.
	Gate func(ctx context.Context) error
	// Counters snapshots the RDMA port counters of nodes (none: every node the job could land
	// on); errs says why a node has none. nil: no wire check.
	Counters func(ctx context.Context, nodes []string, when string) (snaps map[string]*counters.Snapshot, errs map[string]string)
	// Watch starts a live view of the job: the watch's OnChange hook and a stop function. nil: none.
	Watch func(start time.Time) (onChange func(jobs.Snapshot), stop func())
	// Progress receives every step, from the calling goroutine. nil: none.
	Progress func(Event)
}

// Options are one run's inputs.
type Options struct {
	Recipe  *recipe.Recipe
	Profile *profile.Profile
	// Name overrides the recipe's metadata.name; Namespace is where the job goes (empty: the
	// client's).
	Name, Namespace string
	// DryRunServer asks the API server (schema, admission webhooks) without creating anything.
	DryRunServer bool
	// NoWait returns once the job is applied.
	NoWait bool
	// Timeout bounds the watch (0: none); the job keeps running after it.
	Timeout time.Duration
	// DeleteOnInterrupt deletes the job when ctx ends after it was applied.
	DeleteOnInterrupt bool
	// SaveLogs is a folder under which every pod's log is saved when the job ends ("": none).
	SaveLogs string
	// RequireTransport ("ib", "roce" or "") fails a job whose ranks' NCCL used another one, or
	// whose RDMA counters contradict its log.
	RequireTransport string
	// TailLines is how many log lines of a failed rank the summary keeps.
	TailLines int
	// NoCounters skips the wire check (Runner.Counters).
	NoCounters bool
	// Validated, when set, is the passing bench the job relies on: its ranks run only on the
	// nodes it measured (bench.Validate).
	Validated *bench.Validation
}

// JobName is the job's name: the override, else the recipe's name.
func JobName(r *recipe.Recipe, override string) string {
	if override != "" {
		return override
	}
	return r.Metadata.Name
}

// EventKind says which step an Event reports.
type EventKind int

// The steps of a run.
const (
	EventGang          EventKind = iota // what ain assumed about the operator's gang scheduling
	EventAPI                            // the job API chosen
	EventDryRun                         // the API server accepted the dry run
	EventDryRunSkipped                  // an object the dry run did not send, and why
	EventApplied                        // the job was applied (created or changed)
	EventUnchanged                      // the job already existed with this spec; it is watched
	EventNoWire                         // the wire check was dropped: the job ran before the snapshot
	EventLogsSaved                      // the logs were saved (Message: the folder)
	EventWarning                        // something went wrong that does not change the outcome
	EventValidated                      // the job is pinned to the nodes a passing bench measured
)

// Event is one step, worded for a person.
type Event struct {
	Kind    EventKind
	Message string
}

// String is the event's line as a person reads it: its step, then its message.
func (e Event) String() string {
	switch e.Kind {
	case EventAPI:
		return "job API: " + e.Message
	case EventDryRun, EventDryRunSkipped:
		return "server dry run: " + e.Message
	case EventApplied:
		return "applied " + e.Message
	case EventValidated:
		return "validated nodes: " + e.Message
	case EventLogsSaved:
		return "logs saved under " + e.Message
	case EventWarning:
		return "warning: " + e.Message
	}
	return e.Message // EventGang, EventUnchanged, EventNoWire: a sentence of its own
}

// Result is what a run found: the server's answer to a dry run, or the job's summary and
// wire check once it ended. Summary is nil when the job was not followed to its end.
type Result struct {
	Kind, Namespace, Name string
	// DryRun are the objects as the API server would store them; DryRunSkipped those not sent.
	DryRun        []runtime.Object
	DryRunSkipped []jobs.DryRunSkipped
	// Submitted: the job was applied and not followed (Options.NoWait).
	Submitted bool
	Summary   *jobs.Summary
	Wire      *bench.Wire
}

func (r *Runner) emit(k EventKind, format string, args ...any) {
	if r.Progress != nil {
		r.Progress(Event{Kind: k, Message: fmt.Sprintf(format, args...)})
	}
}

// Run submits the job of o.Recipe and follows it (see the package comment). ctx's end is an
// interrupt: InterruptedError says what it left (and, with DeleteOnInterrupt, what was deleted).
// A job that ran to its end returns a Result with its Summary, and an error when it failed
// (JobFailedError) or missed RequireTransport (TransportError).
func (r *Runner) Run(ctx context.Context, o Options) (*Result, error) {
	be, cl := r.Backend, r.Cluster
	bo := jobs.Options{Name: o.Name, Namespace: o.Namespace}
	if jobs.OperatorGang(r.GangSchedulers) {
		bo.GangScheduling, bo.GangSchedulers = true, r.GangSchedulers
		r.emit(EventGang, "%s", jobs.GangAssumption(be.API(), o.Recipe, r.GangSchedulers))
	}
	b, err := be.Build(o.Recipe, o.Profile, bo)
	if err != nil {
		return nil, &BuildError{Err: err}
	}
	r.emit(EventAPI, "%s", be.API().Describe())
	if v := o.Validated; v != nil {
		if err := bench.PinWorkers(b.Objects, v.Nodes); err != nil {
			return nil, &BuildError{Err: err}
		}
		r.emit(EventValidated, "the ranks run only on %s, validated by the allreduce bench %s (%s, %s ago)",
			strings.Join(v.Nodes, ","), v.Result.Name, v.Path, v.Age.Round(time.Minute))
		pn, err := checkPinned(ctx, cl.Kube, v.Nodes, o.Recipe.Workload().Nodes)
		if err != nil {
			return nil, err
		}
		if len(pn.unusable) > 0 {
			r.emit(EventWarning, "validated node(s) that cannot take a rank now (the others are enough): %s", strings.Join(pn.unusable, "; "))
		}
		if len(pn.notChecked) > 0 {
			r.emit(EventWarning, "may not read node(s) %s: not checked whether they can take the pinned ranks", strings.Join(pn.notChecked, ","))
		}
	}
	res := &Result{Kind: be.Kind(), Namespace: cl.Namespace, Name: JobName(o.Recipe, o.Name)}
	if o.Namespace != "" {
		res.Namespace = o.Namespace
	}
	if o.DryRunServer {
		applied, skipped, err := cl.ApplyDryRun(ctx, b.Objects)
		if err != nil {
			return nil, applyError(err)
		}
		for _, x := range applied {
			res.DryRun = append(res.DryRun, x.Object)
		}
		res.DryRunSkipped = skipped
		r.emit(EventDryRun, "the API server accepted it (schema and admission webhooks); nothing was created")
		for _, sk := range skipped {
			r.emit(EventDryRunSkipped, "%s not sent: %s", sk.What, sk.Why)
		}
		return res, nil
	}
	if r.Gate != nil {
		if err := r.Gate(ctx); err != nil {
			return nil, err
		}
	}
	tw := r.wireBefore(ctx, o)
	if tw != nil && ctx.Err() != nil {
		return nil, &InterruptedError{Stage: StageBeforeApply, Kind: res.Kind, Namespace: res.Namespace, Name: res.Name, ProbesDeleted: true}
	}
	applied, err := cl.Apply(ctx, b.Objects, false)
	if err != nil {
		return nil, applyError(err)
	}
	job := applied[len(applied)-1]
	if ctx.Err() != nil {
		return nil, r.interrupted(ctx, o, res, StageApplying, jobs.PhaseOf(job.Object))
	}
	if job.Unchanged {
		r.emit(EventUnchanged, "%s %s/%s already submitted with this spec (%s): nothing changed; watching it", res.Kind, res.Namespace, res.Name, jobs.PhaseOf(job.Object))
		if tw != nil {
			r.emit(EventNoWire, "the job was running before the RDMA counters were read: no per-HCA bytes for it")
			tw = nil
		}
	} else {
		w := o.Recipe.Workload()
		r.emit(EventApplied, "%s %s/%s (%d node(s) x %d GPU, fabric %s; server-side apply, field manager %s)",
			res.Kind, res.Namespace, res.Name, w.Nodes, w.GPUsPerNode, o.Profile.Spec.Fabric, jobs.FieldManager)
	}
	if o.NoWait {
		res.Submitted = true
		return res, nil
	}
	return r.watch(ctx, o, res, tw)
}

// applyError keeps the interrupt and the immutable job apart from the cluster's refusals.
func applyError(err error) error {
	var ie *jobs.ImmutableError
	switch {
	case errors.Is(err, context.Canceled):
		// kube's Apply returns the interrupt only when it came before the first request.
		return &InterruptedError{Stage: StageBeforeApply}
	case errors.As(err, &ie):
		return err
	}
	return &ClusterError{Doing: "applying the job", Err: err}
}

// watch follows the job to its end and summarises it.
func (r *Runner) watch(parent context.Context, o Options, res *Result, tw *wireCheck) (*Result, error) {
	be, cl := r.Backend, r.Cluster
	ctx := parent
	cancel := context.CancelFunc(func() {})
	if o.Timeout > 0 {
		ctx, cancel = context.WithTimeout(parent, o.Timeout)
	}
	defer cancel()
	onChange, stop := func(jobs.Snapshot) {}, func() {}
	if r.Watch != nil {
		onChange, stop = r.Watch(r.Now())
	}
	col := cl.NewCollector(res.Kind, o.TailLines)
	snap, err := cl.Watch(ctx, be, res.Name, jobs.WatchOptions{
		OnChange: onChange, Explain: cl.ExplainPending,
		OnPodFinished: func(p corev1.Pod) { col.Collect(parent, p) },
	})
	stop()
	var stuck *jobs.StuckError
	var stalled *jobs.ControllerStalledError
	if err != nil {
		switch {
		case parent.Err() != nil:
			return nil, r.interrupted(parent, o, res, StageWatching, snap.Phase)
		case errors.As(err, &stalled), errors.As(err, &stuck):
			return nil, err
		case errors.Is(err, context.DeadlineExceeded):
			return nil, &TimeoutError{Timeout: o.Timeout, Kind: res.Kind, Namespace: res.Namespace, Name: res.Name, Snapshot: snap,
				Pending: jobs.PendingReasons(snap, r.GangSchedulers)}
		}
		return nil, &ClusterError{Doing: "watching the job", Err: err}
	}
	if snap.Phase == jobs.PhaseDeleted {
		return nil, &jobs.DeletedError{Kind: res.Kind, Namespace: res.Namespace, Name: res.Name}
	}
	pods, err := be.Pods(parent, cl, res.Name)
	if err != nil {
		return nil, &ClusterError{Doing: "reading the job's pods", Err: err}
	}
	sum := cl.Summarize(parent, snap, pods, o.TailLines, col.Wait())
	if o.SaveLogs != "" {
		if dir, err := cl.SaveLogs(parent, o.SaveLogs, snap.Name, pods); err != nil {
			r.emit(EventWarning, "saving logs: %v", err)
		} else {
			r.emit(EventLogsSaved, "%s", dir)
		}
	}
	if tw != nil {
		res.Wire = r.wireAfter(parent, tw, &sum)
	}
	res.Summary = &sum
	return res, verdict(sum, o.RequireTransport, res.Wire)
}

// verdict is the job's outcome as an error. A wire finding (the counters contradict NCCL's
// transport) fails RequireTransport too: the job's logs claimed the fabric, its HCAs say
// otherwise.
func verdict(sum jobs.Summary, require string, wire *bench.Wire) error {
	if sum.Phase == jobs.PhaseFailed {
		return &JobFailedError{Kind: sum.Kind, Namespace: sum.Namespace, Name: sum.Name}
	}
	if require == "" {
		return nil
	}
	if wire != nil && len(wire.Findings) > 0 {
		return &TransportError{Namespace: sum.Namespace, Name: sum.Name, Require: require, Got: sum.Transport, Findings: wire.Findings}
	}
	if sum.Transport != require {
		return &TransportError{Namespace: sum.Namespace, Name: sum.Name, Require: require, Got: sum.Transport}
	}
	return nil
}

// interrupted reports an interrupt that left the job applied: with DeleteOnInterrupt it is
// deleted (in a context of its own: ctx is done).
func (r *Runner) interrupted(ctx context.Context, o Options, res *Result, stage Stage, phase string) error {
	e := &InterruptedError{Stage: stage, Kind: res.Kind, Namespace: res.Namespace, Name: res.Name, Phase: phase}
	if !o.DeleteOnInterrupt {
		return e
	}
	e.DeleteAsked = true
	dctx, cancel := kube.Finishing(ctx)
	defer cancel()
	job, err := r.Cluster.Find(dctx, res.Name)
	if err == nil {
		e.Deleted, err = r.Cluster.Delete(dctx, job)
	}
	switch {
	case err == nil:
	case jobs.IsNotFound(err):
		e.Gone = true
	default:
		e.DeleteErr = err
	}
	return e
}

// wireCheck is the counter snapshot taken before the job is submitted, for the wire check once
// it has ended.
//
// The "before" snapshot reads every candidate node before the job is applied, not the job's own
// nodes once its pods are scheduled: a probe pod needs its own scheduling and start, and by then
// the ranks may already be exchanging data (NCCL's init and the first steps), which the delta
// would miss. Reading before the apply misses nothing of the job; the "after" snapshot reads only
// the nodes its ranks ran on.
type wireCheck struct {
	before map[string]*counters.Snapshot
	errs   map[string]string
}

// wireBefore snapshots the counters of the job's candidate nodes, when the check applies: an
// RDMA fabric, several nodes, a job that is followed, counters not turned off.
func (r *Runner) wireBefore(ctx context.Context, o Options) *wireCheck {
	if r.Counters == nil || o.NoCounters || o.NoWait || !o.Profile.RDMA() || o.Recipe.Workload().Nodes < 2 {
		return nil
	}
	tw := &wireCheck{}
	tw.before, tw.errs = r.Counters(ctx, nil, "before the job")
	return tw
}

// wireAfter snapshots the nodes the job's ranks ran on and compares them with the snapshot
// before. Only a job that succeeded is judged: a failed one may have died before its traffic.
func (r *Runner) wireAfter(ctx context.Context, tw *wireCheck, sum *jobs.Summary) *bench.Wire {
	var nodes, devices []string
	for _, rk := range sum.Ranks {
		if rk.Replica == "launcher" || rk.Node == "" { // mpirun's launcher sends no NCCL traffic
			continue
		}
		nodes = append(nodes, rk.Node)
		devices = append(devices, rk.Devices...)
	}
	slices.Sort(nodes)
	nodes = slices.Compact(nodes)
	slices.Sort(devices)
	devices = slices.Compact(devices)
	if len(nodes) == 0 {
		return nil
	}
	errs := maps.Clone(tw.errs)
	if errs == nil {
		errs = map[string]string{}
	}
	after := map[string]*counters.Snapshot{}
	if len(tw.before) > 0 { // else no delta can come of it: no probe pods for nothing
		var aerrs map[string]string
		after, aerrs = r.Counters(ctx, nodes, "after the job")
		maps.Copy(errs, aerrs)
	}
	transport := sum.Transport
	if sum.Phase != jobs.PhaseSucceeded {
		transport = "" // reported, not judged
	}
	w := bench.CheckJobWire(transport, devices, nodes, tw.before, after, errs)
	if transport == "" && w.Note == "" && len(nodes) > 1 {
		w.Note = fmt.Sprintf("not judged: the job %s", strings.ToLower(sum.Phase))
		if sum.Phase == jobs.PhaseSucceeded {
			w.Note = "not judged: no NCCL transport in the logs"
		}
	}
	for _, f := range w.Findings {
		code, _, _ := strings.Cut(f, ": ")
		sum.Problems = append(sum.Problems, nccl.Finding{Code: code, Message: f,
			Fix:  "read the nodes' port counters, and the transport each rank chose in its NCCL log",
			Next: []next.Command{"doctor counters --node NODE", "doctor nccl-log"}})
	}
	return w
}
