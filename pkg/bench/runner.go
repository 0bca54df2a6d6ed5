package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sort"
	"strings"
	"time"

	"github.com/ain-hpc/ain/pkg/counters"
	"github.com/ain-hpc/ain/pkg/jobs"
)

// Runner runs a Plan's variants one after another through a jobs.Backend: build, pin to the
// first variant's nodes, apply, watch, read and analyse the launcher's output, delete, and
// (with Counters) check that the traffic crossed the HCAs. It prints nothing: each step is an
// Event given to Progress. Its errors are typed (below); the command maps them to exit codes.
type Runner struct {
	Cluster *jobs.Cluster
	Backend jobs.Backend
	// Namespace is where the jobs go (jobs.Options.Namespace; empty: the client's); ShownNamespace
	// is the one named in messages.
	Namespace, ShownNamespace string
	GangSchedulers            []string         // the gang schedulers served: submit with gang scheduling (jobs.Options)
	Keep                      bool             // keep each variant's job after reading its output
	Now                       func() time.Time // required: the clock of job names and timings
	// Progress receives every step, from the calling goroutine; nil: none.
	Progress func(Event)
	// Watch starts a live view of a variant's job: the watch's OnChange hook and a stop function;
	// nil: none.
	Watch func(start time.Time) (onChange func(jobs.Snapshot), stop func())
	// Counters snapshots the RDMA port counters of nodes (none: every node the job could land
	// on); errs says why a node has none. nil: no wire check.
	Counters func(ctx context.Context, nodes []string, when string) (snaps map[string]*counters.Snapshot, errs map[string]string)
}

// EventKind says which step of a variant an Event reports.
type EventKind int

// The steps of a variant.
const (
	EventApplied EventKind = iota // the job was applied
	EventStopped                  // the watch stopped before the job ended; the job is being deleted
	EventFailed                   // the job failed; Lines are the launcher's last lines
	EventWire                     // a finding of the wire (RDMA counters) check
	EventDone                     // the variant's result
	EventWarning                  // something the result keeps as a warning (the job object never finished)
)

// Event is one step of one variant, worded for a person.
type Event struct {
	Index, Total int // 1-based
	Variant      string
	Kind         EventKind
	Message      string
	Lines        []string       // EventFailed: the launcher's last lines
	Snapshot     *jobs.Snapshot // EventStopped: the job's last state (why its pods were pending)
}

// String is the event as ain prints it: "[i/n] variant: message", then any lines indented.
func (e Event) String() string {
	s := fmt.Sprintf("[%d/%d] %s: %s", e.Index, e.Total, e.Variant, e.Message)
	for _, l := range e.Lines {
		s += "\n  | " + l
	}
	return s
}

// ErrInterrupted says the bench was interrupted (the parent context was cancelled).
var ErrInterrupted = errors.New("interrupted")

// TimeoutError says the bench's deadline passed during a variant.
type TimeoutError struct{ Variant string }

func (e *TimeoutError) Error() string { return "timeout reached during variant " + e.Variant }

// VariantFailedError says a variant's job failed; the later variants were not run. Log is
// where the session saved its launcher's output.
type VariantFailedError struct{ Variant, Kind, Job, Log string }

func (e *VariantFailedError) Error() string {
	return fmt.Sprintf("variant %s: %s %s failed; the remaining variants were not run", e.Variant, e.Kind, e.Job)
}

// BuildError says a variant's job could not be built from its recipe.
type BuildError struct{ Err error }

func (e *BuildError) Error() string { return e.Err.Error() }
func (e *BuildError) Unwrap() error { return e.Err }

// ApplyError says the cluster refused a variant's job.
type ApplyError struct{ Err error }

func (e *ApplyError) Error() string { return e.Err.Error() }
func (e *ApplyError) Unwrap() error { return e.Err }

// JobExistsError says a variant's job already existed: its output would be an old run's.
type JobExistsError struct{ Kind, Namespace, Name string }

func (e *JobExistsError) Error() string {
	return fmt.Sprintf("%s %s/%s already exists: its output would be an old run's", e.Kind, e.Namespace, e.Name)
}

// ClusterError is a cluster call that failed while Doing something ("watching the job").
type ClusterError struct {
	Doing string
	Err   error
}

func (e *ClusterError) Error() string { return e.Doing + ": " + e.Err.Error() }
func (e *ClusterError) Unwrap() error { return e.Err }

// Run runs plan's variants into res (res.Variants, res.SameNodes, res.Interrupted*) and returns
// the nodes of the first variant. ctx carries the bench's deadline; parent is the context it
// was derived from, whose end is an interruption (ErrInterrupted) rather than a timeout. It
// stops at the first variant that fails (VariantFailedError) or cannot run.
func (r *Runner) Run(parent, ctx context.Context, plan *Plan, res *Result) ([]string, error) {
	var pinned []string
	names := make([]string, len(plan.Variants))
	for i, v := range plan.Variants {
		names[i] = v.Name
	}
	for i, v := range plan.Variants {
		var before map[string]*counters.Snapshot
		var snapErrs map[string]string
		if r.Counters != nil {
			before, snapErrs = r.Counters(ctx, pinned, "before "+v.Name)
		}
		vr, err := r.runVariant(ctx, plan, i, pinned)
		if err != nil && parent.Err() != nil {
			// A variant cut short measured nothing: it is not recorded as a result.
			res.Interrupted = true
			res.InterruptedNote = "before variant " + v.Name
			if vr != nil {
				res.InterruptedNote = fmt.Sprintf("during variant %s (%s %s, deleted; not recorded)", v.Name, r.Backend.Kind(), vr.Job)
			}
			if rest := names[i+1:]; len(rest) > 0 {
				res.InterruptedNote += "; not run: " + strings.Join(rest, ", ")
			}
			return pinned, ErrInterrupted
		}
		if r.Counters != nil && err == nil && vr != nil && len(vr.Nodes) > 1 && ctx.Err() == nil {
			after, aerrs := r.Counters(ctx, vr.Nodes, "after "+v.Name)
			if snapErrs == nil {
				snapErrs = map[string]string{}
			}
			for n, e := range aerrs {
				snapErrs[n] = e
			}
			vr.Wire = CheckWire(vr, before, after, snapErrs)
			for _, f := range vr.Wire.Findings {
				r.emit(Event{Index: i + 1, Total: len(plan.Variants), Variant: v.Name, Kind: EventWire, Message: f})
			}
		}
		if vr != nil {
			res.Variants = append(res.Variants, vr)
			if i == 0 {
				pinned = vr.Nodes
			} else if !SameSet(pinned, vr.Nodes) {
				res.SameNodes = false
			}
		}
		if err != nil {
			if errors.Is(err, context.DeadlineExceeded) || errors.Is(ctx.Err(), context.DeadlineExceeded) {
				return pinned, &TimeoutError{Variant: v.Name}
			}
			return pinned, err
		}
		if vr.Phase == jobs.PhaseFailed {
			return pinned, &VariantFailedError{Variant: v.Name, Kind: r.Backend.Kind(), Job: vr.Job}
		}
	}
	return pinned, nil
}

// checkShared makes a variant invalid when another workload held GPUs or RDMA devices on its
// nodes while it ran (ProblemSharedNodes). Where the check cannot run, a warning says so.
func (r *Runner) checkShared(ctx context.Context, plan *Plan, vr *VariantResult, selector string, from, to time.Time) {
	ns := r.Namespace
	if ns == "" {
		ns = r.Cluster.Namespace
	}
	sel, err := labels.Parse(selector)
	if err != nil {
		return
	}
	own := func(p *corev1.Pod) bool { return p.Namespace == ns && sel.Matches(labels.Set(p.Labels)) }
	spec := plan.Profile.Spec
	pods, note, err := sharing(ctx, r.Cluster.Kube, ns, vr.Nodes, own, []string{spec.GPUResource, spec.RDMA.Resource}, from, to)
	switch {
	case err != nil:
		vr.Warnings = append(vr.Warnings, "not checked whether another workload shared the nodes: "+err.Error())
	case len(pods) > 0:
		vr.Problems = append(vr.Problems, sharedProblem(pods))
		vr.Valid = false
	}
	if note != "" {
		vr.Warnings = append(vr.Warnings, "shared-nodes check: "+note)
	}
}

func (r *Runner) emit(e Event) {
	if r.Progress != nil {
		r.Progress(e)
	}
}

// runVariant submits one variant's job, watches it, reads and analyses the launcher's output
// and deletes the job (unless Keep). The result is nil only when nothing was submitted.
func (r *Runner) runVariant(ctx context.Context, plan *Plan, i int, pinned []string) (*VariantResult, error) {
	v := plan.Variants[i]
	event := func(k EventKind, format string, args ...any) Event {
		return Event{Index: i + 1, Total: len(plan.Variants), Variant: v.Name, Kind: k, Message: fmt.Sprintf(format, args...)}
	}
	start := r.Now()
	be, cl := r.Backend, r.Cluster
	name := JobName(plan.Name, v.Name, start, plan.Run, jobs.MaxJobNameLen(be.API(), plan.Recipes[i]))
	kind := be.Kind()
	b, err := be.Build(plan.Recipes[i], plan.Profile, jobs.Options{Name: name, Namespace: r.Namespace, GangScheduling: len(r.GangSchedulers) > 0, GangSchedulers: r.GangSchedulers})
	if err != nil {
		return nil, &BuildError{Err: err}
	}
	if len(pinned) > 0 {
		if err := PinWorkers(b.Objects, pinned); err != nil {
			return nil, err
		}
	}
	applied, err := cl.Apply(ctx, b.Objects, false)
	if err != nil {
		return nil, &ApplyError{Err: err}
	}
	if applied[len(applied)-1].Unchanged {
		return nil, &JobExistsError{Kind: kind, Namespace: r.ShownNamespace, Name: name}
	}
	env := v.EnvText()
	if env == "" {
		env = "NCCL's own choices"
	}
	r.emit(event(EventApplied, "applied %s %s/%s (%s)", kind, r.ShownNamespace, name, env))
	vr := &VariantResult{Variant: v, Job: name, Started: start}
	keep := r.Keep
	cleanup := func() {
		if keep {
			return
		}
		dctx, dcancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Minute)
		defer dcancel()
		if u, err := cl.Find(dctx, name); err == nil {
			if _, err := cl.Delete(dctx, u); err == nil {
				_ = cl.WaitGone(dctx, be, name)
			}
		}
	}
	wo := jobs.WatchOptions{Explain: cl.ExplainPending}
	stop := func() {}
	if r.Watch != nil {
		wo.OnChange, stop = r.Watch(start)
	}
	snap, err := cl.Watch(ctx, be, name, wo)
	stop()
	vr.Phase = snap.Phase
	vr.Nodes = WorkerNodes(snap.Pods)
	var stalled *jobs.ControllerStalledError
	if errors.As(err, &stalled) {
		// The launcher ended and its log holds the run: read it anyway, and say that the job
		// object never finished (what the pods say and what the job says disagree).
		vr.Warnings = append(vr.Warnings, stalled.Error())
		r.emit(event(EventWarning, "warning: %s", stalled.Error()))
		if stalled.Outcome == string(corev1.PodFailed) {
			snap.Phase, snap.Message = jobs.PhaseFailed, "its launcher failed"
		} else {
			snap.Phase = jobs.PhaseSucceeded
		}
		vr.Phase, err = snap.Phase, nil
	}
	if err != nil {
		vr.Finished = r.Now()
		vr.Seconds = vr.Finished.Sub(start).Seconds()
		e := event(EventStopped, "stopped (%s); deleting %s %s", snap.Phase, kind, name)
		e.Snapshot = &snap
		r.emit(e)
		keep = false
		cleanup()
		if ctx.Err() != nil {
			return vr, ctx.Err()
		}
		return vr, &ClusterError{Doing: "watching the job", Err: err}
	}
	if snap.Phase == jobs.PhaseDeleted {
		return vr, &jobs.DeletedError{Kind: kind, Namespace: r.ShownNamespace, Name: name}
	}
	raw, err := LauncherOutput(ctx, cl, be, name)
	if err != nil {
		return vr, &ClusterError{Doing: "reading the launcher's output", Err: err}
	}
	Analyze(vr, raw, plan.Profile.Spec.Fabric)
	vr.Finished = r.Now()
	vr.Seconds = vr.Finished.Sub(start).Seconds()
	// The window is the variant's pods' run, by the cluster's clock: from its first pod's start
	// (not its submission: a job whose pods ended before ours ran did not share the link) to
	// the job's completion (not the end of reading its logs).
	from, to := start, vr.Finished
	for _, p := range snap.Pods {
		if !p.Started.IsZero() && (from == start || p.Started.Before(from)) {
			from = p.Started
		}
	}
	if !snap.Finished.IsZero() {
		to = snap.Finished
	}
	r.checkShared(ctx, plan, vr, be.PodSelector(name), from, to)
	if snap.Phase == jobs.PhaseFailed {
		vr.Problems = append(vr.Problems, ProblemJobFailed+": the "+kind+" failed: "+snap.Message)
		vr.Valid = false
		e := event(EventFailed, "%s %s FAILED; the launcher's last lines:", kind, name)
		e.Lines = LastLines(raw, 15)
		r.emit(e)
	}
	cleanup()
	status := "OK"
	if !vr.Valid {
		status = "INVALID: " + strings.Join(vr.Problems, "; ")
	}
	peak := ""
	if vr.Perf != nil {
		best := -1.0
		for _, row := range vr.Perf.Rows {
			if row.OOP != nil && row.OOP.Busbw > best {
				best = row.OOP.Busbw
				peak = fmt.Sprintf(", peak busbw %.2f GB/s at %s", best, SizeLabel(row.Size))
			}
		}
	}
	r.emit(event(EventDone, "%s in %s on %s%s, transport %s: %s", snap.Phase, (time.Duration(vr.Seconds * float64(time.Second))).Round(time.Second),
		dash(strings.Join(vr.Nodes, ",")), peak, dash(vr.Transport), status))
	return vr, nil
}

// LauncherOutput reads the launcher pod's whole log (bounded).
func LauncherOutput(ctx context.Context, cl *jobs.Cluster, be jobs.Backend, job string) ([]byte, error) {
	pods, err := be.Pods(ctx, cl, job)
	if err != nil {
		return nil, err
	}
	if p, ok := jobs.CurrentLauncher(pods); ok {
		rc, err := be.Logs(ctx, cl, p.Name, -1, false)
		if err != nil {
			return nil, err
		}
		defer rc.Close()
		return io.ReadAll(io.LimitReader(rc, 256<<20))
	}
	return nil, fmt.Errorf("%s %s has no launcher pod left to read (was it cleaned up?)", be.Kind(), job)
}

// WorkerNodes returns the sorted nodes of a job's worker pods.
func WorkerNodes(pods []jobs.PodInfo) []string {
	var out []string
	for _, p := range pods {
		if (p.Replica == "worker" || p.Replica == jobs.TrainerNodeJob) && p.Node != "" {
			out = append(out, p.Node)
		}
	}
	sort.Strings(out)
	return out
}

// SameSet reports whether a and b hold the same names, in any order.
func SameSet(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	m := map[string]int{}
	for _, s := range a {
		m[s]++
	}
	for _, s := range b {
		m[s]--
	}
	for _, n := range m {
		if n != 0 {
			return false
		}
	}
	return true
}

// LastLines returns the last n lines of raw.
func LastLines(raw []byte, n int) []string {
	lines := strings.Split(strings.TrimRight(string(raw), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return lines
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
