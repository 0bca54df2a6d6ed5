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
	"github.com/ain-hpc/ain/pkg/jobs"
	"github.com/ain-hpc/ain/pkg/kube"
	"github.com/ain-hpc/ain/pkg/profile"
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
	validated, err := train.RequiredBench(train.BenchRequirement{Dir: o.RequireBench, MaxAge: o.BenchMaxAge, MaxAgeSet: c.IsSet("bench-max-age")}, r, p, a.Now())
	if err != nil {
		return ainerr.New(ainerr.PreflightFailed, err, hintOf(err))
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
		Counters: bench.CounterReader(a.preflightOptions(kc, r, p), func(l string) { fmt.Fprintln(w, l) }),
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

// trainError maps a run's error to its exit code and the commands that help.
func (a *App) trainError(kc *kube.Clients, err error) error {
	if be, ok := errors.AsType[*train.BuildError](err); ok {
		return ainerr.New(ainerr.Usage, be.Err, "")
	}
	if mapped, ok := libError(err, code[*jobs.ImmutableError](ainerr.Usage), code[*train.PinnedNodesError](ainerr.PreflightFailed)); ok {
		return mapped
	}
	if ie, ok := errors.AsType[*train.InterruptedError](err); ok {
		a.printInterrupted(ie)
		if ie.Stage == train.StageBeforeApply {
			return ainerr.New(ainerr.Cancelled, err, "")
		}
		return errInterrupted()
	}
	if st, ok := errors.AsType[*jobs.ControllerStalledError](err); ok && st.Outcome == "Failed" {
		return ainerr.New(ainerr.JobFailed, err, hintOf(st))
	}
	if te, ok := errors.AsType[*train.TimeoutError](err); ok {
		return ainerr.New(ainerr.Timeout, errors.New(strings.TrimSuffix("--"+te.Error()+"\n"+te.Pending, "\n")), hintOf(te))
	}
	if tr, ok := errors.AsType[*train.TransportError](err); ok {
		return ainerr.New(ainerr.CheckFailed, fmt.Errorf("--require-transport %s: %s", tr.Require, tr.Problem()), hintOf(tr))
	}
	if _, ok := errors.AsType[*train.JobFailedError](err); ok {
		return quiet(ainerr.JobFailed)
	}
	if ce, ok := errors.AsType[*train.ClusterError](err); ok {
		return kc.Classify(ce.Err, ce.Doing)
	}
	mapped, _ := libError(err, code[*jobs.ControllerStalledError](ainerr.CheckFailed), code[*jobs.StuckError](ainerr.JobFailed), code[*jobs.DeletedError](ainerr.JobFailed))
	return mapped
}

func (a *App) applyError(kc *kube.Clients, err error) error {
	if errors.Is(err, context.Canceled) {
		// kube's Apply returns the interrupt only when it came before the first request.
		return ainerr.New(ainerr.Cancelled, errors.New("interrupted before the job was applied: nothing was created"), "")
	}
	if mapped, ok := libError(err, code[*jobs.ImmutableError](ainerr.Usage)); ok {
		return mapped
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
