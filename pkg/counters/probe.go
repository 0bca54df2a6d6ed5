package counters

import (
	"bytes"
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"

	"github.com/ain-hpc/ain/pkg/probe"
)

// NodeCounters is one node's RDMA port counters as a probe pod read them.
type NodeCounters struct {
	Node string
	Snap *Snapshot
	// Err says why there is no snapshot (the probe did not run, no counters).
	Err string
}

// ProbeNodes snapshots the RDMA port counters (sysfs counters and hw_counters) of the named
// nodes, one probe pod per node holding the RDMA resource, in parallel (one watch, one cleanup).
// `ain bench allreduce` takes one before and one after each run: the bytes each HCA carried.
func ProbeNodes(ctx context.Context, o probe.Options, nodes []string) []NodeCounters {
	run := probe.NewRun()
	pods := make([]*corev1.Pod, len(nodes))
	for i, n := range nodes {
		pods[i] = probe.Pod(o, run, probe.Spec{Kind: "counters", Name: fmt.Sprintf("ain-counters-%s-%d", run, i), Node: n, Script: ProbeCommand, RDMA: true, ResultMessage: true})
	}
	outs := probe.Run(ctx, o, run, pods)
	res := make([]NodeCounters, len(nodes))
	for i, out := range outs {
		res[i].Node = nodes[i]
		if out.Log == nil {
			res[i].Err = out.NotRun()
			continue
		}
		s, err := Parse(bytes.NewReader(out.Log))
		switch {
		case err != nil:
			res[i].Err = "reading the counters: " + err.Error()
		case len(s.Ports) == 0:
			res[i].Err = "no RDMA port counters in the probe's output"
		default:
			res[i].Snap = s
		}
	}
	return res
}
