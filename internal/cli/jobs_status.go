package cli

import (
	"context"

	ucli "github.com/urfave/cli/v2"

	"github.com/ain-hpc/ain/internal/ainerr"
)

func (a *App) statusCommand() *ucli.Command {
	var out string
	return &ucli.Command{
		Name:      "status",
		Usage:     "a job's conditions, per-replica pod states and nodes, recent events, and its NCCL verdict when it ended",
		ArgsUsage: "NAME",
		Flags:     []ucli.Flag{outputFlag(&out, "text", "text or json", "json")},
		Action: func(c *ucli.Context) error {
			if c.NArg() != 1 {
				return ainerr.Usagef("name one job: ain status NAME (ain list shows them)")
			}
			return a.runStatus(c.Context, c.Args().First(), out)
		},
	}
}

func (a *App) runStatus(ctx context.Context, name, out string) error {
	_, cl, job, pods, err := a.jobAndPods(ctx, name)
	if err != nil {
		return err
	}
	r := cl.Status(ctx, job, pods)
	if out == "json" {
		return a.writeJSON(r)
	}
	r.WriteText(a.Streams.Out, a.Now(), a.textOptions())
	return nil
}
