package cli

import (
	"errors"
	"fmt"

	ucli "github.com/urfave/cli/v2"

	"github.com/ain-hpc/ain/internal/ainerr"
	"github.com/ain-hpc/ain/pkg/jobs"
	"github.com/ain-hpc/ain/pkg/kube"
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
			kc, err := a.clients()
			if err != nil {
				return err
			}
			removed, err := a.cluster(kc).DeleteNamed(c.Context, c.Args().First(), func(what, question string) error {
				return a.confirm(yes, what, question, "not deleted")
			})
			if err != nil {
				return jobsError(kc, err)
			}
			removed.WriteText(a.Streams.Out)
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
			n, err := a.cluster(kc).Release(c.Context, finishedOnly, func(n int) error {
				return a.confirm(yes, fmt.Sprintf("delete %d job(s) in %s", n, kc.Namespace),
					fmt.Sprintf("delete %d ain job(s) in %s (services are kept)", n, kc.Namespace), "nothing released")
			}, func(e jobs.ReleaseEvent) { e.WriteText(a.Streams.Out, a.Streams.Err, ainCommand) })
			if n == 0 && err == nil {
				fmt.Fprintf(a.Streams.Out, "no ain jobs to release in namespace %s; services are kept\n", kc.Namespace)
			}
			return jobsError(kc, err)
		},
	}
}

// jobsError maps pkg/jobs' flow errors: no such job, or an API call that failed.
func jobsError(kc *kube.Clients, err error) error {
	if jobs.IsNotFound(err) {
		return ainerr.New(ainerr.Usage, err, "`ain list` shows the jobs in this namespace; -n selects another")
	}
	if ce, ok := errors.AsType[*jobs.ClusterError](err); ok {
		return kc.Classify(ce.Err, ce.Doing)
	}
	return err
}
