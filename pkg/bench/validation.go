package bench

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
)

// Validation is a passing allreduce bench that a training job relies on (course 12.1.5:
// validate the nodes' fabric with nccl-tests before training on them): the job is pinned to
// the nodes it measured.
type Validation struct {
	Path   string
	Result *Result
	Nodes  []string // the nodes the bench ran on
	Age    time.Duration
}

// GateReason says why no bench validates a job.
type GateReason string

// The reasons.
const (
	GateNoResult GateReason = "no-result" // nothing saved under the folder
	GateInvalid  GateReason = "invalid"   // the last bench is INVALID
	GateStale    GateReason = "stale"     // older than the bound
	GateFabric   GateReason = "fabric"    // measured another fabric than the job's
	GateTooSmall GateReason = "nodes"     // fewer nodes than the job needs
	GateGPUs     GateReason = "gpus"      // fewer GPUs (so NICs) per node than the job uses
	GateSlow     GateReason = "slow"      // measured, but below a healthy fabric's busbw
)

// GateError says why the last bench under Dir does not validate the job.
type GateError struct {
	Reason GateReason
	Dir    string
	Path   string // the result that was judged ("" with GateNoResult)
	Detail string
}

func (e *GateError) Error() string {
	if e.Path == "" {
		return fmt.Sprintf("no allreduce bench under %s validates the nodes: %s", e.Dir, e.Detail)
	}
	return fmt.Sprintf("the last allreduce bench (%s) does not validate the job: %s", e.Path, e.Detail)
}

// Validate reads the newest allreduce bench saved under dir, whatever its outcome (a newer failed
// bench is not skipped for an older pass), and says whether it validates a job of nodes nodes x
// gpusPerNode GPUs on fabric: valid, healthy (busbw at HealthyPct of line rate or more), at
// most maxAge old at now (0: any age), on the same fabric, on at least as many nodes and GPUs
// per node (one GPU per node tests one NIC of a rail-optimised node). The job then runs on
// nodes it measured (PinWorkers).
func Validate(dir string, now time.Time, maxAge time.Duration, fabric string, nodes, gpusPerNode int) (*Validation, error) {
	res, path, err := newestAllreduce(dir, func(*Result) bool { return true })
	if errors.Is(err, ErrNoAllreduce) {
		return nil, &GateError{Reason: GateNoResult, Dir: dir, Detail: err.Error()}
	}
	if err != nil {
		return nil, &GateError{Reason: GateNoResult, Dir: dir, Detail: err.Error()}
	}
	v := &Validation{Path: path, Result: res, Age: now.Sub(res.Finished)}
	fail := func(r GateReason, format string, args ...any) (*Validation, error) {
		return nil, &GateError{Reason: r, Dir: dir, Path: path, Detail: fmt.Sprintf(format, args...)}
	}
	if !res.Valid {
		why := ""
		if len(res.Problems) > 0 {
			why = " (" + strings.Join(res.Problems, "; ") + ")"
		}
		return fail(GateInvalid, "it is INVALID%s", why)
	}
	if _, _, size, pct, ok := res.Judged(); !ok || pct == nil || *pct < HealthyPct {
		got := "no measurement to judge"
		if ok && pct != nil {
			got = fmt.Sprintf("%.0f%% of line rate at %s", *pct, SizeLabel(size))
		}
		return fail(GateSlow, "its busbw is not a healthy fabric's (%s; at least %.0f%% needed)", got, HealthyPct)
	}
	if maxAge > 0 && v.Age > maxAge {
		return fail(GateStale, "it finished %s ago, %s, longer ago than %s allows", v.Age.Round(time.Minute), res.Finished.UTC().Format(time.RFC3339), maxAge)
	}
	if res.Fabric != fabric {
		return fail(GateFabric, "it measured fabric %s, the job runs on %s", res.Fabric, fabric)
	}
	for _, vr := range res.Variants {
		v.Nodes = append(v.Nodes, vr.Nodes...)
	}
	slices.Sort(v.Nodes)
	v.Nodes = slices.Compact(v.Nodes)
	if len(v.Nodes) < nodes {
		return fail(GateTooSmall, "it measured %d node(s) (%s), the job needs %d", len(v.Nodes), strings.Join(v.Nodes, ","), nodes)
	}
	if res.GPUsPerNode < gpusPerNode {
		return fail(GateGPUs, "it ran %d GPU(s) per node, the job uses %d: NICs of those nodes it did not test would carry the job's traffic", res.GPUsPerNode, gpusPerNode)
	}
	return v, nil
}
