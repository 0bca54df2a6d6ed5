package cli

import (
	"context"
	"fmt"
	"strings"

	ucli "github.com/urfave/cli/v2"

	"github.com/ain-hpc/ain/internal/ainerr"
	"github.com/ain-hpc/ain/pkg/jobs"
)

func (a *App) deleteCommand() *ucli.Command {
	var yes bool
	return &ucli.Command{
		Name:      "delete",
		Usage:     "delete a job and what ain created with it (asks on a TTY unless --yes)",
		ArgsUsage: "NAME",
		Flags:     []ucli.Flag{&ucli.BoolFlag{Name: "yes", Aliases: []string{"y"}, Usage: "do not ask", Destination: &yes}},
		Action: func(c *ucli.Context) error {
			if c.NArg() != 1 {
				return ainerr.Usagef("name one job: ain delete NAME")
			}
			name := c.Args().First()
			kc, cl, job, err := a.findJob(c.Context, name)
			if err != nil {
				if done, oerr := a.deleteOrphanRuntime(c.Context, name, yes); done || oerr != nil {
					return oerr
				}
				return err
			}
			what := fmt.Sprintf("delete %s %s/%s", job.GetKind(), kc.Namespace, name)
			if err := a.confirm(yes, what, fmt.Sprintf("%s (%s) and its pods", what, jobs.PhaseOf(job)), "not deleted"); err != nil {
				return err
			}
			deleted, err := cl.Delete(c.Context, job)
			if err != nil {
				return kc.Classify(err, "deleting the job")
			}
			fmt.Fprintf(a.Streams.Out, "deleted %s\n", strings.Join(deleted, ", "))
			return nil
		},
	}
}

// releaseCommand ends ain's training and benchmark jobs in the namespace but keeps what
// `ain serve` deployed (course 12.4.2: release the GPUs of finished work, keep the service).
func (a *App) releaseCommand() *ucli.Command {
	var yes, finishedOnly bool
	return &ucli.Command{
		Name:  "release",
		Usage: "delete ain's jobs in the namespace (their GPUs and RDMA devices go back), keep ain serve's services",
		Description: "Examples:\n  ain release --yes             # every ain job, finished or not\n" +
			"  ain release --finished --yes  # only jobs that Succeeded or Failed",
		Flags: []ucli.Flag{
			&ucli.BoolFlag{Name: "yes", Aliases: []string{"y"}, Usage: "do not ask", Destination: &yes},
			&ucli.BoolFlag{Name: "finished", Usage: "only jobs that have ended", Destination: &finishedOnly},
		},
		Action: func(c *ucli.Context) error {
			kc, err := a.clients()
			if err != nil {
				return err
			}
			cl := a.cluster(kc)
			todo, err := cl.Releasable(c.Context, finishedOnly)
			if err != nil {
				return kc.Classify(err, "listing jobs")
			}
			if len(todo) == 0 {
				fmt.Fprintf(a.Streams.Out, "no ain jobs to release in namespace %s; services are kept\n", kc.Namespace)
				return nil
			}
			if err := a.confirm(yes, fmt.Sprintf("delete %d job(s) in %s", len(todo), kc.Namespace),
				fmt.Sprintf("delete %d ain job(s) in %s (services are kept)", len(todo), kc.Namespace), "nothing released"); err != nil {
				return err
			}
			for _, j := range todo {
				phase := jobs.PhaseOf(j)
				if _, err := cl.Delete(c.Context, j); err != nil {
					return kc.Classify(err, "deleting "+j.GetName())
				}
				fmt.Fprintf(a.Streams.Out, "released %s/%s (%s)\n", j.GetKind(), j.GetName(), phase)
			}
			fmt.Fprintln(a.Streams.Out, "services deployed by ain serve are kept (ain serve status)")
			return a.releaseOrphanRuntimes(c.Context, cl)
		},
	}
}

// deleteOrphanRuntime deletes ain's TrainingRuntime name when no TrainJob of that name exists
// (what a refused TrainJob leaves); done says whether there was one.
func (a *App) deleteOrphanRuntime(ctx context.Context, name string, yes bool) (done bool, err error) {
	kc, err := a.clients()
	if err != nil {
		return false, nil // the job lookup's own error says it
	}
	cl := a.cluster(kc)
	orphans, err := cl.OrphanRuntimes(ctx, name)
	if err != nil || len(orphans) == 0 {
		return false, nil
	}
	what := fmt.Sprintf("delete TrainingRuntime %s/%s (its TrainJob does not exist)", kc.Namespace, name)
	if err := a.confirm(yes, what, what, "not deleted"); err != nil {
		return true, err
	}
	if err := cl.DeleteRuntime(ctx, name); err != nil {
		return true, kc.Classify(err, "deleting the TrainingRuntime")
	}
	fmt.Fprintf(a.Streams.Out, "deleted TrainingRuntime/%s (ain made it for a TrainJob that does not exist)\n", name)
	return true, nil
}

// releaseOrphanRuntimes deletes ain's TrainingRuntimes that have no TrainJob.
func (a *App) releaseOrphanRuntimes(ctx context.Context, cl *jobs.Cluster) error {
	err := cl.ReleaseOrphanRuntimes(ctx, func(name string, err error) {
		if err != nil {
			fmt.Fprintf(a.Streams.Err, "note: could not delete TrainingRuntime %s: %v\n", name, err)
			return
		}
		fmt.Fprintf(a.Streams.Out, "released TrainingRuntime/%s (no TrainJob uses it)\n", name)
	})
	if err != nil {
		fmt.Fprintf(a.Streams.Err, "note: could not list ain's TrainingRuntimes: %v\n", err)
	}
	return nil
}
