package cli

import (
	"context"
	"fmt"
	"io"
	"time"

	ucli "github.com/urfave/cli/v2"

	"github.com/ain-hpc/ain/internal/ainerr"
	"github.com/ain-hpc/ain/pkg/demo"
	"github.com/ain-hpc/ain/pkg/sandbox"
)

type demoOptions struct {
	StateDir string
	Out      string
	Keep     bool
}

func (a *App) demoCommand() *ucli.Command {
	o := &demoOptions{}
	return &ucli.Command{
		Name:  "demo",
		Usage: "run the whole course flow on a local simulated cluster: sandbox, preflight, topology, train, bench (allreduce, two-node RDMA), serve, chat, release",
		Description: "Starts its own sandbox (a real Kubernetes control plane and the current stack's job controllers: mpi-operator,\n" +
			"JobSet, Kubeflow Trainer v2; simulated GPU/RDMA nodes), runs each course step as the ain command a user would type, shows its output, then prints what\n" +
			"passed and stops everything it started. The workloads, their logs and the model server are simulated.\n" +
			"The steps that need no cluster (a recipe's fields, what it renders to, NCCL's cost model, the doctor on a\n" +
			"recorded log) run first; on a first run the sandbox's components build meanwhile in the background (about\n" +
			"12 minutes cold) with a progress line: components done/total, elapsed, estimate.\n\n" +
			"Example:\n  ain demo\n  ain demo --out ./demo-results --keep",
		Flags: []ucli.Flag{
			&ucli.StringFlag{Name: "state-dir", Usage: "the demo sandbox's state folder (default: a new temporary folder)", Destination: &o.StateDir},
			&ucli.StringFlag{Name: "out", Usage: "where benchmark results and plots go (default: a new temporary folder)", Destination: &o.Out},
			&ucli.BoolFlag{Name: "keep", Usage: "leave the demo sandbox running at the end (stop it with ain sandbox down --state-dir DIR)", Destination: &o.Keep},
		},
		Action: func(c *ucli.Context) error { return a.runDemo(c.Context, o) },
	}
}

func (a *App) runDemo(ctx context.Context, o *demoOptions) error {
	if o.Out != "" {
		// Made if missing and checked before the sandbox starts (it said 'open DIR/course-qa.yaml:
		// no such file or directory', naming no flag, for a folder not there yet).
		if err := writableDir("out", o.Out); err != nil {
			return err
		}
	}
	cache, err := sandbox.CacheDir(a.Getenv)
	if err != nil {
		return err
	}
	w := a.Streams.Err
	res, err := demo.Run(ctx, demo.Options{StateDir: o.StateDir, Out: o.Out, Keep: o.Keep, Cache: cache,
		Getenv: a.Getenv, Now: time.Now, Run: a.demoStep, Event: func(e demo.Event) { e.WriteText(w) }})
	if err != nil {
		return err
	}
	res.WriteSummary(w, stepCode, o.Keep, ainCommand)
	switch {
	case res.Interrupted:
		return ainerr.New(ainerr.Cancelled, fmt.Errorf("interrupted"), "")
	case res.Failed() > 0:
		return quiet(ainerr.CheckFailed)
	}
	return nil
}

// demoStep runs one step of the demo as the command a user types, on this binary's command tree.
func (a *App) demoStep(ctx context.Context, args []string, getenv func(string) string, tee io.Writer) int {
	// The demo's banner already says what is simulated.
	child := &App{Streams: a.Streams, Now: a.Now, Getenv: getenv, sandboxNoted: true}
	if tee != nil {
		child.Streams.Out = io.MultiWriter(tee, a.Streams.Out)
	}
	return child.Run(ctx, append([]string{"ain"}, args...))
}

func stepCode(r demo.StepResult) int {
	if r.Err != nil {
		return int(ainerr.CodeOf(exitError(r.Err)))
	}
	return r.Code
}
