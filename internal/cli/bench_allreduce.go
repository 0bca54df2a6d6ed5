package cli

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"time"

	ucli "github.com/urfave/cli/v2"

	"github.com/ain-hpc/ain/internal/ainerr"
	"github.com/ain-hpc/ain/pkg/bench"
	"github.com/ain-hpc/ain/pkg/jobs"
	"github.com/ain-hpc/ain/pkg/kube"
	"github.com/ain-hpc/ain/pkg/profile"
	"github.com/ain-hpc/ain/pkg/recipe"
)

// benchAllreduceOptions are the flags of `ain bench allreduce`.
type benchAllreduceOptions struct {
	recipeInput
	Algo          string
	Proto         string
	QPs           string
	Nodes         int
	GPUsPerNode   int
	Min, Max      string
	Factor        int
	Iters         int
	Out           string
	Name          string
	Timeout       time.Duration
	Output        string
	SkipPreflight bool
	KeepJobs      bool
	NoCounters    bool
	GPUMetrics    bool
	API           string
}

func (o *benchAllreduceOptions) flags() []ucli.Flag {
	return append(o.recipeInput.flags(),
		&ucli.StringFlag{Name: "algo", Value: "auto", Usage: "NCCL_ALGO variants: auto (NCCL chooses), ring, tree, a list (ring,tree) or all (auto,ring,tree)", Destination: &o.Algo},
		&ucli.StringFlag{Name: "proto", Usage: "NCCL_PROTO variants: simple, ll, ll128, or a list (default: NCCL chooses)", Destination: &o.Proto},
		&ucli.StringFlag{Name: "qps", Usage: "NCCL_IB_QPS_PER_CONNECTION sweep, e.g. 1,2,4,8 (course 10.6.2)", Destination: &o.QPs},
		&ucli.IntFlag{Name: "nodes", Usage: "MPI workers, one per node", DefaultText: "the recipe's", Destination: &o.Nodes, Action: intBetween("nodes", 1, recipe.MaxNodes)},
		&ucli.IntFlag{Name: "gpus-per-node", Usage: "ranks per node", DefaultText: "the recipe's", Destination: &o.GPUsPerNode, Action: intBetween("gpus-per-node", 1, 64)},
		&ucli.StringFlag{Name: "min", Usage: "smallest message size, -b (8, 1K, 64M)", DefaultText: "the recipe's, 8", Destination: &o.Min},
		&ucli.StringFlag{Name: "max", Usage: "largest message size, -e", DefaultText: "the recipe's, 8G", Destination: &o.Max},
		&ucli.IntFlag{Name: "factor", Usage: "size step factor, -f", DefaultText: "the recipe's, 2", Destination: &o.Factor},
		&ucli.IntFlag{Name: "iters", Usage: "timed iterations per size, -n", DefaultText: "nccl-tests' 20", Destination: &o.Iters},
		&ucli.StringFlag{Name: "out", Usage: "result folder, never overwritten (default: ./ain-results/<timestamp>-<name>/)", Destination: &o.Out},
		&ucli.StringFlag{Name: "name", Usage: "bench name, prefix of the job names (default: the recipe's metadata.name)", Destination: &o.Name},
		&ucli.DurationFlag{Name: "timeout", Value: defaultBenchTimeout, Usage: "give up after this long for the whole bench (exit 6); the running job is deleted", Destination: &o.Timeout, Action: positiveDuration("timeout")},
		outputFlag(&o.Output, "text", "text, or json (the whole result, raw output included)", "json"),
		&ucli.BoolFlag{Name: "skip-preflight", Usage: "do not run the cluster preflight (ain preflight) before the first job", Destination: &o.SkipPreflight},
		&ucli.BoolFlag{Name: "no-counters", Usage: "do not snapshot the RDMA port counters of the job's nodes before and after each variant (the check that NCCL's traffic crossed the HCAs)", Destination: &o.NoCounters},
		&ucli.BoolFlag{Name: "gpu-metrics", Usage: "while each variant runs, show each rank's GPU utilisation, SM and tensor activity, memory and power from the nodes' dcgm-exporters every 15s (no verdict: an allreduce waits on the network by design)", Destination: &o.GPUMetrics},
		&ucli.BoolFlag{Name: "keep-jobs", Usage: "keep each variant's job after reading its output (default: delete it so the next variant gets the nodes)", Destination: &o.KeepJobs},
		apiFlag(&o.API),
	)
}

func (a *App) benchAllreduceCommand() *ucli.Command {
	o := &benchAllreduceOptions{}
	return &ucli.Command{
		Name:      "allreduce",
		Usage:     "run nccl-tests all_reduce_perf as MPIJobs (algorithm/protocol/QP variants), judge against line rate and the cost model, save and plot",
		ArgsUsage: "[RECIPE] (default: the built-in allreduce recipe)",
		Description: "nccl-tests has no algorithm flag: each variant is an MPIJob with its NCCL environment (NCCL_ALGO,\n" +
			"NCCL_PROTO, NCCL_IB_QPS_PER_CONNECTION) on top of the profile's fabric settings. The variants run one after\n" +
			"another on the same nodes (later jobs are pinned to the first one's nodes; each job is deleted once its\n" +
			"output is read). For each variant the launcher's output is parsed: the nccl-tests table, the out-of-bounds\n" +
			"check, the NCCL transport (a socket fallback on an ib/roce fabric makes the result INVALID) and NCCL's\n" +
			"algorithm/protocol per size (TUNING lines). The report puts the variants side by side per size, gives\n" +
			"the peak busbw against the line rate (the profile's NIC rate / 8, times the NICs per node: the profile's\n" +
			"hcas, else one per GPU), the cost model's prediction and the largest deviation, the ring/tree crossover\n" +
			"measured and predicted, and a verdict.\n" +
			"Results go to --out: result.json (everything, raw output included), result.csv, busbw.png, busbw.svg and\n" +
			"each variant's launcher log.\n\n" +
			"Examples:\n" +
			"  ain bench allreduce --algo ring\n" +
			"  ain bench allreduce --algo all\n" +
			"  ain bench allreduce --qps 1,2,4,8\n" +
			"  ain bench allreduce --proto simple,ll128 --nodes 3 --gpus-per-node 1 --min 8 --max 1G --factor 2 --iters 20\n" +
			"  ain bench allreduce --fabric socket          # the TCP baseline\n\n" +
			"The cluster preflight (`ain preflight`: nodes, RDMA resources, IB ports, ...) runs first unless --skip-preflight.\n\n" +
			"Exit status: 0; 3 a job failed; 4 preflight failed; 5 a result is invalid (socket fallback, wrong values,\n" +
			"unverifiable transport); 6 --timeout; 2 bad flags or recipe.",
		Flags: o.flags(),
		Action: func(c *ucli.Context) error {
			if c.NArg() == 0 && o.File == "" {
				o.File = "allreduce"
			}
			return a.runBenchAllreduce(c, o)
		},
	}
}

func (a *App) planBench(c *ucli.Context, o *benchAllreduceOptions) (*bench.Plan, error) {
	load := func(sets []string) (*recipe.Recipe, *profile.Profile, error) {
		in := o.recipeInput
		in.Sets = *ucli.NewStringSlice(sets...)
		return in.load(c, a.Getenv)
	}
	plan, err := bench.NewPlan(bench.PlanInput{Algo: o.Algo, Proto: o.Proto, QPs: o.QPs,
		Shape: bench.Shape{Nodes: o.Nodes, GPUsPerNode: o.GPUsPerNode, MinBytes: o.Min, MaxBytes: o.Max, StepFactor: o.Factor, Iters: o.Iters},
		Sets:  o.Sets.Value(), Name: o.Name}, load)
	if err != nil {
		// load's errors carry their code; the plan's own (flags, --set, recipe kind) are usage errors.
		var ae *ainerr.Error
		if errors.As(err, &ae) {
			return nil, err
		}
		return nil, ainerr.New(ainerr.Usage, err, "")
	}
	a.printWarnings(plan.Recipes[0])
	return plan, nil
}

func (a *App) runBenchAllreduce(c *ucli.Context, o *benchAllreduceOptions) error {
	plan, err := a.planBench(c, o)
	if err != nil {
		return err
	}
	p := plan.Profile
	kc, err := a.clients()
	if err != nil {
		return err
	}
	cl := a.cluster(kc)
	a.sandboxNote(kc)
	r0 := plan.Recipes[0]
	backend, err := a.chooseBackend(kc, r0, p, o.API)
	if err != nil {
		return err
	}
	fmt.Fprintf(a.Streams.Err, "job API: %s\n", backend.API().Describe())
	errw := a.Streams.Err
	runner := &bench.Runner{Cluster: cl, Backend: backend, Namespace: a.Global.Namespace, ShownNamespace: kc.Namespace, Keep: o.KeepJobs, Now: a.Now,
		Watch: a.watchView(kc, o.GPUMetrics, true),
		Progress: func(e bench.Event) {
			if e.Kind == bench.EventStopped {
				if why := jobs.PendingReasons(*e.Snapshot, jobs.GangSchedulers(kc.Discovery)); why != "" {
					fmt.Fprintln(errw, why)
				}
			}
			fmt.Fprintln(errw, e)
		},
	}
	s := &bench.Session{Runner: runner, Probe: a.preflightOptions(kc, r0, p), Say: func(l string) { fmt.Fprintln(errw, l) },
		Gate: func(ctx context.Context) error {
			return a.preflightGate(ctx, kc, r0, p, backend.API(), o.SkipPreflight)
		}}
	rep, runErr := s.Run(c.Context, bench.SessionOptions{Plan: plan, Out: o.Out, Timeout: o.Timeout, NoCounters: o.NoCounters, Gangs: jobs.GangSchedulers(kc.Discovery)})
	var (
		oe *bench.OutDirError
		ge *bench.PreflightError
	)
	switch {
	case errors.As(runErr, &oe):
		return ainerr.New(ainerr.Usage, fmt.Errorf("--out: %w", oe.Err), "")
	case errors.As(runErr, &ge):
		return ge.Err
	}
	runErr = a.benchRunError(kc, runErr, o)
	res := rep.Result
	if res == nil {
		return runErr
	}
	if rep.SaveErr != nil {
		fmt.Fprintf(errw, "warning: saving the results: %v\n", rep.SaveErr)
	}
	var outErr error
	if o.Output == "json" {
		outErr = a.writeJSON(res)
	} else {
		a.printBenchReport(res, rep.Files)
	}
	// The run's own error says more than a lost output; a lost output is still no success.
	verdict := rep.Verdict()
	if _, ok := errors.AsType[*bench.InterruptedResultError](verdict); ok && runErr == nil {
		return ainerr.New(ainerr.Cancelled, verdict, "")
	}
	verdict, _ = libError(verdict, code[*bench.InvalidResultError](ainerr.CheckFailed))
	return cmp.Or(runErr, outErr, verdict)
}

// printBenchReport prints a bench result with the suggested commands worded as ain's.
func (a *App) printBenchReport(res *bench.Result, files []string) {
	res.WriteText(a.Streams.Out, bench.TextOptions{TTY: a.Streams.IsTTY, Next: runText, Saved: files})
}

// benchRunError maps the Runner's typed errors to exit codes and hints.
func (a *App) benchRunError(kc *kube.Clients, err error, o *benchAllreduceOptions) error {
	if te, ok := errors.AsType[*bench.TimeoutError](err); ok {
		return ainerr.New(ainerr.Timeout, fmt.Errorf("--timeout %s reached during variant %s", o.Timeout, te.Variant), hintOf(te))
	}
	if be, ok := errors.AsType[*bench.BuildError](err); ok {
		return ainerr.New(ainerr.Usage, be.Err, "")
	}
	if ae, ok := errors.AsType[*bench.ApplyError](err); ok {
		return a.applyError(kc, ae.Err)
	}
	if se, ok := errors.AsType[*jobs.StuckError](err); ok { // the Runner wraps it in a ClusterError
		return ainerr.New(ainerr.JobFailed, se, "the job was deleted; fix what made the worker fail and run the bench again")
	}
	if ce, ok := errors.AsType[*bench.ClusterError](err); ok {
		return kc.Classify(ce.Err, ce.Doing)
	}
	if errors.Is(err, bench.ErrInterrupted) {
		return errInterrupted()
	}
	mapped, _ := libError(err, code[*bench.VariantFailedError](ainerr.JobFailed), code[*bench.JobExistsError](ainerr.Usage), code[*jobs.DeletedError](ainerr.JobFailed))
	return mapped
}
