package preflight

import (
	"context"
	"fmt"
	"time"

	"github.com/ain-hpc/ain/pkg/jobs"
)

// Gate is the preflight that `ain train` and `ain bench` run before submitting: a recent
// result from Cache is reused (a passing one, see Cache.Load); otherwise the checks run and
// their result is cached. It returns the result either way, and a *FailedError when a check
// FAILed, so the caller can print the result and map the failure to its exit code.
type Gate struct {
	Cache Cache
}

// GateResult is what the gate found.
type GateResult struct {
	*Result
	// Cached is set when the result came from the cache; Age is how old it is.
	Cached bool
	Age    time.Duration
	// Rechecked is set when a cached result's job-controller checks were run again now.
	Rechecked bool
}

// FailedError says the preflight found at least one FAIL.
type FailedError struct{ Result *Result }

func (e *FailedError) Error() string { return "preflight failed: " + e.Result.Summary() }

// Run runs the gate for o (o.Progress reports the checks as they run).
func (g Gate) Run(ctx context.Context, o Options) (*GateResult, error) {
	key := Key(o)
	if res, age, ok := g.Cache.Load(key); ok {
		res, rechecked := recheckOperators(ctx, o, res)
		if !res.Failed() {
			return &GateResult{Result: res, Cached: true, Age: age, Rechecked: rechecked}, nil
		}
		if err := g.Cache.Save(key, res); err != nil && o.Progress != nil { // removes the entry
			o.Progress(fmt.Sprintf("the cached result could not be removed: %v", err))
		}
		return &GateResult{Result: res, Cached: true, Age: age, Rechecked: rechecked}, &FailedError{Result: res}
	}
	res, err := Run(ctx, o)
	if err != nil {
		return nil, err
	}
	if err := g.Cache.Save(key, res); err != nil && o.Progress != nil {
		o.Progress(fmt.Sprintf("the result could not be cached: %v", err))
	}
	if res.Failed() {
		return &GateResult{Result: res}, &FailedError{Result: res}
	}
	return &GateResult{Result: res}, nil
}

// recheckOperators runs the job-controller checks again for a cached result and puts their
// answers in place of the cached ones. A controller that stopped after the cached run (crashed,
// scaled to zero, its webhook gone) is what a cached PASS most often hides, and the job it
// would then leave unreconciled says nothing of why; these checks cost a discovery and a
// webhook dry-run and a Lease read per API, against the probe pods' minutes the cache saves.
// Without clients (or when discovery fails: the run's own API errors will say it) the cached
// result stands.
func recheckOperators(ctx context.Context, o Options, cached *Result) (*Result, bool) {
	if o.Kube == nil {
		return cached, false
	}
	o.defaults()
	o.served, o.discoverErr = jobs.Discover(o.Kube.Discovery())
	if o.discoverErr != nil {
		return cached, false
	}
	o.Progress("checking that the job controllers run (the rest of the result is cached)")
	fresh := checkOperators(ctx, o)
	out := *cached
	out.Checks = make([]Check, 0, len(cached.Checks)+len(fresh))
	for _, c := range cached.Checks {
		if c.Name != CheckOperator {
			out.Checks = append(out.Checks, c)
			continue
		}
		out.Checks = append(out.Checks, fresh...) // where the cached ones stood
		fresh = nil
	}
	out.Checks = append(out.Checks, fresh...) // the cached run had none
	return &out, true
}
