package bench

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	k8stesting "k8s.io/client-go/testing"

	"github.com/ain-hpc/ain/pkg/jobs"
	"github.com/ain-hpc/ain/pkg/next"
	"github.com/ain-hpc/ain/pkg/profile"
)

// A Session on the fake cluster of TestRunnerOnFakeCluster: the folder, the gate, the variants
// and the saved result, with what it says. The fabric is socket: no probe pods (counters, port
// rates) run on the fake clientset.
func TestSessionOnFakeCluster(t *testing.T) {
	ring, tree := sample(t, "ring"), sample(t, "tree")
	t0 := time.Date(2026, 12, 3, 9, 8, 0, 0, time.UTC)
	setup := func(t *testing.T, refuse bool, ringPhase ...string) (*Session, SessionOptions, *fakeOperator, *[]string) {
		ringPhase = append(ringPhase, jobs.PhaseSucceeded)
		op := newFakeOperator(t, map[string]outcome{"ring": {ringPhase[0], ring}, "tree": {jobs.PhaseSucceeded, tree}})
		if refuse {
			op.dyn.PrependReactor("create", "mpijobs", func(k8stesting.Action) (bool, runtime.Object, error) {
				return true, nil, errors.New("admission webhook denied the request")
			})
		}
		var calls [][]string
		plan, err := NewPlan(PlanInput{Algo: "ring,tree", Shape: Shape{Nodes: 2, GPUsPerNode: 1}, Run: "t3st"}, loader("allreduce", &calls))
		if err != nil {
			t.Fatal(err)
		}
		plan.Profile.Spec.Fabric = profile.FabricSocket
		var said []string
		clock := &stepClock{t: t0}
		s := &Session{
			Runner: &Runner{Cluster: op.cluster(), Backend: logBackend{Backend: mpiV1(t), op: op}, Namespace: fakeNS, ShownNamespace: fakeNS, Now: clock.Now},
			Say:    func(l string) { said = append(said, l) },
		}
		return s, SessionOptions{Plan: plan, Out: filepath.Join(t.TempDir(), "out"), Timeout: time.Minute}, op, &said
	}

	t.Run("two variants", func(t *testing.T) {
		s, o, op, said := setup(t, false)
		gated := 0
		s.Gate = func(ctx context.Context) error {
			if _, ok := ctx.Deadline(); !ok {
				t.Error("the gate's context has no deadline: the Timeout does not bound it")
			}
			gated++
			return nil
		}
		rep, err := s.Run(context.Background(), o)
		if err != nil {
			t.Fatal(err)
		}
		if gated != 1 || rep.Dir != o.Out || rep.Result == nil || len(rep.Result.Variants) != 2 || rep.SaveErr != nil {
			t.Fatalf("gated %d, report %+v", gated, rep)
		}
		if _, err := os.Stat(filepath.Join(o.Out, "result.json")); err != nil || !strings.Contains(strings.Join(rep.Files, " "), "result.json") {
			t.Errorf("result.json not saved: %v %q", err, rep.Files)
		}
		if rep.Result.Finished.IsZero() || rep.Result.Seconds <= 0 || rep.Result.Interrupted {
			t.Errorf("not finished: %+v", rep.Result)
		}
		want := []string{"bench allreduce: 2 variant(s) (ring, tree) of all_reduce_perf -b 8 -e 8G -f 2 on 2 node(s) x 1 GPU, fabric socket",
			"the variants run one after another on the same nodes: each MPIJob is deleted",
			"results: " + o.Out}
		if len(*said) != len(want) {
			t.Fatalf("said %q", *said)
		}
		for i, w := range want {
			if !strings.HasPrefix((*said)[i], w) {
				t.Errorf("line %d %q, want prefix %q", i, (*said)[i], w)
			}
		}
		if n := len(op.jobs()); n != 2 {
			t.Errorf("%d jobs", n)
		}
	})
	t.Run("gate refuses", func(t *testing.T) {
		s, o, op, said := setup(t, false)
		notReady := errors.New("2 nodes lack rdma/ib")
		s.Gate = func(context.Context) error { return notReady }
		rep, err := s.Run(context.Background(), o)
		var pe *PreflightError
		if !errors.As(err, &pe) || !errors.Is(err, notReady) || rep.Result != nil {
			t.Fatalf("err %v, report %+v", err, rep)
		}
		if _, err := os.Stat(o.Out); !os.IsNotExist(err) {
			t.Errorf("the empty folder was left: %v", err)
		}
		if len(op.jobs()) != 0 || len(*said) != 0 {
			t.Errorf("ran after the gate refused: %d jobs, said %q", len(op.jobs()), *said)
		}
	})
	t.Run("first apply refused", func(t *testing.T) {
		s, o, _, _ := setup(t, true)
		rep, err := s.Run(context.Background(), o)
		var ae *ApplyError
		if !errors.As(err, &ae) || rep.Result != nil {
			t.Fatalf("err %v, report %+v", err, rep)
		}
		if _, err := os.Stat(o.Out); !os.IsNotExist(err) {
			t.Errorf("nothing ran but the folder was left: %v", err)
		}
	})
	t.Run("a variant fails", func(t *testing.T) {
		s, o, _, _ := setup(t, false, jobs.PhaseFailed)
		rep, err := s.Run(context.Background(), o)
		var fe *VariantFailedError
		if !errors.As(err, &fe) || rep.Result == nil || fe.Log != o.Out+"/ring.log" {
			t.Fatalf("err %#v, report %+v", err, rep)
		}
	})
	t.Run("out not empty", func(t *testing.T) {
		s, o, _, _ := setup(t, false)
		if err := os.MkdirAll(o.Out, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(o.Out, "result.json"), []byte("{}"), 0o644); err != nil {
			t.Fatal(err)
		}
		s.Gate = func(context.Context) error { t.Error("gate ran"); return nil }
		_, err := s.Run(context.Background(), o)
		var oe *OutDirError
		if !errors.As(err, &oe) {
			t.Fatalf("err %v", err)
		}
	})
}

func TestReportVerdict(t *testing.T) {
	cmd := func(c next.Command) string { return "ain " + string(c) }
	ok := &Report{Dir: "d", Result: &Result{Valid: true, Variants: []*VariantResult{{Variant: Variant{Name: "ring"}}}}}
	if err := ok.Verdict(); err != nil || (&Report{}).Verdict() != nil {
		t.Fatalf("a valid result or none: %v", err)
	}
	bad := &Report{Dir: "d", Result: &Result{Problems: []string{"socket fallback"}, Variants: []*VariantResult{{Variant: Variant{Name: "ring"}}}}}
	var ie *InvalidResultError
	if err := bad.Verdict(); !errors.As(err, &ie) || err.Error() != "the bench result is INVALID: socket fallback" ||
		ie.Hint(cmd) != "`ain doctor nccl-log d/ring.log` explains the transport; fix it and run the bench again" {
		t.Fatalf("invalid: %v", err)
	}
	bad.Result.Interrupted, bad.Result.InterruptedNote = true, "during ring"
	var ir *InterruptedResultError
	if err := bad.Verdict(); !errors.As(err, &ir) || err.Error() != "interrupted during ring: d holds what was measured, with no verdict" {
		t.Fatalf("interrupted: %v", err)
	}
}

// perftest's failure says what the pods need: a GID of their own address when they found none,
// else the resource and the image they asked for.
func TestPerftestErrorHint(t *testing.T) {
	cmd := func(c next.Command) string { return "ain " + string(c) }
	gid := &PerftestError{Err: errors.New("exit 1"), Problems: []string{"no RoCE v2 GID of 10.0.0.2"}}
	if h := gid.Hint(cmd); !strings.Contains(h, "--gid-index N") || !strings.Contains(h, "(ain doctor ib-ports lists") {
		t.Errorf("no GID: %s", h)
	}
	res := &PerftestError{Err: errors.New("exit 1"), Resource: "rdma/rdma_shared_device_a", Image: "img:1"}
	if h := res.Hint(cmd); !strings.Contains(h, "request rdma/rdma_shared_device_a and IPC_LOCK") || !strings.Contains(h, "run img:1") {
		t.Errorf("pods: %s", h)
	}
}
