package bench

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/ain-hpc/ain/pkg/profile"
	"github.com/ain-hpc/ain/pkg/recipe"
)

func TestPlanSets(t *testing.T) {
	auto := []Variant{{Name: "auto", Env: map[string]string{}}}
	sweep, err := Variants(PlanOptions{Algos: []string{"ring", "tree"}})
	if err != nil {
		t.Fatal(err)
	}
	got, err := PlanSets(auto, Shape{Nodes: 2, GPUsPerNode: 8, MinBytes: "1M", MaxBytes: "1GiB", StepFactor: 4, Iters: 5}, []string{"nccl.env.NCCL_ALGO=Tree"})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"runPolicy.cleanPodPolicy=Running", "nodes=2", "gpusPerNode=8", "ncclTests.minBytes=1M", "ncclTests.maxBytes=1GiB",
		"ncclTests.stepFactor=4", "ncclTests.iters=5", "nccl.env.NCCL_ALGO=Tree"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("sets\n got %q\nwant %q", got, want)
	}
	// The user's cleanPodPolicy replaces the bench's.
	got, _ = PlanSets(auto, Shape{}, []string{"runPolicy.cleanPodPolicy=None"})
	if !reflect.DeepEqual(got, []string{"runPolicy.cleanPodPolicy=None"}) {
		t.Errorf("user cleanPodPolicy: %q", got)
	}
	// A --set of what the sweep varies conflicts, naming both.
	_, err = PlanSets(sweep, Shape{}, []string{" nccl.env.NCCL_ALGO =Tree"})
	var sc *SetConflictError
	if !errors.As(err, &sc) || sc.Flag != "--algo" || sc.Var != "NCCL_ALGO" {
		t.Errorf("conflict: %v", err)
	}
	// Sizes use the recipe's grammar and blame the flag.
	for _, c := range []struct {
		s    Shape
		flag string
	}{{Shape{MaxBytes: "1T"}, "--max"}, {Shape{MinBytes: "0"}, "--min"}, {Shape{MinBytes: "eight"}, "--min"}} {
		_, err := PlanSets(auto, c.s, nil)
		var fe *FlagError
		if !errors.As(err, &fe) || fe.Flag != c.flag || !strings.HasPrefix(err.Error(), c.flag+": ") {
			t.Errorf("%+v: %v", c.s, err)
		}
	}
}

func TestJobName(t *testing.T) {
	now := time.Date(2026, 12, 3, 9, 8, 7, 0, time.UTC)
	if got := JobName("allreduce", "ring", now, "k3x9", 0); got != "allreduce-ring-1203090807-k3x9" {
		t.Errorf("got %s", got)
	}
	long := strings.Repeat("a", 60)
	if got := JobName(long, "tree-ll128", now, "k3x9", 0); len(got) > 48 || !strings.HasSuffix(got, "-tree-ll128-1203090807-k3x9") {
		t.Errorf("long name %s (%d)", got, len(got))
	}
	// An MPI TrainJob allows 44 (the JobSet's pod names are longer than the job's).
	if got := JobName(long, "tree-ll128", now, "k3x9", 44); len(got) > 44 || !strings.HasSuffix(got, "-tree-ll128-1203090807-k3x9") {
		t.Errorf("long name on a TrainJob %s (%d)", got, len(got))
	}
	// Two benches in the same second get different names (issue 19: they shared one job).
	seen := map[string]bool{}
	for range 200 {
		id := NewRunID()
		if len(id) != 4 || strings.Trim(id, "abcdefghijklmnopqrstuvwxyz0123456789") != "" {
			t.Fatalf("run id %q", id)
		}
		seen[JobName("allreduce", "ring", now, id, 0)] = true
	}
	if len(seen) < 190 {
		t.Errorf("200 runs in one second got only %d distinct job names", len(seen))
	}
}

// loader loads the built-in recipe ref with the given sets and records each call's sets.
func loader(ref string, calls *[][]string) LoadFunc {
	return func(sets []string) (*recipe.Recipe, *profile.Profile, error) {
		*calls = append(*calls, sets)
		r, err := recipe.Load(ref, sets)
		return r, profile.Default(), err
	}
}

func TestNewPlan(t *testing.T) {
	var calls [][]string
	plan, err := NewPlan(PlanInput{Algo: "ring,tree", Shape: Shape{Nodes: 2}, Sets: []string{"nccl.env.NCCL_PROTO=Simple"}, Run: "k3x9"}, loader("allreduce", &calls))
	if err != nil {
		t.Fatal(err)
	}
	if len(plan.Variants) != 2 || len(plan.Recipes) != 2 || plan.Profile == nil || plan.Run != "k3x9" || plan.Name != "allreduce" {
		t.Fatalf("plan %+v", plan)
	}
	// Each variant's recipe is loaded with the merged sets, then the variant's own.
	want := []string{"runPolicy.cleanPodPolicy=Running", "nodes=2", "nccl.env.NCCL_PROTO=Simple", "nccl.env.NCCL_ALGO=Tree"}
	if !reflect.DeepEqual(calls[1], want) {
		t.Errorf("tree's sets\n got %q\nwant %q", calls[1], want)
	}
	if got := plan.Recipes[1].Workload().NCCL.Env["NCCL_ALGO"]; got != "Tree" {
		t.Errorf("tree's recipe NCCL_ALGO %q", got)
	}
	// A variable the --set fixes belongs to every variant (the report reads it from there).
	for _, v := range plan.Variants {
		if v.Env["NCCL_PROTO"] != "Simple" {
			t.Errorf("variant %s env %v: NCCL_PROTO from --set missing", v.Name, v.Env)
		}
	}
	if got := plan.Recipes[1].Workload().Nodes; got != 2 {
		t.Errorf("nodes %d", got)
	}
	// --name wins; no run ID given: a fresh one.
	plan, err = NewPlan(PlanInput{Name: "mine"}, loader("allreduce", &calls))
	if err != nil || plan.Name != "mine" || len(plan.Run) != 4 || len(plan.Variants) != 1 || plan.Variants[0].Name != AlgoAuto {
		t.Fatalf("plan %+v, %v", plan, err)
	}
}

func TestNewPlanErrors(t *testing.T) {
	var calls [][]string
	loadErr := errors.New("no such recipe")
	for _, c := range []struct {
		name string
		in   PlanInput
		load LoadFunc
		want string
	}{
		{"qps", PlanInput{QPs: "0"}, loader("allreduce", &calls), "--qps: "},
		{"algo", PlanInput{Algo: "rings"}, loader("allreduce", &calls), "--algo: "},
		{"max", PlanInput{Shape: Shape{MaxBytes: "1T"}}, loader("allreduce", &calls), "--max: "},
		{"conflict", PlanInput{Algo: "ring", Sets: []string{"nccl.env.NCCL_ALGO=Tree"}}, loader("allreduce", &calls), "--set nccl.env.NCCL_ALGO=Tree and --algo"},
		{"not allreduce", PlanInput{}, loader("qlora", &calls), "recipe qlora is not an nccl-tests all_reduce_perf MPIJob"},
		{"load", PlanInput{}, func([]string) (*recipe.Recipe, *profile.Profile, error) { return nil, nil, loadErr }, "no such recipe"},
	} {
		calls = nil
		_, err := NewPlan(c.in, c.load)
		if err == nil || !strings.HasPrefix(err.Error(), c.want) {
			t.Errorf("%s: got %v, want %q...", c.name, err, c.want)
		}
		// Flag problems are found before any recipe is loaded.
		if c.name != "not allreduce" && len(calls) != 0 {
			t.Errorf("%s: loaded %d recipe(s) before failing", c.name, len(calls))
		}
	}
	if _, err := NewPlan(PlanInput{}, func([]string) (*recipe.Recipe, *profile.Profile, error) { return nil, nil, loadErr }); !errors.Is(err, loadErr) {
		t.Errorf("load error not returned unchanged: %v", err)
	}
	var na *NotAllReduceError
	if _, err := NewPlan(PlanInput{}, loader("qlora", &calls)); !errors.As(err, &na) || na.Recipe != "qlora" {
		t.Errorf("not allreduce: %v", err)
	}
}
