package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	ucli "github.com/urfave/cli/v2"

	"github.com/ain-hpc/ain/internal/ainerr"
	"github.com/ain-hpc/ain/pkg/bench"
	"github.com/ain-hpc/ain/pkg/counters"
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

// benchPlan is a bench.Plan with what the cluster decides once per bench.
type benchPlan struct {
	*bench.Plan
	// gangs: the gang schedulers the cluster serves that the job API can use (discovered once
	// per bench; empty: none), for jobs.Options.GangSchedulers.
	gangs []string
	// backend is the job API every variant is submitted as (chosen once per bench).
	backend jobs.Backend
}

func (a *App) planBench(c *ucli.Context, o *benchAllreduceOptions) (*benchPlan, error) {
	switch o.Output {
	case "", "text", "json":
	default:
		return nil, ainerr.Usagef("-o must be text or json, got %q", o.Output)
	}
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
	return &benchPlan{Plan: plan}, nil
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
	if plan.backend, err = a.chooseBackend(kc, plan.Recipes[0], p, o.API); err != nil {
		return err
	}
	fmt.Fprintf(a.Streams.Err, "job API: %s\n", plan.backend.API().Describe())
	gangs := jobs.GangSchedulers(kc.Discovery)
	if jobs.OperatorGang(gangs) {
		plan.gangs = gangs
	}
	if note := jobs.GangAssumption(plan.backend.API(), plan.Recipes[0], gangs); note != "" {
		fmt.Fprintln(a.Streams.Err, note)
	}
	parent := c.Context
	ctx := parent
	cancel := context.CancelFunc(func() {})
	if o.Timeout > 0 {
		ctx, cancel = context.WithTimeout(parent, o.Timeout)
	}
	defer cancel()
	start := a.Now()
	dir, err := bench.ResultDir(o.Out, start, plan.Name)
	if err != nil {
		return ainerr.New(ainerr.Usage, fmt.Errorf("--out: %w", err), "")
	}
	// The preflight (issue 6) checks the cluster for the first variant's shape; it is the same for all.
	if err := a.preflightGate(ctx, kc, plan.Recipes[0], p, plan.backend.API(), o.SkipPreflight); err != nil {
		_ = os.Remove(dir) // only if still empty
		return err
	}
	r0 := plan.Recipes[0]
	w := r0.Workload()
	res := plan.NewResult(kc.Namespace, start)
	names := make([]string, len(plan.Variants))
	for i, v := range plan.Variants {
		names[i] = v.Name
	}
	t := r0.MPI.NCCLTests
	errw := a.Streams.Err
	fmt.Fprintf(errw, "bench %s: %d variant(s) (%s) of all_reduce_perf -b %s -e %s -f %d on %d node(s) x %d GPU, fabric %s, line rate %s = %.4g GB/s per NIC\n",
		plan.Name, len(plan.Variants), strings.Join(names, ", "), t.MinBytes, t.MaxBytes, t.StepFactor, w.Nodes, w.GPUsPerNode, p.Spec.Fabric, p.Spec.LineRate, p.LineRateGBps())
	if len(plan.Variants) > 1 {
		fmt.Fprintf(errw, "the variants run one after another on the same nodes: each %s is deleted once its output is read, the next is pinned to the first one's nodes\n", plan.backend.Kind())
	}
	fmt.Fprintf(errw, "results: %s\n", dir)

	var counterSnaps func(context.Context, []string, string) (map[string]*counters.Snapshot, map[string]string)
	if p.RDMA() && !o.NoCounters && r0.Workload().Nodes > 1 {
		counterSnaps = func(ctx context.Context, nodes []string, when string) (map[string]*counters.Snapshot, map[string]string) {
			return a.snapshotCounters(ctx, kc, r0, p, nodes, when)
		}
	}
	runner := &bench.Runner{Cluster: cl, Backend: plan.backend, Namespace: a.Global.Namespace, ShownNamespace: kc.Namespace,
		GangSchedulers: plan.gangs, Keep: o.KeepJobs, Now: a.Now, Counters: counterSnaps,
		Watch: func(start time.Time) (func(jobs.Snapshot), func()) {
			view := jobs.NewView(a.Streams.Err, a.Streams.IsTTY, a.Now, start)
			return view.Update, view.Stop
		},
		Progress: func(e bench.Event) {
			if e.Kind == bench.EventStopped {
				if why := jobs.PendingReasons(*e.Snapshot, jobs.GangSchedulers(kc.Discovery)); why != "" {
					fmt.Fprintln(errw, why)
				}
			}
			fmt.Fprintln(errw, e)
		},
	}
	pinned, runErr := runner.Run(parent, ctx, plan.Plan, res)
	runErr = a.benchRunError(kc, runErr, o, dir)
	if runErr != nil && len(res.Variants) == 0 && !res.Interrupted {
		// Nothing ran (the first apply was refused, say): no report and no result.json, whose
		// "No variant ran" would only hide the error.
		_ = os.Remove(dir) // only if still empty
		return runErr
	}
	if p.RDMA() && len(pinned) > 0 && parent.Err() == nil {
		// "% of line rate" against what the ports on these nodes really run at, not only the
		// profile's lineRate (a 400Gb profile over 200 Gb/s ports called a healthy fabric broken).
		fmt.Fprintf(errw, "probing the ports of %s for their rate: busbw is judged against it\n", strings.Join(pinned, ","))
		if res.ProbeLineRate(parent, a.preflightOptions(kc, r0, p), pinned, p.Spec.HCAs) != nil && !res.Interrupted {
			res.Interrupted = true
			res.InterruptedNote = "after the last variant, while probing the ports' rate"
		}
	} else if parent.Err() != nil && runErr == nil && !res.Interrupted {
		res.Interrupted = true
		res.InterruptedNote = "after the last variant"
	}
	files, serr := res.Finish(a.Now(), dir)
	if serr != nil {
		fmt.Fprintf(errw, "warning: saving the results: %v\n", serr)
	}
	var outErr error
	if o.Output == "json" {
		outErr = a.writeJSON(res)
	} else {
		a.printBenchReport(res, files)
	}
	// The run's own error says more than a lost output; a lost output is still no success.
	if runErr != nil {
		return runErr
	}
	if res.Interrupted {
		return ainerr.New(ainerr.Cancelled, fmt.Errorf("interrupted %s: %s holds what was measured, with no verdict", res.InterruptedNote, dir), "")
	}
	if outErr != nil {
		return outErr
	}
	if !res.Valid && len(res.Variants) > 0 {
		return ainerr.New(ainerr.CheckFailed, fmt.Errorf("the bench result is INVALID: %s", strings.Join(res.Problems, "; ")),
			"`ain doctor nccl-log "+dir+"/"+res.Variants[0].Name+".log` explains the transport; fix it and run the bench again")
	}
	return nil
}

// benchRunError maps the Runner's typed errors to exit codes and hints.
func (a *App) benchRunError(kc *kube.Clients, err error, o *benchAllreduceOptions, dir string) error {
	var (
		te *bench.TimeoutError
		fe *bench.VariantFailedError
		be *bench.BuildError
		ae *bench.ApplyError
		ee *bench.JobExistsError
		de *jobs.DeletedError
		ce *bench.ClusterError
		se *jobs.StuckError
	)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, bench.ErrInterrupted):
		return errInterrupted()
	case errors.As(err, &te):
		return ainerr.New(ainerr.Timeout, fmt.Errorf("--timeout %s reached during variant %s", o.Timeout, te.Variant), "the partial results are saved; raise --timeout or run fewer variants")
	case errors.As(err, &fe):
		return ainerr.New(ainerr.JobFailed, fe, "its launcher output is in "+dir+"/"+fe.Variant+".log")
	case errors.As(err, &be):
		return ainerr.New(ainerr.Usage, be.Err, "")
	case errors.As(err, &ae):
		return a.applyError(kc, ae.Err)
	case errors.As(err, &ee):
		return ainerr.New(ainerr.Usage, ee, "delete it first: ain delete "+ee.Name)
	case errors.As(err, &de):
		return ainerr.New(ainerr.JobFailed, de, "")
	case errors.As(err, &se):
		return ainerr.New(ainerr.JobFailed, se, "the job was deleted; fix what made the worker fail and run the bench again")
	case errors.As(err, &ce):
		return kc.Classify(ce.Err, ce.Doing)
	}
	return err
}

// snapshotCounters reads the RDMA port counters of nodes (none given: r's candidate nodes) with
// probe pods (bench.SnapshotCounters), saying which nodes it reads.
func (a *App) snapshotCounters(ctx context.Context, kc *kube.Clients, r *recipe.Recipe, p *profile.Profile, nodes []string, when string) (map[string]*counters.Snapshot, map[string]string) {
	return bench.SnapshotCounters(ctx, a.preflightOptions(kc, r, p), nodes, func(nodes []string) {
		fmt.Fprintf(a.Streams.Err, "reading the RDMA port counters of %s (%s)\n", strings.Join(nodes, ","), when)
	})
}
