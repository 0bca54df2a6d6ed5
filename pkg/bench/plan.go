package bench

import (
	"crypto/rand"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/ain-hpc/ain/pkg/recipe"
)

// Shape is what `ain bench allreduce`'s shape flags ask for (zero or empty: the recipe's).
type Shape struct {
	Nodes, GPUsPerNode int
	MinBytes, MaxBytes string // nccl-tests -b/-e, recipe.ParseBytes grammar
	StepFactor, Iters  int
}

// FlagError says the value of a command-line flag is wrong; Flag names it (--max).
type FlagError struct {
	Flag string
	Err  error
}

func (e *FlagError) Error() string { return e.Flag + ": " + e.Err.Error() }
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
func JobName(name, variant string, now time.Time, run string) string {
	suffix := "-" + variant + "-" + now.UTC().Format("0102150405")
	if run != "" {
		suffix += "-" + run
	}
	if len(name)+len(suffix) > recipe.MaxNameLen {
		name = strings.TrimRight(name[:max(recipe.MaxNameLen-len(suffix), 1)], "-")
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
