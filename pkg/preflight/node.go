package preflight

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ain-hpc/ain/pkg/counters"
	"github.com/ain-hpc/ain/pkg/topo"
)

// NodeInterruptedError is a probe of one node stopped by ctx: Started says a probe pod had been
// created (probe.Run deletes its pods also when ctx is cancelled), Between that the first of two
// counter snapshots was taken.
type NodeInterruptedError struct{ Started, Between bool }

func (e *NodeInterruptedError) Error() string {
	switch {
	case e.Between:
		return "interrupted between the snapshots: the first probe pod was deleted, no second one made"
	case e.Started:
		return "interrupted: probe pods deleted"
	}
	return "interrupted before a probe pod was created: nothing was left"
}

// NodeGetError is a node that could not be read (no such node, no right to get nodes, no answer).
type NodeGetError struct {
	Node string
	Err  error
}

func (e *NodeGetError) Error() string { return "get node " + e.Node + ": " + e.Err.Error() }
func (e *NodeGetError) Unwrap() error { return e.Err }

// NodeProbeError is a probe of Node that gave no result: its command can still be run on the node
// by hand.
type NodeProbeError struct {
	Node string
	Err  error
}

func (e *NodeProbeError) Error() string { return e.Err.Error() }
func (e *NodeProbeError) Unwrap() error { return e.Err }

// GPUsHeldError is a node whose GPUs running pods hold all of: a probe pod asking for some is
// refused by the kubelet, and nvidia-smi shows only the GPUs its pod holds.
type GPUsHeldError struct {
	Node, Resource string
	Use            NodeUse
}

func (e *GPUsHeldError) Error() string {
	return fmt.Sprintf("all %d %s of %s are held by running pods (%s): a probe pod would get none, and nvidia-smi shows only the GPUs its pod holds",
		e.Use.Allocatable, e.Resource, e.Node, strings.Join(e.Use.Holders, ", "))
}

// getNode reads node; an error while ctx is done is an interrupt before any probe pod.
func getNode(ctx context.Context, o Options, node string) (*corev1.Node, error) {
	n, err := o.Kube.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
	switch {
	case err != nil && ctx.Err() != nil:
		return nil, &NodeInterruptedError{}
	case err != nil:
		return nil, &NodeGetError{Node: node, Err: err}
	}
	return n, nil
}

// NodeTopology runs `nvidia-smi topo -m` on node in a probe pod holding its free GPUs (o.Profile's
// GPU resource) and the RDMA resource, and parses what it printed. progress gets one line before
// the probe. Errors: *NodeGetError, *GPUsHeldError, *NodeProbeError, *NodeInterruptedError, or
// the probe output's parse error.
func NodeTopology(ctx context.Context, o Options, node string, progress func(string)) (*topo.Topology, error) {
	n, err := getNode(ctx, o, node)
	if err != nil {
		return nil, err
	}
	gpu := o.Profile.Spec.GPUResource
	use, err := UseOnNode(ctx, o.Kube, n, gpu)
	switch {
	case err != nil && ctx.Err() != nil:
		return nil, &NodeInterruptedError{}
	case err != nil:
		return nil, &NodeProbeError{Node: node, Err: fmt.Errorf("reading the pods on %s: %w", node, err)}
	}
	gpus := use.Free()
	switch {
	case use.Allocatable > 0 && gpus == 0:
		return nil, &GPUsHeldError{Node: node, Resource: gpu, Use: use}
	case gpus < use.Allocatable:
		progress(fmt.Sprintf("probing %s: nvidia-smi topo -m in a pod holding the %d free GPU(s) of %d (%s hold the rest): the matrix shows only those (image %s)",
			node, gpus, use.Allocatable, strings.Join(use.Holders, ", "), o.ProbeImage))
	default:
		progress(fmt.Sprintf("probing %s: nvidia-smi topo -m in a pod holding its %d GPU(s) (image %s)", node, gpus, o.ProbeImage))
	}
	out, err := ProbeTopology(ctx, o.ProbeOptions(), node, gpus)
	switch {
	case ctx.Err() != nil:
		return nil, &NodeInterruptedError{Started: true}
	case err != nil:
		return nil, &NodeProbeError{Node: node, Err: err}
	}
	t, err := topo.Parse(bytes.NewReader(out))
	if err != nil {
		return nil, fmt.Errorf("the probe's output on %s: %w", node, err)
	}
	return t, nil
}

// NodeCounterSnapshots takes node's RDMA port counters with a probe pod (counters.ProbeNodes) and, when
// interval is not 0, again interval later (the workload runs meanwhile): one snapshot or two.
// progress gets a line before each snapshot and the wait. Errors: *NodeGetError,
// *NodeProbeError, *NodeInterruptedError.
func NodeCounterSnapshots(ctx context.Context, o Options, node string, interval time.Duration, progress func(string)) ([]*counters.Snapshot, error) {
	if _, err := getNode(ctx, o, node); err != nil {
		return nil, err
	}
	take := func(which string) (*counters.Snapshot, error) {
		progress(fmt.Sprintf("%s snapshot of %s's RDMA port counters (probe pod, image %s)", which, node, o.ProbeImage))
		res := counters.ProbeNodes(ctx, o.ProbeOptions(), []string{node})
		switch {
		case ctx.Err() != nil:
			return nil, &NodeInterruptedError{Started: true}
		case res[0].Err != "":
			return nil, &NodeProbeError{Node: node, Err: fmt.Errorf("%s: %s", node, res[0].Err)}
		}
		return res[0].Snap, nil
	}
	before, err := take("first")
	if err != nil {
		return nil, err
	}
	if interval == 0 {
		return []*counters.Snapshot{before}, nil
	}
	progress(fmt.Sprintf("waiting %s before the second snapshot (run the workload now)", interval))
	select {
	case <-ctx.Done():
		return nil, &NodeInterruptedError{Started: true, Between: true}
	case <-time.After(interval):
	}
	after, err := take("second")
	if err != nil {
		return nil, err
	}
	return []*counters.Snapshot{before, after}, nil
}
