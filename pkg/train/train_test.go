package train

import (
	"errors"
	"strings"
	"testing"

	"github.com/ain-hpc/ain/pkg/bench"
	"github.com/ain-hpc/ain/pkg/jobs"
	"github.com/ain-hpc/ain/pkg/next"
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

func TestInterruptedErrorWriteText(t *testing.T) {
	cmd := func(c next.Command) string { return "ain " + string(c) }
	base := InterruptedError{Stage: StageWatching, Kind: "TrainJob", Namespace: "team", Name: "j", Phase: "Running"}
	for _, tc := range []struct {
		name string
		edit func(*InterruptedError)
		want string
	}{
		{"before apply", func(e *InterruptedError) { e.Stage = StageBeforeApply }, ""},
		{"keeps running", func(*InterruptedError) {},
			"\ninterrupted while watching TrainJob team/j (Running)\nTrainJob team/j keeps running. Follow it: ain status j -n team   ain logs j -n team -f\nEnd it: ain delete j -n team\n"},
		{"applying", func(e *InterruptedError) { e.Stage = StageApplying; e.DeleteAsked = true; e.Gone = true },
			"\ninterrupted while applying: the apply was finished rather than left half-done (TrainJob team/j and its objects exist)\n--delete-on-interrupt: TrainJob team/j is already gone\n"},
		{"deleted", func(e *InterruptedError) { e.DeleteAsked = true; e.Deleted = []string{"TrainJob/j", "Secret/j-ssh"} },
			"\ninterrupted while watching TrainJob team/j (Running)\n--delete-on-interrupt: deleted TrainJob/j, Secret/j-ssh\n"},
		{"delete failed", func(e *InterruptedError) { e.DeleteAsked = true; e.DeleteErr = errors.New("forbidden") },
			"\ninterrupted while watching TrainJob team/j (Running)\n--delete-on-interrupt: could not delete TrainJob team/j (forbidden): it may still be running. End it: ain delete j -n team\n"},
	} {
		e := base
		tc.edit(&e)
		var b strings.Builder
		e.WriteText(&b, cmd)
		if b.String() != tc.want {
			t.Errorf("%s: got\n%q\nwant\n%q", tc.name, b.String(), tc.want)
		}
	}
}
