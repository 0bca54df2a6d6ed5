package train

import (
	"errors"
	"testing"

	"github.com/ain-hpc/ain/pkg/bench"
	"github.com/ain-hpc/ain/pkg/jobs"
)

func TestVerdict(t *testing.T) {
	sum := func(phase, transport string) jobs.Summary {
		return jobs.Summary{Snapshot: jobs.Snapshot{Kind: "MPIJob", Namespace: "ns", Name: "j", Phase: phase}, Transport: transport}
	}
	contradicted := &bench.Wire{Findings: []string{"wire-idle: gpu-node-2 moved 0 B on mlx5_0:1"}}
	for _, c := range []struct {
		name      string
		sum       jobs.Summary
		require   string
		wire      *bench.Wire
		failed    bool
		transport string // the TransportError's Got, when one is wanted
		findings  int
	}{
		{name: "succeeded", sum: sum(jobs.PhaseSucceeded, "ib")},
		{name: "succeeded, nothing required, wire contradicts", sum: sum(jobs.PhaseSucceeded, "ib"), wire: contradicted},
		{name: "failed", sum: sum(jobs.PhaseFailed, "ib"), require: "ib", failed: true},
		{name: "required and used", sum: sum(jobs.PhaseSucceeded, "ib"), require: "ib", wire: &bench.Wire{}},
		{name: "sockets", sum: sum(jobs.PhaseSucceeded, "socket"), require: "ib", transport: "socket"},
		{name: "no NCCL line", sum: sum(jobs.PhaseSucceeded, ""), require: "roce", transport: "-"},
		{name: "counters contradict the log", sum: sum(jobs.PhaseSucceeded, "ib"), require: "ib", wire: contradicted, transport: "ib", findings: 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := verdict(c.sum, c.require, c.wire)
			var fe *JobFailedError
			var te *TransportError
			switch {
			case c.failed:
				if !errors.As(err, &fe) || fe.Name != "j" || fe.Namespace != "ns" {
					t.Fatalf("got %v, want JobFailedError for ns/j", err)
				}
			case c.transport != "":
				if !errors.As(err, &te) || te.Require != c.require || len(te.Findings) != c.findings || te.Name != "j" {
					t.Fatalf("got %#v, want TransportError requiring %s with %d finding(s)", err, c.require, c.findings)
				}
				if c.transport == "-" && te.Got != "" || c.transport != "-" && te.Got != c.transport {
					t.Fatalf("Got %q, want %q", te.Got, c.transport)
				}
			case err != nil:
				t.Fatalf("got %v, want nil", err)
			}
		})
	}
}

func TestInterruptedErrorSaysWhatWasLeft(t *testing.T) {
	for _, c := range []struct {
		e    InterruptedError
		want string
		left bool
	}{
		{InterruptedError{Stage: StageBeforeApply}, "interrupted before the job was applied: nothing was created", false},
		{InterruptedError{Stage: StageWatching, Kind: "MPIJob", Namespace: "ns", Name: "j"}, "interrupted while watching MPIJob ns/j; it keeps running", true},
		{InterruptedError{Stage: StageWatching, Kind: "MPIJob", Namespace: "ns", Name: "j", DeleteAsked: true, Deleted: []string{"MPIJob ns/j"}}, "interrupted while watching MPIJob ns/j; deleted MPIJob ns/j", false},
		{InterruptedError{Stage: StageApplying, Kind: "MPIJob", Namespace: "ns", Name: "j", DeleteAsked: true, DeleteErr: errors.New("forbidden")}, "interrupted while applying MPIJob ns/j; it could not be deleted (forbidden) and may still be running", true},
	} {
		if got := c.e.Error(); got != c.want || c.e.Left() != c.left {
			t.Errorf("%q (left %v), want %q (left %v)", got, c.e.Left(), c.want, c.left)
		}
	}
}
