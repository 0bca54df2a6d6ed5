package cli

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	ucli "github.com/urfave/cli/v2"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/ain-hpc/ain/internal/ainerr"
	"github.com/ain-hpc/ain/pkg/bench"
	"github.com/ain-hpc/ain/pkg/counters"
	"github.com/ain-hpc/ain/pkg/jobs"
	"github.com/ain-hpc/ain/pkg/kube"
	"github.com/ain-hpc/ain/pkg/profile"
	"github.com/ain-hpc/ain/pkg/recipe"
	"github.com/ain-hpc/ain/pkg/train"
)

// defaultTrainTimeout and defaultBenchTimeout bound a watch that nothing else ends (a job
// whose controller stopped updating it, a rank that never starts): the course's trainings and
// benches take minutes, and a longer run raises --timeout.
const (
	defaultTrainTimeout = 24 * time.Hour
	defaultBenchTimeout = 3 * time.Hour
)

type trainOptions struct {
	recipeInput
	Name              string
	NoWait            bool
	DryRun            string
	Output            string
	Timeout           time.Duration
	DeleteOnInterrupt bool
	SaveLogs          string
	RequireTransport  string
	TailLines         int
	SkipPreflight     bool
	NoCounters        bool
	GPUMetrics        bool
	API               string
	RequireBench      string
	BenchMaxAge       time.Duration
}

func (o *trainOptions) flags() []ucli.Flag {
	return append(o.recipeInput.flags(),
		&ucli.StringFlag{Name: "name", Usage: "job name (default: the recipe's metadata.name)", Destination: &o.Name},
		&ucli.BoolFlag{Name: "no-wait", Usage: "submit and return; follow later with ain status / ain logs -f", Destination: &o.NoWait},
		&ucli.StringFlag{Name: "dry-run", Usage: "client: print what would be applied; server: ask the API server (schema, webhooks) without creating", Destination: &o.DryRun},
		outputFlag(&o.Output, "", "with --dry-run: yaml or json; otherwise json prints the final summary as JSON", "yaml", "json"),
		&ucli.DurationFlag{Name: "timeout", Value: defaultTrainTimeout, Usage: "stop watching after this long (exit 6); the job keeps running. Raise it for longer trainings", Destination: &o.Timeout, Action: positiveDuration("timeout")},
		&ucli.BoolFlag{Name: "delete-on-interrupt", Usage: "on Ctrl-C, delete the job instead of leaving it running", Destination: &o.DeleteOnInterrupt},
		&ucli.StringFlag{Name: "save-logs", Usage: "save every pod's log under `DIR`/<job>/ when the job ends", Destination: &o.SaveLogs},
		&ucli.StringFlag{Name: "require-transport", Usage: "exit 5 unless every rank's NCCL used this transport (ib or roce), even if the job succeeded", Destination: &o.RequireTransport},
		&ucli.IntFlag{Name: "tail", Value: 20, Usage: "log lines shown for a failed replica", Destination: &o.TailLines},
		&ucli.BoolFlag{Name: "skip-preflight", Usage: "do not run the readiness preflight before submitting (said so in the output)", Destination: &o.SkipPreflight},
		&ucli.BoolFlag{Name: "no-counters", Usage: "do not snapshot the RDMA port counters of the job's nodes before and after it (the check that NCCL's traffic crossed the HCAs)", Destination: &o.NoCounters},
		&ucli.BoolFlag{Name: "gpu-metrics", Usage: "while the job runs, show each rank's GPU utilisation, SM and tensor activity, memory and power from the nodes' dcgm-exporters every 15s, and whether the job is GPU-bound or waiting", Destination: &o.GPUMetrics},
		&ucli.StringFlag{Name: "require-bench", Usage: "run only on nodes that a passing ain bench allreduce, saved under `DIR`, measured (course 12.1.5: validate the nodes first); refused when the last one is INVALID, stale, of another fabric or on too few nodes", Destination: &o.RequireBench},
		&ucli.DurationFlag{Name: "bench-max-age", Value: 24 * time.Hour, Usage: "with --require-bench: how old the bench may be (0: any age)", Destination: &o.BenchMaxAge, Action: nonNegativeDuration("bench-max-age")},
		apiFlag(&o.API),
	)
}

func (a *App) trainCommand() *ucli.Command {
	o := &trainOptions{}
	return &ucli.Command{
		Name:      "train",
		Usage:     "submit a job recipe (as a TrainJob, MPIJob or PyTorchJob: --api), watch it to the end, summarise (exit code = outcome)",
		ArgsUsage: "RECIPE",
		Description: "Server-side applies what `ain render` prints (field manager ain; re-running is idempotent), watches the\n" +
			"job and its pods, explains Pending pods, then reads every rank's log and reports the NCCL transport used.\n" +
			"On an RDMA fabric with two or more nodes, probe pods read the RDMA port counters of the candidate nodes\n" +
			"before the job is applied and of its ranks' nodes after it ends: the summary gives the bytes that crossed\n" +
			"each HCA, and a job whose NCCL log says IB/RoCE while a node's HCAs did not move, or moved on another HCA\n" +
			"than NCCL names, gets a problem (and fails --require-transport). --no-counters skips it.\n\n" +
			"Examples:\n" +
			"  ain train qlora\n" +
			"  ain train my-recipe.yaml --set nodes=2 --name exp-7 --no-wait\n" +
			"  ain train qlora --dry-run=server -o yaml\n" +
			"  ain train qlora --require-transport ib --save-logs ./logs",
		Flags:       o.flags(),
		Subcommands: []*ucli.Command{a.trainMergeCommand(), a.trainCompareCommand()},
		Action:      func(c *ucli.Context) error { return a.runTrain(c, o) },
	}
}

func (a *App) trainMergeCommand() *ucli.Command {
	o := &trainOptions{}
	var adapter, base, out string
	return &ucli.Command{
		Name:  "merge",
		Usage: "merge a LoRA adapter into its base model as a one-GPU job (course 12.2.3)",
		Description: "Runs the built-in qlora-merge recipe: loads BASE, applies ADAPTER with peft, merge_and_unload(), saves to OUT\n" +
			"on the shared volume.\n\nExample:\n  ain train merge --adapter /shared/adapters/qlora-qwen2.5-7b --base /shared/models/Qwen2.5-7B-Instruct",
		Flags: append(o.flags(),
			&ucli.StringFlag{Name: "adapter", Usage: "adapter directory on the shared volume", Required: true, Destination: &adapter},
			&ucli.StringFlag{Name: "base", Usage: "base model directory on the shared volume", Required: true, Destination: &base},
			&ucli.StringFlag{Name: "out", Usage: "output directory (default: ADAPTER-merged)", Destination: &out},
		),
		Action: func(c *ucli.Context) error {
			if c.NArg() > 0 {
				return ainerr.Usagef("merge takes no positional argument (got %s)", c.Args().First())
			}
			if out == "" {
				out = strings.TrimSuffix(adapter, "/") + "-merged"
			}
			o.File = "qlora-merge"
			extra := []string{"env.BASE_MODEL=" + base, "env.ADAPTER=" + adapter, "env.MERGED_OUT=" + out}
			o.Sets = *ucli.NewStringSlice(append(extra, o.Sets.Value()...)...)
			return a.runTrain(c, o)
		},
	}
}

func (a *App) runTrain(c *ucli.Context, o *trainOptions) error {
	switch o.DryRun {
	case "", "none", "client", "server":
	default:
		return ainerr.Usagef("--dry-run=%s: use client or server", o.DryRun)
	}
	switch o.RequireTransport {
	case "", profile.FabricIB, profile.FabricRoCE:
	default:
		return ainerr.Usagef("--require-transport %s: use ib or roce", o.RequireTransport)
	}
	r, p, err := o.load(c, a.Getenv)
	if err != nil {
		return err
	}
	if r.Serving != nil {
		return ainerr.Usagef("recipe %s is kind Serving: deploy it with `ain serve %s`", r.Metadata.Name, r.Metadata.Name)
	}
	a.printWarnings(r)
	validated, err := a.requireBench(c, o, r, p)
	if err != nil {
		return err
	}
	if o.DryRun == "client" {
		b, err := a.renderJob(r, p, o.API, o.Name)
		if err != nil {
			return err
		}
		if validated != nil {
			if err := bench.PinWorkers(b.Objects, validated.Nodes); err != nil {
				return ainerr.New(ainerr.Usage, err, "")
			}
		}
		return a.printObjects(b.Objects, o.Output)
	}
	if o.SaveLogs != "" && o.DryRun == "" {
		if err := writableDir("save-logs", o.SaveLogs); err != nil {
			return err
		}
	}
	kc, err := a.clients()
	if err != nil {
		return err
	}
	be, err := a.chooseBackend(kc, r, p, o.API)
	if err != nil {
		return err
	}
	cl := a.cluster(kc)
	w := a.Streams.Err
	runner := &train.Runner{
		Cluster: cl, Backend: be, GangSchedulers: jobs.GangSchedulers(kc.Discovery), Now: a.Now,
		Gate: func(ctx context.Context) error {
			a.sandboxNote(kc)
			return a.preflightGate(ctx, kc, r, p, be.API(), o.SkipPreflight)
		},
		Counters: func(ctx context.Context, nodes []string, when string) (map[string]*counters.Snapshot, map[string]string) {
			return a.snapshotCounters(ctx, kc, r, p, nodes, when)
		},
		Watch:    a.watchView(kc, o.GPUMetrics, false),
		Progress: func(e train.Event) { fmt.Fprintln(w, e) },
	}
	res, err := runner.Run(c.Context, train.Options{
		Recipe: r, Profile: p, Name: o.Name, Namespace: a.Global.Namespace,
		DryRunServer: o.DryRun == "server", NoWait: o.NoWait, Timeout: o.Timeout,
		DeleteOnInterrupt: o.DeleteOnInterrupt, SaveLogs: o.SaveLogs, RequireTransport: o.RequireTransport,
		TailLines: o.TailLines, NoCounters: o.NoCounters, Validated: validated,
	})
	switch {
	case res != nil && res.DryRun != nil:
		return a.printObjects(res.DryRun, o.Output)
	case res != nil && res.Submitted:
		fmt.Fprintf(w, "follow it with: ain status %s%s   ain logs %s%s -f\n", res.Name, nsFlag(kc.Namespace), res.Name, nsFlag(kc.Namespace))
		return nil
	case res != nil && res.Summary != nil:
		if o.Output == "json" {
			if jerr := a.writeJSON(train.SummaryJSON{Summary: *res.Summary, Wire: res.Wire}); jerr != nil {
				return jerr
			}
		} else {
			res.Summary.WriteText(a.Streams.Out, a.textOptions())
			train.WriteWireText(a.Streams.Out, res.Wire, a.Streams.IsTTY)
		}
	}
	return a.trainError(kc, err)
}

// requireBench finds the passing bench the job must run on (--require-bench, else the
// profile's spec.requireBench); nil when neither asks for one.
func (a *App) requireBench(c *ucli.Context, o *trainOptions, r *recipe.Recipe, p *profile.Profile) (*bench.Validation, error) {
	dir, maxAge, from := o.RequireBench, o.BenchMaxAge, "--require-bench"
	if rb := p.Spec.RequireBench; dir == "" && rb != nil {
		dir, from = rb.Results, "the profile's spec.requireBench"
		if !c.IsSet("bench-max-age") {
			maxAge = rb.BenchMaxAge()
		}
	}
	if dir == "" {
		return nil, nil
	}
	w := r.Workload()
	v, err := bench.Validate(dir, a.Now(), maxAge, p.Spec.Fabric, w.Nodes, w.GPUsPerNode)
	if err != nil {
		return nil, ainerr.New(ainerr.PreflightFailed, fmt.Errorf("%s: %w", from, err),
			fmt.Sprintf("validate the nodes first: ain bench allreduce --nodes %d --gpus-per-node %d --fabric %s --out %s/NAME (a new NAME each run), or drop %s",
				w.Nodes, w.GPUsPerNode, p.Spec.Fabric, dir, from))
	}
	return v, nil
}

// trainError maps a run's error to its exit code and the commands that help.
func (a *App) trainError(kc *kube.Clients, err error) error {
	if err == nil {
		return nil
	}
	ns := nsFlag(kc.Namespace)
	var (
		be        *train.BuildError
		ce        *train.ClusterError
		ie        *train.InterruptedError
		te        *train.TimeoutError
		de        *jobs.DeletedError
		fe        *train.JobFailedError
		tr        *train.TransportError
		immutable *jobs.ImmutableError
		stuck     *jobs.StuckError
		stalled   *jobs.ControllerStalledError
		pinned    *train.PinnedNodesError
	)
	switch {
	case errors.As(err, &be):
		return ainerr.New(ainerr.Usage, be.Err, "")
	case errors.As(err, &immutable):
		return ainerr.New(ainerr.Usage, err, fmt.Sprintf("run it under another name (--name %s-2), or remove the old one first: ain delete %s%s", immutable.Name, immutable.Name, nsFlag(immutable.Namespace)))
	case errors.As(err, &pinned):
		return ainerr.New(ainerr.PreflightFailed, err,
			"nothing was applied; bring the node back (kubectl uncordon NODE, or repair it), or validate nodes that are up with a new `ain bench allreduce --out DIR/NAME` run, or drop --require-bench")
	case errors.As(err, &ie):
		a.printInterrupted(ie)
		if ie.Stage == train.StageBeforeApply {
			return ainerr.New(ainerr.Cancelled, err, "")
		}
		return errInterrupted()
	case errors.As(err, &stalled):
		code := ainerr.CheckFailed
		if stalled.Outcome == "Failed" {
			code = ainerr.JobFailed
		}
		return ainerr.New(code, stalled, "`ain preflight` checks the job controllers; `ain logs "+stalled.Name+ns+"` shows what the pods did")
	case errors.As(err, &stuck):
		return ainerr.New(ainerr.JobFailed, stuck, "read the failed worker's log: `ain logs "+stuck.Name+" --replica worker"+ns+"`; then end the job: `ain delete "+stuck.Name+ns+"`")
	case errors.As(err, &te):
		msg := "--" + te.Error()
		if why := jobs.PendingReasons(te.Snapshot, jobs.GangSchedulers(kc.Discovery)); why != "" {
			msg += "\n" + why
		}
		return ainerr.New(ainerr.Timeout, errors.New(msg), "the job keeps running: `ain status "+te.Name+ns+"`, or end it: `ain delete "+te.Name+ns+"`")
	case errors.As(err, &de):
		return ainerr.New(ainerr.JobFailed, err, "")
	case errors.As(err, &fe):
		return quiet(ainerr.JobFailed)
	case errors.As(err, &tr) && len(tr.Findings) > 0:
		return ainerr.New(ainerr.CheckFailed, fmt.Errorf("--require-transport %s: the RDMA port counters contradict NCCL's log: %s", tr.Require, strings.Join(tr.Findings, "; ")),
			"see the bytes per HCA above; `ain doctor counters --node NODE` reads a node's counters")
	case errors.As(err, &tr):
		got := tr.Got
		if got == "" {
			got = "unknown (no NCCL transport lines in the logs)"
		}
		return ainerr.New(ainerr.CheckFailed, fmt.Errorf("--require-transport %s: NCCL used %s", tr.Require, got),
			"see the evidence above; `ain doctor nccl-log "+tr.Name+nsFlag(tr.Namespace)+"` explains it per rank")
	case errors.As(err, &ce):
		return kc.Classify(ce.Err, ce.Doing)
	}
	return err
}

func (a *App) applyError(kc *kube.Clients, err error) error {
	if errors.Is(err, context.Canceled) {
		// kube's Apply returns the interrupt only when it came before the first request.
		return ainerr.New(ainerr.Cancelled, errors.New("interrupted before the job was applied: nothing was created"), "")
	}
	var ie *jobs.ImmutableError
	if errors.As(err, &ie) {
		return ainerr.New(ainerr.Usage, err, fmt.Sprintf("run it under another name (--name %s-2), or remove the old one first: ain delete %s%s", ie.Name, ie.Name, nsFlag(ie.Namespace)))
	}
	return kc.Classify(err, "applying the job")
}

// textOptions are the terminal's choices for a library's text printer.
func (a *App) textOptions() jobs.TextOptions {
	return jobs.TextOptions{TTY: a.Streams.IsTTY, Fix: withNext}
}

func (a *App) printObjects(objs []runtime.Object, format string) error {
	if format == "" {
		format = "yaml"
	}
	out, err := jobs.Encode(objs, format)
	if err != nil {
		return ainerr.New(ainerr.Usage, err, "")
	}
	_, err = a.Streams.Out.Write(out)
	return err
}
