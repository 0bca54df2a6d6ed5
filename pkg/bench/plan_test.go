package bench

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"
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
	if got := JobName("allreduce", "ring", now, "k3x9"); got != "allreduce-ring-1203090807-k3x9" {
		t.Errorf("got %s", got)
	}
	long := strings.Repeat("a", 60)
	if got := JobName(long, "tree-ll128", now, "k3x9"); len(got) > 48 || !strings.HasSuffix(got, "-tree-ll128-1203090807-k3x9") {
		t.Errorf("long name %s (%d)", got, len(got))
	}
	// Two benches in the same second get different names (issue 19: they shared one job).
	seen := map[string]bool{}
	for range 200 {
		id := NewRunID()
		if len(id) != 4 || strings.Trim(id, "abcdefghijklmnopqrstuvwxyz0123456789") != "" {
			t.Fatalf("run id %q", id)
		}
		seen[JobName("allreduce", "ring", now, id)] = true
	}
	if len(seen) < 190 {
		t.Errorf("200 runs in one second got only %d distinct job names", len(seen))
	}
}
