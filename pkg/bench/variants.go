// Package bench runs nccl-tests all_reduce_perf as a series of MPIJob variants (NCCL_ALGO,
// NCCL_PROTO, NCCL_IB_QPS_PER_CONNECTION, the TCP baseline) and turns their output into a
// verdict: per-size tables with a column per variant, peak bus bandwidth against the profile's
// line rate, the cost model's prediction beside the measurement, the measured and predicted
// ring/tree crossover, and a paragraph in the course's words (chapters 10.5-10.6).
//
// Plan (NewPlan) resolves the sweep flags and --set into variants and their recipes, with no
// cluster; Runner runs a Plan's jobs through a pkg/jobs Backend, with an injected clock, progress
// events and typed errors (the command prints the events and maps the errors to exit codes).
// The rest is pure: it analyses the launcher output of each variant (nccl-tests table,
// out-of-bounds check, NCCL transport, TUNING choices), summarises, compares saved runs, writes
// the result files (JSON with the raw output, CSV) and draws the busbw plot with gonum/plot.
package bench

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
)

// Variant is one MPIJob of a benchmark: a short name and the NCCL variables it sets on top of
// the recipe's and the profile's.
type Variant struct {
	Name string            `json:"name"`
	Env  map[string]string `json:"env"`
}

// Algo values of PlanOptions.Algos.
const (
	AlgoAuto = "auto" // NCCL's own choice per size (no NCCL_ALGO)
	AlgoRing = "ring"
	AlgoTree = "tree"
)

// PlanOptions are the sweep dimensions; each empty dimension contributes one default value.
type PlanOptions struct {
	// Algos: auto, ring, tree; "all" expands to all three.
	Algos []string
	// Protos: simple, ll, ll128 (NCCL_PROTO); empty leaves the protocol to NCCL.
	Protos []string
	// QPs: NCCL_IB_QPS_PER_CONNECTION values (1..128); empty leaves NCCL's default.
	QPs []int
}

var algoEnv = map[string]string{AlgoRing: "Ring", AlgoTree: "Tree"}
var protoEnv = map[string]string{"simple": "Simple", "ll": "LL", "ll128": "LL128"}

// ParseList splits a comma-separated flag value, trimming and lower-casing each item.
func ParseList(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.ToLower(strings.TrimSpace(f)); f != "" {
			out = append(out, f)
		}
	}
	return out
}

// ParseQPs reads "1,2,4,8".
func ParseQPs(s string) ([]int, error) {
	var out []int
	for _, f := range ParseList(s) {
		n, err := strconv.Atoi(f)
		if err != nil || n < 1 || n > 128 {
			return nil, fmt.Errorf("--qps: %q is not a number of queue pairs from 1 to 128 (NCCL_IB_QPS_PER_CONNECTION)", f)
		}
		out = append(out, n)
	}
	return out, nil
}

// Variants expands the sweep into the MPIJobs to run, in order: algorithms outermost, then
// protocols, then QP counts. Names are the non-default parts joined by '-' (ring, tree-ll128,
// qps4, ring-simple-qps2); a plan of one default variant is named "auto".
func Variants(o PlanOptions) ([]Variant, error) {
	algos := []string{}
	for _, a := range o.Algos {
		switch a {
		case "all":
			algos = append(algos, AlgoAuto, AlgoRing, AlgoTree)
		case AlgoAuto, AlgoRing, AlgoTree:
			algos = append(algos, a)
		default:
			return nil, fmt.Errorf("--algo: %q is not auto, ring, tree or all (nccl-tests has no algorithm flag: ain sets NCCL_ALGO)", a)
		}
	}
	for _, p := range o.Protos {
		if _, ok := protoEnv[p]; !ok {
			return nil, fmt.Errorf("--proto: %q is not simple, ll or ll128 (NCCL_PROTO)", p)
		}
	}
	for _, q := range o.QPs {
		if q < 1 || q > 128 {
			return nil, fmt.Errorf("--qps: %d is not from 1 to 128 (NCCL_IB_QPS_PER_CONNECTION)", q)
		}
	}
	algos = dedup(algos)
	protos := dedup(o.Protos)
	var qps []string
	for _, q := range o.QPs {
		qps = append(qps, strconv.Itoa(q))
	}
	qps = dedup(qps)
	if len(algos) == 0 {
		algos = []string{""}
	}
	if len(protos) == 0 {
		protos = []string{""}
	}
	if len(qps) == 0 {
		qps = []string{""}
	}
	var out []Variant
	for _, a := range algos {
		for _, p := range protos {
			for _, q := range qps {
				v := Variant{Env: map[string]string{}}
				var parts []string
				if a == AlgoRing || a == AlgoTree || (a == AlgoAuto && len(algos) > 1) {
					parts = append(parts, a)
				}
				if e := algoEnv[a]; e != "" {
					v.Env["NCCL_ALGO"] = e
				}
				if p != "" {
					parts = append(parts, p)
					v.Env["NCCL_PROTO"] = protoEnv[p]
				}
				if q != "" {
					parts = append(parts, "qps"+q)
					v.Env["NCCL_IB_QPS_PER_CONNECTION"] = q
				}
				v.Name = strings.Join(parts, "-")
				if v.Name == "" {
					v.Name = AlgoAuto
				}
				out = append(out, v)
			}
		}
	}
	if len(out) > 32 {
		return nil, fmt.Errorf("%d variants: at most 32 MPIJobs per bench (they run one after another); narrow --algo/--proto/--qps", len(out))
	}
	return out, nil
}

// Sets returns the recipe overrides (--set) that give a variant its NCCL environment.
func (v Variant) Sets() []string {
	var out []string
	for _, k := range slices.Sorted(maps.Keys(v.Env)) {
		out = append(out, "nccl.env."+k+"="+v.Env[k])
	}
	return out
}

// EnvText is the variant's NCCL environment as the report shows it ("NCCL_ALGO=Ring
// NCCL_PROTO=LL"); "" when NCCL makes its own choices.
func (v Variant) EnvText() string {
	return strings.ReplaceAll(strings.Join(v.Sets(), " "), "nccl.env.", "")
}

// Algo is the algorithm the variant forces ("ring", "tree"), or "" when NCCL chooses.
func (v Variant) Algo() string {
	switch strings.ToLower(v.Env["NCCL_ALGO"]) {
	case "ring":
		return AlgoRing
	case "tree":
		return AlgoTree
	}
	return ""
}

func dedup(in []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, s := range in {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return out
}
