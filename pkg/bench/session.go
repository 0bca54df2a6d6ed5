package bench

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/ain-hpc/ain/pkg/jobs"
	"github.com/ain-hpc/ain/pkg/preflight"
)

// Session is one `bench allreduce` from its result folder to its saved files: the folder, the
// readiness gate, the variants (Runner) with the RDMA counters read before and after each, the
// probe of the ports' rate that busbw is judged against, and the saved result. It prints
// nothing: its own steps are lines given to Say, the variants' are the Runner's Events.
type Session struct {
	// Runner runs the variants; the session sets its Counters. Runner.Now is the session's clock
	// and Runner.ShownNamespace the result's namespace.
	Runner *Runner
	// Probe are the options of the probe pods that read the counters and the ports' rate.
	Probe preflight.Options
	// Gate runs the readiness preflight before the first variant; its error is returned as it
	// is. nil: no gate.
	Gate func(ctx context.Context) error
	// Say receives the session's own progress lines; nil: none.
	Say func(string)
}

// SessionOptions are one session's inputs.
type SessionOptions struct {
	Plan *Plan
	// Out is the result folder (ResultDir; empty: a new one under DefaultDir).
	Out string
	// Timeout bounds the whole bench (0: none); the running job is deleted when it passes.
	Timeout time.Duration
	// NoCounters skips the counters before and after each variant.
	NoCounters bool
	// Gangs are the gang schedulers the cluster serves: with the mpi-operator's PodGroup API
	// among them the jobs are built with gang scheduling (jobs.OperatorGang).
	Gangs []string
}

// Report is what a session leaves: its folder and, when a variant ran or the bench was
// interrupted, the result (summarized) and the files it was saved to.
type Report struct {
	Dir string
	// Result is nil when nothing ran (the first apply was refused, say): the folder was removed
	// and there is nothing to report but the error.
	Result  *Result
	Files   []string
	SaveErr error // the result is whole (to print) whatever saving it said
}

// OutDirError says the result folder could not be made.
type OutDirError struct{ Err error }

func (e *OutDirError) Error() string { return e.Err.Error() }
func (e *OutDirError) Unwrap() error { return e.Err }

// PreflightError is the Gate's error: the cluster is not ready (or the gate could not tell).
type PreflightError struct{ Err error }

func (e *PreflightError) Error() string { return e.Err.Error() }
func (e *PreflightError) Unwrap() error { return e.Err }

func (s *Session) say(format string, args ...any) {
	if s.Say != nil {
		s.Say(fmt.Sprintf(format, args...))
	}
}

// Run runs the session. parent's end is an interruption (the result is kept, marked
// interrupted); the Timeout's is a TimeoutError. Errors: *OutDirError, *PreflightError, and the
// Runner's (returned with the report of what ran before them).
func (s *Session) Run(parent context.Context, o SessionOptions) (*Report, error) {
	plan, r := o.Plan, s.Runner
	if jobs.OperatorGang(o.Gangs) {
		r.GangSchedulers = o.Gangs
	}
	if note := jobs.GangAssumption(r.Backend.API(), plan.Recipes[0], o.Gangs); note != "" {
		s.say("%s", note)
	}
	ctx := parent
	if o.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(parent, o.Timeout)
		defer cancel()
	}
	start := r.Now()
	dir, err := ResultDir(o.Out, start, plan.Name)
	if err != nil {
		return nil, &OutDirError{Err: err}
	}
	rep := &Report{Dir: dir}
	// The preflight checks the cluster for the first variant's shape; it is the same for all.
	if s.Gate != nil {
		if err := s.Gate(ctx); err != nil {
			_ = os.Remove(dir) // only if still empty
			return rep, &PreflightError{Err: err}
		}
	}
	p, r0 := plan.Profile, plan.Recipes[0]
	res := plan.NewResult(r.ShownNamespace, start)
	s.sayStart(plan, dir)
	if p.RDMA() && !o.NoCounters && r0.Workload().Nodes > 1 {
		r.Counters = CounterReader(s.Probe, func(l string) { s.say("%s", l) })
	}
	pinned, runErr := r.Run(parent, ctx, plan, res)
	if fe, ok := errors.AsType[*VariantFailedError](runErr); ok {
		fe.Log = dir + "/" + fe.Variant + ".log"
	}
	if runErr != nil && len(res.Variants) == 0 && !res.Interrupted {
		// Nothing ran: no report and no result.json, whose "No variant ran" would only hide the error.
		_ = os.Remove(dir) // only if still empty
		return rep, runErr
	}
	if p.RDMA() && len(pinned) > 0 && parent.Err() == nil {
		// "% of line rate" against what the ports on these nodes really run at, not only the
		// profile's lineRate (a 400Gb profile over 200 Gb/s ports called a healthy fabric broken).
		s.say("probing the ports of %s for their rate: busbw is judged against it", strings.Join(pinned, ","))
		if res.ProbeLineRate(parent, s.Probe.ProbeOptions(), pinned, p.Spec.HCAs) != nil && !res.Interrupted {
			res.Interrupted = true
			res.InterruptedNote = "after the last variant, while probing the ports' rate"
		}
	} else if parent.Err() != nil && runErr == nil && !res.Interrupted {
		res.Interrupted = true
		res.InterruptedNote = "after the last variant"
	}
	rep.Result = res
	rep.Files, rep.SaveErr = res.Finish(r.Now(), dir)
	return rep, runErr
}

// sayStart says what the bench runs, where, and where its results go.
func (s *Session) sayStart(plan *Plan, dir string) {
	p, r0 := plan.Profile, plan.Recipes[0]
	w, t := r0.Workload(), r0.MPI.NCCLTests
	names := make([]string, len(plan.Variants))
	for i, v := range plan.Variants {
		names[i] = v.Name
	}
	s.say("bench %s: %d variant(s) (%s) of all_reduce_perf -b %s -e %s -f %d on %d node(s) x %d GPU, fabric %s, line rate %s = %.4g GB/s per NIC",
		plan.Name, len(plan.Variants), strings.Join(names, ", "), t.MinBytes, t.MaxBytes, t.StepFactor, w.Nodes, w.GPUsPerNode, p.Spec.Fabric, p.Spec.LineRate, p.LineRateGBps())
	if len(plan.Variants) > 1 {
		s.say("the variants run one after another on the same nodes: each %s is deleted once its output is read, the next is pinned to the first one's nodes", s.Runner.Backend.Kind())
	}
	s.say("results: %s", dir)
}
