package cli

import (
	"context"
	"errors"
	"fmt"

	ucli "github.com/urfave/cli/v2"

	"github.com/ain-hpc/ain/internal/ainerr"
	"github.com/ain-hpc/ain/pkg/jobs"
)

type logsOptions struct {
	Follow  bool
	Replica string
	Index   int
	All     bool
	Tail    int64
}

func (a *App) logsCommand() *ucli.Command {
	o := &logsOptions{}
	return &ucli.Command{
		Name:      "logs",
		Usage:     "a job's logs: the master/launcher by default, --replica/--index for one pod, --all for every pod (prefixed)",
		ArgsUsage: "NAME",
		Flags: []ucli.Flag{
			&ucli.BoolFlag{Name: "follow", Aliases: []string{"f"}, Usage: "stream new lines", Destination: &o.Follow},
			&ucli.StringFlag{Name: "replica", Usage: "master, worker or launcher", Destination: &o.Replica},
			&ucli.IntFlag{Name: "index", Value: -1, Usage: "replica index (with --replica)", Destination: &o.Index},
			&ucli.BoolFlag{Name: "all", Usage: "every pod of the job, each line prefixed with its pod", Destination: &o.All},
			&ucli.Int64Flag{Name: "tail", Value: -1, Usage: "only the last N lines of each pod", Destination: &o.Tail},
		},
		Action: func(c *ucli.Context) error {
			if c.NArg() != 1 {
				return ainerr.Usagef("name one job: ain logs NAME")
			}
			return a.runLogs(c.Context, c.Args().First(), o)
		},
	}
}

func (a *App) runLogs(ctx context.Context, name string, o *logsOptions) error {
	kc, cl, job, pods, err := a.jobAndPods(ctx, name)
	if err != nil {
		return err
	}
	if len(pods) == 0 {
		return ainerr.Newf(ainerr.Failure, "%s has no pods (yet, or they were cleaned up): ain status %s%s", name, name, nsFlag(kc.Namespace))
	}
	sel, err := jobs.SelectPods(name, pods, jobs.LogSelection{Replica: o.Replica, Index: o.Index, All: o.All, Started: !o.Follow})
	var nm *jobs.NoPodMatchError
	var ns *jobs.NotStartedError
	switch {
	case errors.As(err, &nm) && nm.NoLead:
		// The operator makes workers before the master/launcher: nothing to show yet, not a usage
		// error (CI caught `ain logs` between the two: "no pod of NAME matches", exit 2).
		return ainerr.New(ainerr.Failure, fmt.Errorf("no log yet: %w", err),
			"`ain status "+name+nsFlag(kc.Namespace)+"` says where it is; `ain logs "+name+" --all` shows the pods there are")
	case errors.As(err, &ns):
		return ainerr.New(ainerr.Failure, err, "`ain status "+name+nsFlag(kc.Namespace)+"` says why it has not started")
	case err != nil:
		return ainerr.New(ainerr.Usage, err, "")
	}
	be, err := jobs.BackendOf(job)
	if err != nil {
		return err
	}
	err = cl.StreamLogs(ctx, a.Streams.Out, be, name, sel, o.Tail, o.Follow)
	var se *jobs.LogStreamError
	if errors.As(err, &se) {
		return kc.Classify(se.Err, "reading the log of "+se.Pod)
	}
	return err
}
