package cli

import (
	"context"
	"errors"
	"fmt"

	ucli "github.com/urfave/cli/v2"

	"github.com/ain-hpc/ain/internal/ainerr"
	"github.com/ain-hpc/ain/pkg/jobs"
)

func (a *App) logsCommand() *ucli.Command {
	o := &jobs.LogOptions{}
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

func (a *App) runLogs(ctx context.Context, name string, o *jobs.LogOptions) error {
	kc, err := a.clients()
	if err != nil {
		return err
	}
	err = a.cluster(kc).Logs(ctx, a.Streams.Out, name, *o)
	status := "`ain status " + name + nsFlag(kc.Namespace) + "`"
	nm, noMatch := errors.AsType[*jobs.NoPodMatchError](err)
	_, notStarted := errors.AsType[*jobs.NotStartedError](err)
	se, stream := errors.AsType[*jobs.LogStreamError](err)
	switch {
	case noMatch && nm.NoLead:
		// The operator makes workers before the master/launcher: nothing to show yet, not a usage
		// error (CI caught `ain logs` between the two: "no pod of NAME matches", exit 2).
		return ainerr.New(ainerr.Failure, fmt.Errorf("no log yet: %w", err), status+" says where it is; `ain logs "+name+" --all` shows the pods there are")
	case noMatch:
		return ainerr.New(ainerr.Usage, err, "")
	case notStarted:
		return ainerr.New(ainerr.Failure, err, status+" says why it has not started")
	case stream:
		return kc.Classify(se.Err, "reading the log of "+se.Pod)
	}
	if _, ok := errors.AsType[*jobs.NoPodsError](err); ok {
		return ainerr.Newf(ainerr.Failure, "%v: ain status %s%s", err, name, nsFlag(kc.Namespace))
	}
	return jobsError(kc, err)
}
