package cli

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	ucli "github.com/urfave/cli/v2"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/ain-hpc/ain/internal/ainerr"
	"github.com/ain-hpc/ain/pkg/bench"
	"github.com/ain-hpc/ain/pkg/counters"
	"github.com/ain-hpc/ain/pkg/jobs"
	"github.com/ain-hpc/ain/pkg/kube"
	"github.com/ain-hpc/ain/pkg/mpilauncher"
	"github.com/ain-hpc/ain/pkg/nccl"
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
		objs, err := a.renderJob(r, p, o.API, o.Name)
		if err != nil {
			return err
		}
		if validated != nil {
			if err := bench.PinWorkers(objs, validated.Nodes); err != nil {
				return ainerr.New(ainerr.Usage, err, "")
			}
		}
		return a.printObjects(objs, o.Output)
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
		Cluster: cl, Backend: be, GangSchedulers: gangSchedulers(kc), Now: a.Now,
		Gate: func(ctx context.Context) error {
			a.sandboxNote(kc)
			return a.preflightGate(ctx, kc, r, p, be.API(), o.SkipPreflight)
		},
		Counters: func(ctx context.Context, nodes []string, when string) (map[string]*counters.Snapshot, map[string]string) {
			return a.snapshotCounters(ctx, kc, r, p, nodes, when)
		},
		Watch: func(start time.Time) (func(jobs.Snapshot), func()) {
			v := newJobView(a, start)
			return v.update, v.stop
		},
		Progress: func(e train.Event) {
			switch e.Kind {
			case train.EventGang, train.EventUnchanged, train.EventNoWire:
				fmt.Fprintln(w, e.Message)
			case train.EventAPI:
				fmt.Fprintf(w, "job API: %s\n", e.Message)
			case train.EventDryRun, train.EventDryRunSkipped:
				fmt.Fprintf(w, "server dry run: %s\n", e.Message)
			case train.EventApplied:
				fmt.Fprintf(w, "applied %s\n", e.Message)
			case train.EventValidated:
				fmt.Fprintf(w, "validated nodes: %s\n", e.Message)
			case train.EventLogsSaved:
				fmt.Fprintf(w, "logs saved under %s\n", e.Message)
			case train.EventWarning:
				fmt.Fprintf(w, "warning: %s\n", e.Message)
			}
		},
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
			if jerr := a.writeJSON(trainJobJSON{Summary: *res.Summary, Wire: res.Wire}); jerr != nil {
				return jerr
			}
		} else {
			a.printSummary(*res.Summary, kc)
			a.printJobWire(res.Wire)
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
		if why := pendingReasons(te.Snapshot, kc); why != "" {
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

func pendingReasons(s jobs.Snapshot, kc *kube.Clients) string {
	var lines []string
	for _, p := range s.Pods {
		if p.Why != "" {
			lines = append(lines, fmt.Sprintf("  %s: %s", p.Name, p.Why))
		}
	}
	if s.Waiting != "" {
		lines = append(lines, "  "+s.Waiting)
	}
	if note := jobs.GangNote(s, gangSchedulers(kc)); note != "" {
		lines = append(lines, "  "+note)
	}
	if len(s.Pods) == 0 {
		if s.Message != "" && strings.HasPrefix(s.Message, "no pods: ") {
			lines = append(lines, "  "+s.Message)
		} else if s.Phase == jobs.PhasePending {
			lines = append(lines, "  no pods yet: is the job's controller running? (ain preflight checks which job APIs the cluster serves)")
		}
	}
	return strings.Join(lines, "\n")
}

// gangSchedulers names the gang schedulers the cluster serves (none when discovery fails).
func gangSchedulers(kc *kube.Clients) []string {
	if kc == nil || kc.Discovery == nil {
		return nil
	}
	groups, err := kc.Discovery.ServerGroups()
	if err != nil {
		return nil
	}
	names := make([]string, 0, len(groups.Groups))
	for _, g := range groups.Groups {
		names = append(names, g.Name)
	}
	return jobs.GangAPIs(names)
}

// rankResult is a rank's RESULT cell: its exit code once its container ended, else its phase. A
// pod still Running or Pending when the job has ended says so: the operator decides a PyTorchJob's
// success by its master alone, and a worker may still be finishing (or be stopped by the
// cleanPodPolicy), which a bare "Running" under "Succeeded" left unexplained.
func rankResult(jobPhase string, p jobs.PodInfo) string {
	if p.ExitCode != nil {
		return fmt.Sprintf("exit %d", *p.ExitCode)
	}
	if jobs.Terminal(jobPhase) {
		switch p.Phase {
		case "Running":
			return "still running at job end"
		case "Pending":
			return "never started (job ended)"
		}
	}
	return p.Phase
}

func (a *App) printSummary(s jobs.Summary, kc *kube.Clients) {
	w := a.Streams.Out
	dur := ""
	if s.Duration > 0 {
		dur = " in " + s.Duration.Round(time.Second).String()
	}
	fmt.Fprintf(w, "\n%s %s/%s %s%s\n", s.Kind, s.Namespace, s.Name, s.Phase, dur)
	if s.Message != "" && s.Phase == jobs.PhaseFailed {
		fmt.Fprintf(w, "  %s\n", s.Message)
	}
	rows := [][]string{}
	for _, r := range s.Ranks {
		result := rankResult(s.Phase, r.PodInfo)
		gdr := "-"
		if r.GDR != nil {
			gdr = map[bool]string{true: "yes", false: "no"}[*r.GDR]
		}
		t := r.Transport
		if t == "" {
			t = "-"
		}
		rows = append(rows, []string{replicaLabel(r.PodInfo), r.Name, r.Node, result, t, gdr, strings.Join(r.Devices, ",")})
	}
	a.table([]string{"REPLICA", "POD", "NODE", "RESULT", "TRANSPORT", "GDR", "DEVICES"}, rows)
	switch {
	case s.Transport == "":
		fmt.Fprintln(w, "NCCL: no transport lines in the logs (set NCCL_DEBUG=INFO, as ain does by default, to verify the fabric)")
	case len(s.Problems) == 0:
		fmt.Fprintf(w, "NCCL: every rank used %s\n", describeTransport(s.Transport))
	default:
		fmt.Fprintf(w, "NCCL: %s\n", describeTransport(s.Transport))
	}
	for _, p := range s.Problems {
		fmt.Fprintf(w, "  problem: %s\n", p.Message)
		for _, e := range p.Lines {
			fmt.Fprintf(w, "    %s:%d: %s\n", e.File, e.Line, e.Text)
		}
		if p.Fix != "" {
			fmt.Fprintf(w, "    fix: %s\n", withNext(p.Fix, p.Next))
		}
	}
	if s.Phase == jobs.PhaseFailed {
		for _, r := range s.Ranks {
			if r.Replica != "launcher" {
				continue
			}
			// Failure 1 of the course (10.7.1): mpirun started before its workers were ready.
			if rep := r.Launcher; rep != nil && rep.Verdict == mpilauncher.VerdictLauncherBeforeWorkers {
				fmt.Fprintf(w, "\nlauncher started before workers were ready (%s):\n", strings.Join(rep.Hosts, ", "))
				for _, e := range rep.Evidence {
					fmt.Fprintf(w, "  | %s\n", e.Text)
				}
				fmt.Fprintf(w, "  fix: %s\n", rep.Fix)
			}
		}
		for _, r := range s.Ranks {
			if failed := r.Phase == "Failed" || (r.ExitCode != nil && *r.ExitCode != 0); !failed {
				continue
			}
			fmt.Fprintf(w, "\n%s (%s on %s) failed; its last %d lines:\n", r.Name, r.State, r.Node, len(r.LastLines))
			for _, l := range r.LastLines {
				fmt.Fprintf(w, "  | %s\n", l)
			}
		}
	}
}

// replicaLabel is "master-0", "worker-1", or "launcher" (which has no index).
func replicaLabel(p jobs.PodInfo) string {
	if p.Index < 0 {
		return p.Replica
	}
	return fmt.Sprintf("%s-%d", p.Replica, p.Index)
}

func describeTransport(t string) string {
	switch t {
	case nccl.TransportIB:
		return "ib (InfiniBand verbs)"
	case nccl.TransportRoCE:
		return "roce (RDMA over Converged Ethernet)"
	case nccl.TransportSocket:
		return "socket (TCP): the RDMA fabric was NOT used"
	case nccl.TransportNone:
		return "none (no network: single node, P2P/SHM only)"
	case "mixed":
		return "mixed: ranks used different transports"
	}
	return t
}

// jobView prints the job's progress: a live block redrawn on a TTY, one line per change otherwise.
type jobView struct {
	a        *App
	start    time.Time
	mu       sync.Mutex
	last     *jobs.Snapshot
	lines    int
	podKeys  map[string]string
	ranks    map[string]string // pod name -> its rank (replicaLabel), for every pod in the job
	departed map[string]string // rank -> the pod that left it, until another takes its place
	gone     []string          // what happened to pods that left the job while it ran
	phase    string
	done     chan struct{}
	once     sync.Once
}

func newJobView(a *App, start time.Time) *jobView {
	v := &jobView{a: a, start: start, podKeys: map[string]string{}, ranks: map[string]string{}, departed: map[string]string{}, done: make(chan struct{})}
	if a.Streams.IsTTY {
		go func() {
			t := time.NewTicker(time.Second)
			defer t.Stop()
			for {
				select {
				case <-v.done:
					return
				case <-t.C:
					v.mu.Lock()
					v.redraw()
					v.mu.Unlock()
				}
			}
		}()
	}
	return v
}

func (v *jobView) stop() { v.once.Do(func() { close(v.done) }) }

func (v *jobView) update(s jobs.Snapshot) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.last = &s
	left := v.departures(s)
	v.gone = append(v.gone, left...)
	if v.a.Streams.IsTTY {
		v.redraw()
		return
	}
	el := clock(v.a.Now().Sub(v.start))
	w := v.a.Streams.Err
	for _, l := range left {
		fmt.Fprintf(w, "%s    %s\n", el, l)
	}
	if s.Phase+s.Message != v.phase {
		v.phase = s.Phase + s.Message
		msg := ""
		if s.Message != "" {
			msg = ": " + s.Message
		}
		fmt.Fprintf(w, "%s  %s %s/%s %s%s\n", el, s.Kind, s.Namespace, s.Name, s.Phase, msg)
	}
	for _, p := range s.Pods {
		k := fmt.Sprintf("%s %s %v %d %s %s", p.Phase, p.Node, p.Ready, p.Restarts, p.State, p.Why)
		if v.podKeys[p.Name] == k {
			continue
		}
		v.podKeys[p.Name] = k
		fmt.Fprintf(w, "%s    %s\n", el, podLine(p))
	}
}

// departures says which pods seen before left the job while it ran, and which new pod took a
// departed one's rank (the operator replaced it): a rank's pod that vanishes mid-run is worth a
// line, not silence. Once the job has ended its pods go by design (clean-pod policy): not said.
func (v *jobView) departures(s jobs.Snapshot) []string {
	now := map[string]bool{}
	for _, p := range s.Pods {
		now[p.Name] = true
	}
	var out []string
	for name, rank := range v.ranks {
		if now[name] {
			continue
		}
		delete(v.ranks, name)
		delete(v.podKeys, name)
		if !jobs.Terminal(s.Phase) {
			v.departed[rank] = name
			out = append(out, fmt.Sprintf("%s (%s) left the job: deleted or evicted", name, rank))
		}
	}
	slices.Sort(out)
	for _, p := range s.Pods {
		rank := replicaLabel(p)
		if _, seen := v.ranks[p.Name]; !seen {
			if old, ok := v.departed[rank]; ok {
				delete(v.departed, rank)
				out = append(out, fmt.Sprintf("%s replaces %s as %s", p.Name, old, rank))
			}
		}
		v.ranks[p.Name] = rank
	}
	return out
}

func podLine(p jobs.PodInfo) string {
	s := fmt.Sprintf("%s: %s", p.Name, p.Phase)
	if p.Node != "" {
		s += " on " + p.Node
	}
	if p.Ready {
		s += ", ready"
	}
	if p.Restarts > 0 {
		s += fmt.Sprintf(", %d restarts", p.Restarts)
	}
	if p.Why != "" {
		s += " (" + p.Why + ")"
	}
	return s
}

func (v *jobView) redraw() {
	s := v.last
	if s == nil {
		return
	}
	w := v.a.Streams.Err
	if v.lines > 0 {
		fmt.Fprintf(w, "\x1b[%dA\x1b[J", v.lines)
	}
	now := v.a.Now()
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s/%s  %s  %s\n", s.Kind, s.Namespace, s.Name, s.Phase, clock(now.Sub(v.start)))
	if s.Message != "" && len(s.Pods) == 0 {
		fmt.Fprintf(&b, "  %s\n", s.Message)
	}
	fmt.Fprintf(&b, "  %-12s %-32s %-10s %-14s %-8s %s\n", "REPLICA", "POD", "PHASE", "NODE", "RESTARTS", "AGE")
	for _, p := range s.Pods {
		ph := p.Phase
		if p.Ready {
			ph += "*"
		}
		a := "-"
		if !p.Started.IsZero() {
			a = age(now.Sub(p.Started))
		}
		fmt.Fprintf(&b, "  %-12s %-32s %-10s %-14s %-8d %s\n", replicaLabel(p), p.Name, ph, p.Node, p.Restarts, a)
		if p.Why != "" {
			fmt.Fprintf(&b, "      %s\n", p.Why)
		}
	}
	for _, g := range v.gone[max(0, len(v.gone)-5):] { // the last few: the table must fit
		fmt.Fprintf(&b, "  %s\n", g)
	}
	out := b.String()
	v.lines = strings.Count(out, "\n")
	fmt.Fprint(w, out)
}
