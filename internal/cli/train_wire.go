package cli

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/ain-hpc/ain/pkg/bench"
	"github.com/ain-hpc/ain/pkg/counters"
	"github.com/ain-hpc/ain/pkg/jobs"
	"github.com/ain-hpc/ain/pkg/kube"
	"github.com/ain-hpc/ain/pkg/nccl"
	"github.com/ain-hpc/ain/pkg/profile"
	"github.com/ain-hpc/ain/pkg/recipe"
)

// trainWire is the counter snapshot ain train takes before it submits the job, for the wire
// check once the job has ended (nil: no check).
//
// The "before" snapshot reads every candidate node before the job is applied, not the job's own
// nodes once its pods are scheduled: a probe pod needs its own scheduling and start, and by then
// the ranks may already be exchanging data (NCCL's init and the first steps), which the delta
// would miss. Reading before the apply misses nothing of the job; the "after" snapshot reads only
// the nodes its ranks ran on.
type trainWire struct {
	r      *recipe.Recipe
	p      *profile.Profile
	before map[string]*counters.Snapshot
	errs   map[string]string
}

// trainJobJSON is `ain train -o json`'s summary: the job's summary and, when the counters were
// read, what crossed each HCA of its nodes.
type trainJobJSON struct {
	jobs.Summary
	Wire *bench.Wire `json:"wire,omitempty"`
}

// wireBefore snapshots the counters of the job's candidate nodes, when the check applies: an
// RDMA fabric, several nodes, not --no-counters.
func (a *App) wireBefore(ctx context.Context, kc *kube.Clients, r *recipe.Recipe, p *profile.Profile, o *trainOptions) *trainWire {
	if o.NoCounters || o.NoWait || !p.RDMA() || r.Workload().Nodes < 2 {
		return nil
	}
	tw := &trainWire{r: r, p: p}
	tw.before, tw.errs = a.snapshotCounters(ctx, kc, r, p, nil, "before the job")
	return tw
}

// wireAfter snapshots the nodes the job's ranks ran on and compares them with the snapshot
// before. Only a job that succeeded is judged: a failed one may have died before its traffic.
func (a *App) wireAfter(ctx context.Context, kc *kube.Clients, tw *trainWire, sum *jobs.Summary) *bench.Wire {
	var nodes, devices []string
	for _, r := range sum.Ranks {
		if r.Replica == "launcher" || r.Node == "" { // mpirun's launcher sends no NCCL traffic
			continue
		}
		nodes = append(nodes, r.Node)
		devices = append(devices, r.Devices...)
	}
	slices.Sort(nodes)
	nodes = slices.Compact(nodes)
	slices.Sort(devices)
	devices = slices.Compact(devices)
	if len(nodes) == 0 {
		return nil
	}
	errs := maps.Clone(tw.errs)
	after := map[string]*counters.Snapshot{}
	if len(tw.before) > 0 { // else no delta can come of it: no probe pods for nothing
		var aerrs map[string]string
		after, aerrs = a.snapshotCounters(ctx, kc, tw.r, tw.p, nodes, "after the job")
		maps.Copy(errs, aerrs)
	}
	transport := sum.Transport
	if sum.Phase != jobs.PhaseSucceeded {
		transport = "" // reported, not judged
	}
	w := bench.CheckJobWire(transport, devices, nodes, tw.before, after, errs)
	if transport == "" && w.Note == "" && len(nodes) > 1 {
		w.Note = fmt.Sprintf("not judged: the job %s", strings.ToLower(sum.Phase))
		if sum.Phase == jobs.PhaseSucceeded {
			w.Note = "not judged: no NCCL transport in the logs"
		}
	}
	for _, f := range w.Findings {
		code, _, _ := strings.Cut(f, ": ")
		sum.Problems = append(sum.Problems, nccl.Finding{Code: code, Message: f,
			Fix: "`ain doctor counters --node NODE` reads a node's counters; `ain doctor nccl-log` explains the transport per rank"})
	}
	return w
}

// wireRows are the per-HCA rows of a wire check: node, port, bytes sent and received, and a note
// (NCCL's port, or why a node has no reading); bench and train print them.
func wireRows(wr *bench.Wire) [][]string {
	var rows [][]string
	for _, n := range wr.Nodes {
		if n.Err != "" {
			rows = append(rows, []string{n.Node, "-", "unknown", "unknown", n.Err})
			continue
		}
		for _, port := range slices.Sorted(maps.Keys(n.Ports)) {
			t := n.Ports[port]
			used := ""
			if slices.Contains(wr.Devices, port) {
				used = "NCCL's"
			}
			rows = append(rows, []string{n.Node, port, counters.HumanBytes(t.XmitBytes), counters.HumanBytes(t.RcvBytes), orDash(used)})
		}
	}
	return rows
}

// printJobWire prints the bytes that crossed each HCA of the job's nodes.
func (a *App) printJobWire(wr *bench.Wire) {
	if wr == nil {
		return
	}
	w := a.Streams.Out
	fmt.Fprintln(w, "\nbytes that crossed each HCA (RDMA port counters before the job was submitted and after it ended):")
	if rows := wireRows(wr); len(rows) > 0 {
		a.table([]string{"NODE", "PORT", "SENT", "RECEIVED", "NOTE"}, rows)
	}
	if wr.Note != "" {
		fmt.Fprintf(w, "  %s\n", wr.Note)
	}
	if wr.FloorBytes > 0 && len(wr.Findings) == 0 && wr.Note == "" { // a note: some node has no delta
		fmt.Fprintf(w, "  every node's RDMA ports moved (%s: the floor for a training job is more than nothing; ain cannot know its bytes)\n", orDash(strings.Join(wr.Devices, ",")))
	}
}
