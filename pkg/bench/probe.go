package bench

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/ain-hpc/ain/pkg/counters"
	"github.com/ain-hpc/ain/pkg/perftest"
	"github.com/ain-hpc/ain/pkg/preflight"
	"github.com/ain-hpc/ain/pkg/probe"
)

// The cluster probes a benchmark runs beside its jobs, through pkg/probe's probe pods: the
// rate the benchmark's ports really run at, and the RDMA port counters before and after a job.

// PortProbeTimeout bounds the port-rate probe after the variants: it runs even when the bench's
// own deadline has passed (the variants measured are judged against it), so it has its own.
const PortProbeTimeout = 2 * time.Minute

// PortRates turns the IB port probe's view of some nodes into the ports' rates, and says why a
// node gave none ("node: why; ...").
func PortRates(nps []preflight.NodePorts) ([]PortRate, string) {
	var rates []PortRate
	var perr []string
	for _, np := range nps {
		if np.Err != "" {
			perr = append(perr, np.Node+": "+np.Err)
		}
		for _, pt := range np.Ports {
			r := ""
			if pt.Rate != nil {
				r = *pt.Rate
			}
			rates = append(rates, PortRate{Node: np.Node, Port: fmt.Sprintf("%s:%d", pt.Device, pt.Port), Rate: r, Active: pt.Ready})
		}
	}
	return rates, strings.Join(perr, "; ")
}

// ProbeLineRate probes the ports of nodes (the benchmark's) and makes res's line rate theirs
// (UseProbedRate, with the profile's hcas). It is bounded by PortProbeTimeout, not by ctx's
// deadline (the bench's --timeout must not cost the judgement of what it measured), and ends
// with ErrInterrupted when ctx is cancelled: the rate is then unknown and res is left as it was,
// for the caller to mark interrupted (no verdict on a rate nobody read). Call it before Summarize.
func (res *Result) ProbeLineRate(ctx context.Context, po probe.Options, nodes, hcas []string) error {
	pctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), PortProbeTimeout)
	defer cancel()
	stop := context.AfterFunc(ctx, func() {
		if errors.Is(ctx.Err(), context.Canceled) {
			cancel()
		}
	})
	defer stop()
	results := preflight.ProbePorts(pctx, po, nodes)
	if errors.Is(ctx.Err(), context.Canceled) {
		return ErrInterrupted
	}
	rates, perr := PortRates(results)
	res.UseProbedRate(rates, hcas, perr)
	return nil
}

// MaxSnapshotNodes bounds the counter snapshot before a first variant or a training job, whose
// nodes are not known yet (every candidate node is read); later variants are pinned to the
// first one's nodes.
const MaxSnapshotNodes = 32

// CounterReader is SnapshotCounters with po, saying on say which nodes it reads and when
// ("before ring"): a Runner's or a training's Counters.
func CounterReader(po preflight.Options, say func(string)) func(ctx context.Context, nodes []string, when string) (map[string]*counters.Snapshot, map[string]string) {
	return func(ctx context.Context, nodes []string, when string) (map[string]*counters.Snapshot, map[string]string) {
		return SnapshotCounters(ctx, po, nodes, func(nodes []string) {
			say(fmt.Sprintf("reading the RDMA port counters of %s (%s)", strings.Join(nodes, ","), when))
		})
	}
}

// SnapshotCounters reads the RDMA port counters of nodes with probe pods; with no nodes given,
// of every node the job could land on (po's candidate nodes, at most MaxSnapshotNodes). errs
// says why a node has no snapshot ("*": why there is none at all). progress, when not nil, is
// told which nodes are read before the probe pods start.
func SnapshotCounters(ctx context.Context, po preflight.Options, nodes []string, progress func(nodes []string)) (snaps map[string]*counters.Snapshot, errs map[string]string) {
	snaps, errs = map[string]*counters.Snapshot{}, map[string]string{}
	if len(nodes) == 0 {
		var checks []preflight.Check
		if nodes, checks = preflight.CandidateNodes(ctx, po); len(nodes) == 0 {
			for _, c := range checks {
				if c.Status != preflight.Pass {
					errs["*"] = c.Message
				}
			}
			return snaps, errs
		}
		if len(nodes) > MaxSnapshotNodes {
			errs["*"] = fmt.Sprintf("%d candidate nodes: too many to snapshot before the job (its nodes are not known yet)", len(nodes))
			return snaps, errs
		}
	}
	if progress != nil {
		progress(nodes)
	}
	for _, nc := range counters.ProbeNodes(ctx, po.ProbeOptions(), nodes) {
		if nc.Snap != nil {
			snaps[nc.Node] = nc.Snap
		} else {
			errs[nc.Node] = nc.Err
		}
	}
	return snaps, errs
}

// ChoosePort fills in what the flags and the profile left open of cmd from the server's probed
// ports, and records the choice in r (Device, GIDIndex, GIDIndexSource, Notes): the device is
// the server's first ACTIVE port (perftest's own default, the first device found, may be a port
// that is down). On RoCE without a fixed GID index (--gid-index, a numeric gidIndex in the
// profile: the caller sets cmd.GIDIndex and r.GIDIndexSource) each pod chooses its own -x at
// start from its own address (perftest.Command.GIDFromAddress): on a shared port (RDMA shared
// device plugin + macvlan) every pod's GID sits at a different index, so an index taken from
// the probe pod fits the probe pod only; UseGIDChoices records what the pods chose.
func (r *RDMAResult) ChoosePort(cmd *perftest.Command, server preflight.NodePorts, roce bool) {
	if cmd.Device == "" {
		for _, p := range server.Ports {
			if p.Ready {
				cmd.Device = p.Device
				if p.Port != 1 {
					cmd.Port = p.Port
				}
				r.Notes = append(r.Notes, fmt.Sprintf("device %s:%d: the first ACTIVE port the probe saw on %s (set hcas in the profile or --device to choose)", p.Device, p.Port, r.Server))
				break
			}
		}
	}
	switch {
	case cmd.GIDIndex == nil && roce:
		cmd.GIDFromAddress = true
		r.GIDIndexSource = GIDInPodSource
	case cmd.GIDIndex != nil && r.GIDIndexSource == "":
		r.GIDIndexSource = "--gid-index or the profile's gidIndex"
	}
	r.Device, r.GIDIndex = cmd.Device, cmd.GIDIndex
}
