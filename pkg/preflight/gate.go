package preflight

import (
	"context"
	"fmt"
	"time"
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
}

// FailedError says the preflight found at least one FAIL.
type FailedError struct{ Result *Result }

func (e *FailedError) Error() string { return "preflight failed: " + e.Result.Summary() }

// Run runs the gate for o (o.Progress reports the checks as they run).
func (g Gate) Run(ctx context.Context, o Options) (*GateResult, error) {
	key := Key(o)
	if res, age, ok := g.Cache.Load(key); ok {
		return &GateResult{Result: res, Cached: true, Age: age}, nil
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
