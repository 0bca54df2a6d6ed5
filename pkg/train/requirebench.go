package train

import (
	"fmt"
	"time"

	"github.com/ain-hpc/ain/pkg/bench"
	"github.com/ain-hpc/ain/pkg/next"
	"github.com/ain-hpc/ain/pkg/profile"
	"github.com/ain-hpc/ain/pkg/recipe"
)

// BenchRequirement is a job's own demand for a passing bench (--require-bench): the folder of
// saved benches and their largest age. Empty Dir falls back to the profile's
// spec.requireBench, whose age applies unless MaxAgeSet.
type BenchRequirement struct {
	Dir       string
	MaxAge    time.Duration
	MaxAgeSet bool
}

// RequiredBench finds the passing bench that job r must run on (the course's "validate the
// nodes first"): the newest allreduce bench under the requirement's folder, else the
// profile's spec.requireBench; nil when neither asks for one. The job then runs on the nodes
// it measured (Options.Validated).
func RequiredBench(req BenchRequirement, r *recipe.Recipe, p *profile.Profile, now time.Time) (*bench.Validation, error) {
	dir, maxAge, from := req.Dir, req.MaxAge, "--require-bench"
	if rb := p.Spec.RequireBench; dir == "" && rb != nil {
		dir, from = rb.Results, "the profile's spec.requireBench"
		if !req.MaxAgeSet {
			maxAge = rb.BenchMaxAge()
		}
	}
	if dir == "" {
		return nil, nil
	}
	w := r.Workload()
	v, err := bench.Validate(dir, now, maxAge, p.Spec.Fabric, w.Nodes, w.GPUsPerNode)
	if err != nil {
		return nil, &BenchRequiredError{From: from, Dir: dir, Nodes: w.Nodes, GPUsPerNode: w.GPUsPerNode, Fabric: p.Spec.Fabric, Err: err}
	}
	return v, nil
}

// BenchRequiredError says no passing bench validates the job's nodes. From says who asked for
// it (the flag or the profile), the other fields the bench that would.
type BenchRequiredError struct {
	From, Dir          string
	Nodes, GPUsPerNode int
	Fabric             string
	Err                error
}

func (e *BenchRequiredError) Error() string { return e.From + ": " + e.Err.Error() }
func (e *BenchRequiredError) Unwrap() error { return e.Err }

// Hint names the bench that would validate the nodes.
func (e *BenchRequiredError) Hint(cmd func(next.Command) string) string {
	return fmt.Sprintf("validate the nodes first: %s (a new NAME each run), or drop %s",
		cmd(next.Command(fmt.Sprintf("bench allreduce --nodes %d --gpus-per-node %d --fabric %s --out %s/NAME", e.Nodes, e.GPUsPerNode, e.Fabric, e.Dir))), e.From)
}
