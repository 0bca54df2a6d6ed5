package bench

import (
	"crypto/rand"
	"fmt"
	"path"
	"strconv"
	"strings"
	"time"

	"github.com/ain-hpc/ain/pkg/jobs"
	"github.com/ain-hpc/ain/pkg/profile"
	"github.com/ain-hpc/ain/pkg/recipe"
)

// PlanInput is what `ain bench allreduce`'s flags ask for, before anything is loaded.
type PlanInput struct {
	Algo, Proto, QPs string // the sweep flags, comma-separated (ParseList, ParseQPs)
	Shape            Shape
	Sets             []string // the user's --set values
	Name             string   // the bench name; empty: the recipe's metadata.name
	Run              string   // the run ID in every job name; empty: a fresh NewRunID
}

// Plan is a bench resolved before anything is submitted: its variants in order and, for each,
// the recipe loaded with the variant's overrides.
type Plan struct {
	Variants []Variant
	Recipes  []*recipe.Recipe // one per variant
	Profile  *profile.Profile
	Name     string
	Run      string
}

// LoadFunc loads the recipe (and the profile) with sets as extra --set values. Its errors are
// returned by NewPlan unchanged, so the caller's loader decides how they are reported.
type LoadFunc func(sets []string) (*recipe.Recipe, *profile.Profile, error)

// NotAllReduceError says the recipe is not an nccl-tests all_reduce_perf MPIJob.
type NotAllReduceError struct{ Recipe string }

func (e *NotAllReduceError) Error() string {
	return fmt.Sprintf("recipe %s is not an nccl-tests all_reduce_perf MPIJob (kind MPIJob with ncclTests.binary .../all_reduce_perf)", e.Recipe)
}

// NewPlan expands the sweep flags into variants, merges the shape flags and the user's --set
// (PlanSets) and loads each variant's recipe with load. Besides load's errors it returns the
// sweep's and PlanSets' (each naming its flag) and a NotAllReduceError.
func NewPlan(in PlanInput, load LoadFunc) (*Plan, error) {
	qps, err := ParseQPs(in.QPs)
	if err != nil {
		return nil, err
	}
	variants, err := Variants(PlanOptions{Algos: ParseList(in.Algo), Protos: ParseList(in.Proto), QPs: qps})
	if err != nil {
		return nil, err
	}
	sets, err := PlanSets(variants, in.Shape, in.Sets)
	if err != nil {
		return nil, err
	}
	plan := &Plan{Variants: variants, Name: in.Name, Run: in.Run}
	for i, v := range variants {
		r, p, err := load(append(append([]string{}, sets...), v.Sets()...))
		if err != nil {
			return nil, err
		}
		if r.MPI == nil || r.MPI.NCCLTests == nil || !strings.HasPrefix(path.Base(r.MPI.NCCLTests.Binary), "all_reduce_perf") {
			return nil, &NotAllReduceError{Recipe: r.Metadata.Name}
		}
		// A variable the recipe or --set fixes belongs to the variant too (the report and the
		// model read the algorithm from it).
		for _, k := range []string{"NCCL_ALGO", "NCCL_PROTO", "NCCL_IB_QPS_PER_CONNECTION"} {
			if val := r.Workload().NCCL.Env[k]; val != "" && v.Env[k] == "" {
				plan.Variants[i].Env[k] = val
			}
		}
		plan.Recipes = append(plan.Recipes, r)
		plan.Profile = p
	}
	if plan.Run == "" {
		plan.Run = NewRunID()
	}
	if plan.Name == "" {
		plan.Name = plan.Recipes[0].Metadata.Name
	}
	return plan, nil
}

// Shape is what `ain bench allreduce`'s shape flags ask for (zero or empty: the recipe's).
type Shape struct {
	Nodes, GPUsPerNode int
	MinBytes, MaxBytes string // nccl-tests -b/-e, recipe.ParseBytes grammar
	StepFactor, Iters  int
}

// FlagError says the value of a command-line flag is wrong; Flag names it (--max), Value, when
// set, is the value quoted in the message.
type FlagError struct {
	Flag, Value string
	Err         error
}

func (e *FlagError) Error() string {
	if e.Value != "" {
		return e.Flag + " " + strconv.Quote(e.Value) + ": " + e.Err.Error()
	}
	return e.Flag + ": " + e.Err.Error()
}
func (e *FlagError) Unwrap() error { return e.Err }

// SetConflictError says a --set fixes an NCCL variable that a sweep flag varies.
type SetConflictError struct {
	Set, Flag, Var string
}

func (e *SetConflictError) Error() string {
	return fmt.Sprintf("--set %s and %s both set %s: use one", e.Set, e.Flag, e.Var)
}

// sweepFlags are the NCCL variables the sweep flags vary.
var sweepFlags = []struct{ flag, env string }{
	{"--algo", "NCCL_ALGO"}, {"--proto", "NCCL_PROTO"}, {"--qps", "NCCL_IB_QPS_PER_CONNECTION"},
}

// PlanSets merges the bench's own overrides, the shape flags and the user's --set values into
// the --set list every variant's recipe is loaded with (each variant then adds its own
// Variant.Sets). The user's --set come last, so they win over the flags; a --set that fixes
// what the sweep varies is a SetConflictError, a bad size a FlagError naming the flag.
func PlanSets(variants []Variant, s Shape, user []string) ([]string, error) {
	for _, set := range user {
		k, _, _ := strings.Cut(set, "=")
		for _, f := range sweepFlags {
			if strings.TrimSpace(k) != "nccl.env."+f.env {
				continue
			}
			for _, v := range variants {
				if v.Env[f.env] != "" {
					return nil, &SetConflictError{Set: set, Flag: f.flag, Var: f.env}
				}
			}
		}
	}
	var sets []string
	// Pods of a finished variant must free their GPUs for the next one even if ain is stopped.
	if !HasSet(user, "runPolicy.cleanPodPolicy") {
		sets = append(sets, "runPolicy.cleanPodPolicy=Running")
	}
	if s.Nodes != 0 {
		sets = append(sets, "nodes="+strconv.Itoa(s.Nodes))
	}
	if s.GPUsPerNode != 0 {
		sets = append(sets, "gpusPerNode="+strconv.Itoa(s.GPUsPerNode))
	}
	for _, f := range []struct{ flag, val, path string }{{"--min", s.MinBytes, "minBytes"}, {"--max", s.MaxBytes, "maxBytes"}} {
		if f.val == "" {
			continue
		}
		// The recipe's grammar, checked here so that the error names the flag, not the line of
		// the built-in recipe the value would be merged into.
		n, err := recipe.ParseBytes(f.val)
		if err == nil && n < 1 {
			err = fmt.Errorf("%q: a size must be at least 1 byte", f.val)
		}
		if err != nil {
			return nil, &FlagError{Flag: f.flag, Err: err}
		}
		sets = append(sets, "ncclTests."+f.path+"="+f.val)
	}
	if s.StepFactor != 0 {
		sets = append(sets, "ncclTests.stepFactor="+strconv.Itoa(s.StepFactor))
	}
	if s.Iters != 0 {
		sets = append(sets, "ncclTests.iters="+strconv.Itoa(s.Iters))
	}
	return append(sets, user...), nil
}

// HasSet reports whether one of sets (path=value) sets path.
func HasSet(sets []string, path string) bool {
	for _, s := range sets {
		if k, _, _ := strings.Cut(s, "="); strings.TrimSpace(k) == path {
			return true
		}
	}
	return false
}

// JobName names a variant's MPIJob: <name>-<variant>-<MMDDhhmmss>-<run>, within the recipe
// name limit. run (NewRunID, one per bench) keeps two benches started in the same second apart:
// with the time alone they shared job names, one job was reported as two results.
// maxLen is the longest name the job API allows for the recipe (jobs.MaxJobNameLen: 44 for an
// MPI TrainJob, whose JobSet derives longer pod names); 0 means recipe.MaxNameLen.
func JobName(name, variant string, now time.Time, run string, maxLen int) string {
	if maxLen <= 0 {
		maxLen = recipe.MaxNameLen
	}
	suffix := "-" + variant + "-" + now.UTC().Format("0102150405")
	if run != "" {
		suffix += "-" + run
	}
	if len(name)+len(suffix) > maxLen {
		name = strings.TrimRight(name[:max(maxLen-len(suffix), 1)], "-")
	}
	return strings.ToLower(name + suffix)
}

// NewRunID returns 4 random characters [a-z0-9] naming one bench run.
func NewRunID() string {
	const alphabet = "abcdefghijklmnopqrstuvwxyz0123456789"
	b := make([]byte, 4)
	_, _ = rand.Read(b) // crypto/rand.Read never fails on Linux (Go 1.24+: it panics rather than return an error)
	for i := range b {
		b[i] = alphabet[int(b[i])%len(alphabet)]
	}
	return string(b)
}

// NewResult is plan's result before any variant ran: the bench's setup (the first variant's
// recipe, which gives every variant's shape, and the profile's fabric), started at start.
// Namespace is the one the jobs run in, as shown.
func (plan *Plan) NewResult(namespace string, start time.Time) *Result {
	r0, p := plan.Recipes[0], plan.Profile
	w := r0.Workload()
	return &Result{
		Name: plan.Name, Recipe: r0.Metadata.Name, Namespace: namespace, Started: start,
		Fabric: p.Spec.Fabric, LineRate: p.Spec.LineRate, LineRateGBps: p.LineRateGBps(), NICsPerNode: len(p.Spec.HCAs),
		Nodes: w.Nodes, GPUsPerNode: w.GPUsPerNode, Command: jobs.MPIProgram(r0.MPI), SameNodes: true,
	}
}
