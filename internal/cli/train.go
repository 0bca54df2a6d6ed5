package cli

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	ucli "github.com/urfave/cli/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/ain-hpc/ain/pkg/ainerr"
	"github.com/ain-hpc/ain/pkg/bench"
	"github.com/ain-hpc/ain/pkg/jobs"
	"github.com/ain-hpc/ain/pkg/kube"
	"github.com/ain-hpc/ain/pkg/mpilauncher"
	"github.com/ain-hpc/ain/pkg/nccl"
	"github.com/ain-hpc/ain/pkg/profile"
	"github.com/ain-hpc/ain/pkg/recipe"
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
	if o.DryRun == "client" {
		objs, err := a.renderJob(r, p, o.API, o.Name)
		if err != nil {
			return err
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
	bo := jobs.Options{Name: o.Name, Namespace: a.Global.Namespace}
	if gangs := gangSchedulers(kc); jobs.OperatorGang(gangs) {
		bo.GangScheduling, bo.GangSchedulers = true, gangs
		fmt.Fprintln(a.Streams.Err, jobs.GangAssumption(be.API(), r, gangs))
	}
	b, err := be.Build(r, p, bo)
	if err != nil {
		return ainerr.New(ainerr.Usage, err, "")
	}
	fmt.Fprintf(a.Streams.Err, "job API: %s\n", be.API().Describe())
	cl := a.cluster(kc)
	ctx := c.Context
	if o.DryRun == "server" {
		res, skipped, err := cl.ApplyDryRun(ctx, b.Objects)
		if err != nil {
			return a.applyError(kc, err)
		}
		objs := make([]runtime.Object, len(res))
		for i, x := range res {
			objs[i] = x.Object
		}
		fmt.Fprintln(a.Streams.Err, "server dry run: the API server accepted it (schema and admission webhooks); nothing was created")
		for _, sk := range skipped {
			fmt.Fprintf(a.Streams.Err, "server dry run: %s not sent: %s\n", sk.What, sk.Why)
		}
		return a.printObjects(objs, o.Output)
	}
	a.sandboxNote(kc)
	if err := a.preflightGate(ctx, kc, r, p, be.API(), o.SkipPreflight); err != nil {
		return err
	}
	name := jobName(r, o.Name)
	kind := be.Kind()
	tw := a.wireBefore(ctx, kc, r, p, o)
	if tw != nil && ctx.Err() != nil {
		return ainerr.New(ainerr.Cancelled, errors.New("interrupted before the job was applied (while reading the RDMA counters; the probe pods are deleted): nothing was created"), "")
	}
	res, err := cl.Apply(ctx, b.Objects, false)
	if err != nil {
		return a.applyError(kc, err)
	}
	job := res[len(res)-1]
	if ctx.Err() != nil {
		return a.interruptedJob(ctx, kc, cl, kind, name, jobs.PhaseOf(job.Object), "while applying", o.DeleteOnInterrupt)
	}
	if job.Unchanged {
		fmt.Fprintf(a.Streams.Err, "%s %s/%s already submitted with this spec (%s): nothing changed; watching it\n", kind, kc.Namespace, name, jobs.PhaseOf(job.Object))
		if tw != nil {
			// It ran before the snapshot: the counters cannot tell what it sent.
			fmt.Fprintln(a.Streams.Err, "the job was running before the RDMA counters were read: no per-HCA bytes for it")
			tw = nil
		}
	} else {
		fmt.Fprintf(a.Streams.Err, "applied %s %s/%s (%s; server-side apply, field manager %s)\n", kind, kc.Namespace, name, describeShape(r, p), jobs.FieldManager)
	}
	if o.NoWait {
		fmt.Fprintf(a.Streams.Err, "follow it with: ain status %s%s   ain logs %s%s -f\n", name, nsFlag(kc.Namespace), name, nsFlag(kc.Namespace))
		return nil
	}
	return a.watchJob(ctx, kc, cl, be, name, o, tw)
}

func jobName(r *recipe.Recipe, override string) string {
	if override != "" {
		return override
	}
	return r.Metadata.Name
}

func describeShape(r *recipe.Recipe, p *profile.Profile) string {
	w := r.Workload()
	return fmt.Sprintf("%d node(s) x %d GPU, fabric %s", w.Nodes, w.GPUsPerNode, p.Spec.Fabric)
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

// watchJob follows the job to its end and prints the summary; the returned error carries the exit code.
//
// tw, when not nil, is the counter snapshot taken before the job: the nodes its ranks ran on are
// read again and the bytes per HCA reported (and judged against NCCL's transport).
func (a *App) watchJob(parent context.Context, kc *kube.Clients, cl *jobs.Cluster, be jobs.Backend, name string, o *trainOptions, tw *trainWire) error {
	kind := be.Kind()
	ctx := parent
	var cancel context.CancelFunc = func() {}
	if o.Timeout > 0 {
		ctx, cancel = context.WithTimeout(parent, o.Timeout)
	}
	defer cancel()
	start := a.Now()
	view := newJobView(a, start)
	defer view.stop()
	col := cl.NewCollector(kind, o.TailLines)
	snap, err := cl.Watch(ctx, be, name, jobs.WatchOptions{
		OnChange: view.update, Explain: cl.ExplainPending,
		OnPodFinished: func(p corev1.Pod) { col.Collect(parent, p) },
	})
	view.stop()
	var stuck *jobs.StuckError
	var stalled *jobs.ControllerStalledError
	if err != nil {
		switch {
		case parent.Err() != nil:
			return a.interruptedJob(parent, kc, cl, kind, name, snap.Phase, "while watching", o.DeleteOnInterrupt)
		case errors.As(err, &stalled):
			code := ainerr.CheckFailed
			if stalled.Outcome == "Failed" {
				code = ainerr.JobFailed
			}
			return ainerr.New(code, stalled, "`ain preflight` checks the job controllers; `ain logs "+name+nsFlag(kc.Namespace)+"` shows what the pods did")
		case errors.As(err, &stuck):
			return ainerr.New(ainerr.JobFailed, stuck, "read the failed worker's log: `ain logs "+name+" --replica worker"+nsFlag(kc.Namespace)+"`; then end the job: `ain delete "+name+nsFlag(kc.Namespace)+"`")
		case errors.Is(err, context.DeadlineExceeded):
			why := pendingReasons(snap, kc)
			msg := fmt.Sprintf("--timeout %s reached: %s %s/%s is %s", o.Timeout, kind, kc.Namespace, name, snap.Phase)
			if why != "" {
				msg += "\n" + why
			}
			return ainerr.New(ainerr.Timeout, errors.New(msg), "the job keeps running: `ain status "+name+nsFlag(kc.Namespace)+"`, or end it: `ain delete "+name+nsFlag(kc.Namespace)+"`")
		}
		return kc.Classify(err, "watching the job")
	}
	if snap.Phase == jobs.PhaseDeleted {
		return ainerr.New(ainerr.JobFailed, fmt.Errorf("%s %s/%s was deleted before it finished", kind, kc.Namespace, name), "")
	}
	pods, err := be.Pods(parent, cl, name)
	if err != nil {
		return kc.Classify(err, "reading the job's pods")
	}
	sum := cl.Summarize(parent, snap, pods, o.TailLines, col.Wait())
	if o.SaveLogs != "" {
		if dir, err := cl.SaveLogs(parent, o.SaveLogs, snap.Name, pods); err != nil {
			fmt.Fprintf(a.Streams.Err, "warning: saving logs: %v\n", err)
		} else {
			fmt.Fprintf(a.Streams.Err, "logs saved under %s\n", dir)
		}
	}
	var wire *bench.Wire
	if tw != nil {
		wire = a.wireAfter(parent, kc, tw, &sum)
	}
	if o.Output == "json" {
		if err := a.writeJSON(trainJobJSON{Summary: sum, Wire: wire}); err != nil {
			return err
		}
	} else {
		a.printSummary(sum, kc)
		a.printJobWire(wire)
	}
	return outcome(sum, o.RequireTransport, name, wire)
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

// outcome maps a summary to the exit status.
// A wire finding (the counters contradict NCCL's transport) fails --require-transport too: the
// job's logs claimed the fabric, its HCAs say otherwise.
func outcome(sum jobs.Summary, require, name string, wire *bench.Wire) error {
	if sum.Phase == jobs.PhaseFailed {
		return quiet(ainerr.JobFailed)
	}
	if require != "" && wire != nil && len(wire.Findings) > 0 {
		return ainerr.New(ainerr.CheckFailed, fmt.Errorf("--require-transport %s: the RDMA port counters contradict NCCL's log: %s", require, strings.Join(wire.Findings, "; ")),
			"see the bytes per HCA above; `ain doctor counters --node NODE` reads a node's counters")
	}
	if require != "" && sum.Transport != require {
		got := sum.Transport
		if got == "" {
			got = "unknown (no NCCL transport lines in the logs)"
		}
		return ainerr.New(ainerr.CheckFailed, fmt.Errorf("--require-transport %s: NCCL used %s", require, got),
			"see the evidence above; `ain doctor nccl-log "+name+nsFlag(sum.Namespace)+"` explains it per rank")
	}
	return nil
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
			fmt.Fprintf(w, "    fix: %s\n", p.Fix)
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
	a       *App
	start   time.Time
	mu      sync.Mutex
	last    *jobs.Snapshot
	lines   int
	podKeys map[string]string
	phase   string
	done    chan struct{}
	once    sync.Once
}

func newJobView(a *App, start time.Time) *jobView {
	v := &jobView{a: a, start: start, podKeys: map[string]string{}, done: make(chan struct{})}
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
	if v.a.Streams.IsTTY {
		v.redraw()
		return
	}
	el := clock(v.a.Now().Sub(v.start))
	w := v.a.Streams.Err
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
	out := b.String()
	v.lines = strings.Count(out, "\n")
	fmt.Fprint(w, out)
}
