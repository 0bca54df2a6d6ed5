package jobs

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/ain-hpc/ain/pkg/next"
)

// ClusterError says an API call of a flow failed; Doing says what the flow was doing ("deleting
// the job"), for the caller's message.
type ClusterError struct {
	Doing string
	Err   error
}

func (e *ClusterError) Error() string { return e.Doing + ": " + e.Err.Error() }
func (e *ClusterError) Unwrap() error { return e.Err }

// Confirm is asked before a deletion: what is the action in a few words ("delete MPIJob ns/x"),
// question the same with what goes with it; an error stops the deletion and is returned as is.
// A nil Confirm refuses (a *NotConfirmedError), as the CLI does when there is nobody to ask and
// no --yes: a caller that deletes without asking says so with a Confirm that returns nil.
type Confirm func(what, question string) error

// NotConfirmedError is a deletion refused because no confirmation callback was given.
type NotConfirmedError struct{ What string }

func (e *NotConfirmedError) Error() string {
	return "refusing to " + e.What + ": no confirmation callback (one that returns nil deletes without asking)"
}

func (c Confirm) ask(what, question string) error {
	if c == nil {
		return &NotConfirmedError{What: what}
	}
	return c(what, question)
}

// Removed is what DeleteNamed deleted: the job's objects, or Runtime, the TrainingRuntime ain
// made for a TrainJob that does not exist.
type Removed struct {
	Objects []string
	Runtime string
}

// WriteText says what was deleted.
func (r *Removed) WriteText(w io.Writer) {
	if r.Runtime != "" {
		fmt.Fprintf(w, "deleted TrainingRuntime/%s (ain made it for a TrainJob that does not exist)\n", r.Runtime)
		return
	}
	fmt.Fprintf(w, "deleted %s\n", strings.Join(r.Objects, ", "))
}

// DeleteNamed deletes job name and what ain created with it, once confirm agrees. When no job of
// that name can be read, ain's TrainingRuntime of that name whose TrainJob does not exist (what a
// refused TrainJob leaves) is deleted instead; without one the error is the job lookup's
// (NotFoundError, or a ClusterError).
func (c *Cluster) DeleteNamed(ctx context.Context, name string, confirm Confirm) (*Removed, error) {
	job, err := c.Find(ctx, name)
	if err != nil {
		if !IsNotFound(err) {
			err = &ClusterError{Doing: "reading the job", Err: err}
		}
		if orphans, oerr := c.OrphanRuntimes(ctx, name); oerr != nil || len(orphans) == 0 {
			return nil, err
		}
		what := fmt.Sprintf("delete TrainingRuntime %s/%s (its TrainJob does not exist)", c.Namespace, name)
		if err := confirm.ask(what, what); err != nil {
			return nil, err
		}
		if err := c.DeleteRuntime(ctx, name); err != nil {
			return nil, &ClusterError{Doing: "deleting the TrainingRuntime", Err: err}
		}
		return &Removed{Runtime: name}, nil
	}
	what := fmt.Sprintf("delete %s %s/%s", job.GetKind(), c.Namespace, name)
	if err := confirm.ask(what, fmt.Sprintf("%s (%s) and its pods", what, PhaseOf(job))); err != nil {
		return nil, err
	}
	deleted, err := c.Delete(ctx, job)
	if err != nil {
		return nil, &ClusterError{Doing: "deleting the job", Err: err}
	}
	return &Removed{Objects: deleted}, nil
}

// ReleaseEvent is one step of Release: a job released (Kind, Name, Phase), the jobs done
// (JobsDone), or a TrainingRuntime no TrainJob uses (Runtime) deleted or not (Err); Err alone is
// why the runtimes could not be listed.
type ReleaseEvent struct {
	Kind, Name, Phase string
	JobsDone          bool
	Runtime           string
	Err               error
}

// WriteText writes e: what was released on out, problems that stop nothing on log; cmd words
// the command that shows the services kept.
func (e ReleaseEvent) WriteText(out, log io.Writer, cmd func(next.Command) string) {
	switch {
	case e.JobsDone:
		fmt.Fprintf(out, "services deployed by ain serve are kept (%s)\n", cmd("serve status"))
	case e.Runtime != "" && e.Err != nil:
		fmt.Fprintf(log, "note: could not delete TrainingRuntime %s: %v\n", e.Runtime, e.Err)
	case e.Runtime != "":
		fmt.Fprintf(out, "released TrainingRuntime/%s (no TrainJob uses it)\n", e.Runtime)
	case e.Err != nil:
		fmt.Fprintf(log, "note: could not list ain's TrainingRuntimes: %v\n", e.Err)
	default:
		fmt.Fprintf(out, "released %s/%s (%s)\n", e.Kind, e.Name, e.Phase)
	}
}

// Release deletes ain's jobs in the namespace (Releasable: with finishedOnly those that ended),
// once confirm(n) agrees, then ain's TrainingRuntimes that no TrainJob uses; what ain serve
// deployed is kept. It returns how many jobs there were to release: with none it asks nothing
// and deletes nothing. A runtime that cannot be listed or deleted is an event, not an error.
// A nil confirm refuses, as a nil Confirm does (a *NotConfirmedError); a nil event drops the
// events.
func (c *Cluster) Release(ctx context.Context, finishedOnly bool, confirm func(n int) error, event func(ReleaseEvent)) (int, error) {
	todo, err := c.Releasable(ctx, finishedOnly)
	if err != nil {
		return 0, &ClusterError{Doing: "listing jobs", Err: err}
	}
	if len(todo) == 0 {
		return 0, nil
	}
	if confirm == nil {
		return len(todo), &NotConfirmedError{What: fmt.Sprintf("delete %d job(s) in %s", len(todo), c.Namespace)}
	}
	if err := confirm(len(todo)); err != nil {
		return len(todo), err
	}
	if event == nil {
		event = func(ReleaseEvent) {}
	}
	for _, j := range todo {
		phase := PhaseOf(j)
		if _, err := c.Delete(ctx, j); err != nil {
			return len(todo), &ClusterError{Doing: "deleting " + j.GetName(), Err: err}
		}
		event(ReleaseEvent{Kind: j.GetKind(), Name: j.GetName(), Phase: phase})
	}
	event(ReleaseEvent{JobsDone: true})
	if err := c.ReleaseOrphanRuntimes(ctx, func(name string, err error) { event(ReleaseEvent{Runtime: name, Err: err}) }); err != nil {
		event(ReleaseEvent{Err: err})
	}
	return len(todo), nil
}
