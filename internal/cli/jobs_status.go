package cli

import (
	"context"
	"fmt"
	"time"

	ucli "github.com/urfave/cli/v2"

	"github.com/ain-hpc/ain/internal/ainerr"
	"github.com/ain-hpc/ain/pkg/jobs"
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
	snap := jobs.SnapshotOf(job, pods)
	ex := cl.ExplainPending
	for i := range snap.Pods {
		if jobs.NeedsExplain(&snap.Pods[i]) {
			for j := range pods {
				if pods[j].Name == snap.Pods[i].Name {
					if e := ex(ctx, &pods[j]); e != "" {
						snap.Pods[i].Why = e
					}
				}
			}
		}
	}
	events := cl.Events(ctx, job.GetName(), pods, 12)
	var sum *jobs.Summary
	if jobs.Terminal(snap.Phase) {
		s := cl.Summarize(ctx, snap, pods, 10, nil)
		sum = &s
	}
	if out == "json" {
		return a.writeJSON(map[string]any{"job": snap, "events": events, "summary": sum})
	}
	w := a.Streams.Out
	fmt.Fprintf(w, "%s %s/%s: %s", snap.Kind, snap.Namespace, snap.Name, snap.Phase)
	if snap.Message != "" {
		fmt.Fprintf(w, " (%s)", snap.Message)
	}
	fmt.Fprintf(w, ", created %s ago\n", age(a.Now().Sub(snap.Created)))
	fmt.Fprintln(w, "Conditions:")
	for _, c := range snap.Conditions {
		fmt.Fprintf(w, "  %-11s %-5s %s  %s\n", c.Type, c.Status, c.LastTransitionTime.UTC().Format(time.RFC3339), c.Message)
	}
	fmt.Fprintln(w, "Pods:")
	rows := [][]string{}
	for _, p := range snap.Pods {
		st := p.State
		if p.Why != "" {
			st += " (" + p.Why + ")"
		}
		rows = append(rows, []string{replicaLabel(p), p.Name, p.Phase, fmt.Sprint(p.Ready), p.Node, fmt.Sprint(p.Restarts), st})
	}
	a.table([]string{"REPLICA", "POD", "PHASE", "READY", "NODE", "RESTARTS", "STATE"}, rows)
	if len(events) > 0 {
		fmt.Fprintln(w, "Recent events:")
		for _, e := range events {
			fmt.Fprintf(w, "  %s  %-7s %-18s %-28s %s\n", e.Time, e.Type, e.Reason, e.Object, e.Message)
		}
	}
	if sum != nil {
		fmt.Fprintf(w, "NCCL: ")
		if sum.Transport == "" {
			fmt.Fprintln(w, "no transport lines in the logs")
		} else {
			fmt.Fprintln(w, describeTransport(sum.Transport))
		}
		for _, p := range sum.Problems {
			fmt.Fprintf(w, "  problem: %s\n", p.Message)
			if p.Fix != "" {
				fmt.Fprintf(w, "    fix: %s\n", withNext(p.Fix, p.Next))
			}
		}
	}
	return nil
}
