package train

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/ain-hpc/ain/pkg/jobs"
	"github.com/ain-hpc/ain/pkg/next"
)

// BuildError says the job could not be built from its recipe and profile.
type BuildError struct{ Err error }

func (e *BuildError) Error() string { return e.Err.Error() }
func (e *BuildError) Unwrap() error { return e.Err }

// ClusterError is a cluster call that failed while Doing something ("applying the job").
type ClusterError struct {
	Doing string
	Err   error
}

func (e *ClusterError) Error() string { return e.Doing + ": " + e.Err.Error() }
func (e *ClusterError) Unwrap() error { return e.Err }

// Stage is where an interrupt came.
type Stage string

// The stages an interrupt can come in.
const (
	StageBeforeApply Stage = "before the job was applied"
	StageApplying    Stage = "while applying"
	StageWatching    Stage = "while watching"
)

// InterruptedError says the run was interrupted and what that left. Before the apply nothing
// exists; after it the job does (the apply is always finished, never left half-done) unless
// DeleteAsked and it was Deleted or already Gone.
type InterruptedError struct {
	Stage                 Stage
	Kind, Namespace, Name string
	Phase                 string // the job's phase when the interrupt came (StageWatching)
	// ProbesDeleted: the interrupt came while the counter probes ran; they were deleted.
	ProbesDeleted bool
	DeleteAsked   bool
	Deleted       []string // what DeleteOnInterrupt deleted
	Gone          bool     // the job was already gone
	DeleteErr     error    // why it could not be deleted
}

func (e *InterruptedError) Error() string {
	switch {
	case e.Stage == StageBeforeApply && e.ProbesDeleted:
		return "interrupted before the job was applied (while reading the RDMA counters; the probe pods are deleted): nothing was created"
	case e.Stage == StageBeforeApply:
		return "interrupted before the job was applied: nothing was created"
	case len(e.Deleted) > 0:
		return fmt.Sprintf("interrupted %s %s %s/%s; deleted %s", e.Stage, e.Kind, e.Namespace, e.Name, strings.Join(e.Deleted, ", "))
	case e.Gone:
		return fmt.Sprintf("interrupted %s %s %s/%s, which is already gone", e.Stage, e.Kind, e.Namespace, e.Name)
	case e.DeleteErr != nil:
		return fmt.Sprintf("interrupted %s %s %s/%s; it could not be deleted (%v) and may still be running", e.Stage, e.Kind, e.Namespace, e.Name, e.DeleteErr)
	}
	return fmt.Sprintf("interrupted %s %s %s/%s; it keeps running", e.Stage, e.Kind, e.Namespace, e.Name)
}

// Left reports whether the interrupt left the job in the cluster (applied and not deleted).
func (e *InterruptedError) Left() bool {
	return e.Stage != StageBeforeApply && len(e.Deleted) == 0 && !e.Gone
}

// TimeoutError says the watch's bound passed before the job ended; the job keeps running.
// Snapshot is its last state; Pending says why its pods are Pending ("" when none is).
type TimeoutError struct {
	Timeout               time.Duration
	Kind, Namespace, Name string
	Snapshot              jobs.Snapshot
	Pending               string
}

func (e *TimeoutError) Error() string {
	state := "is " + e.Snapshot.Phase
	if e.Snapshot.Phase == "" {
		state = "was not read back yet"
	}
	return fmt.Sprintf("timeout %s reached: %s %s/%s %s", e.Timeout, e.Kind, e.Namespace, e.Name, state)
}

// JobFailedError says the job ended Failed; the Result's Summary says how.
type JobFailedError struct{ Kind, Namespace, Name string }

func (e *JobFailedError) Error() string {
	return fmt.Sprintf("%s %s/%s failed", e.Kind, e.Namespace, e.Name)
}

// TransportError says the job did not use the required transport: NCCL's log names another
// (Got, "" when it names none), or the RDMA port counters contradict it (Findings).
type TransportError struct {
	Namespace, Name string // the job's
	Require, Got    string
	Findings        []string
}

func (e *TransportError) Error() string {
	return "required transport " + e.Require + ": " + e.Problem()
}

// Problem is what contradicts the required transport, for a message that names the
// requirement its own way.
func (e *TransportError) Problem() string {
	if len(e.Findings) > 0 {
		return "the RDMA port counters contradict NCCL's log: " + strings.Join(e.Findings, "; ")
	}
	got := e.Got
	if got == "" {
		got = "unknown (no NCCL transport lines in the logs)"
	}
	return "NCCL used " + got
}

// WriteText says on w what the interrupt left: the job keeps running (how to follow and end it,
// cmd words the commands), or what DeleteOnInterrupt deleted. Before the apply nothing exists
// and the error says so: it writes nothing.
func (e *InterruptedError) WriteText(w io.Writer, cmd func(next.Command) string) {
	ns := ""
	if e.Namespace != "" {
		ns = " -n " + e.Namespace
	}
	switch e.Stage {
	case StageBeforeApply:
		return
	case StageApplying:
		fmt.Fprintf(w, "\ninterrupted while applying: the apply was finished rather than left half-done (%s %s/%s and its objects exist)\n", e.Kind, e.Namespace, e.Name)
	default:
		fmt.Fprintf(w, "\ninterrupted %s %s %s/%s (%s)\n", e.Stage, e.Kind, e.Namespace, e.Name, e.Phase)
	}
	end := cmd(next.Command("delete " + e.Name + ns))
	switch {
	case !e.DeleteAsked:
		fmt.Fprintf(w, "%s %s/%s keeps running. Follow it: %s   %s\nEnd it: %s\n", e.Kind, e.Namespace, e.Name,
			cmd(next.Command("status "+e.Name+ns)), cmd(next.Command("logs "+e.Name+ns+" -f")), end)
	case len(e.Deleted) > 0:
		fmt.Fprintf(w, "--delete-on-interrupt: deleted %s\n", strings.Join(e.Deleted, ", "))
	case e.Gone:
		fmt.Fprintf(w, "--delete-on-interrupt: %s %s/%s is already gone\n", e.Kind, e.Namespace, e.Name)
	default:
		fmt.Fprintf(w, "--delete-on-interrupt: could not delete %s %s/%s (%v): it may still be running. End it: %s\n",
			e.Kind, e.Namespace, e.Name, e.DeleteErr, end)
	}
}
