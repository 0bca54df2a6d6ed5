package preflight

import (
	"context"
	"fmt"

	"github.com/ain-hpc/ain/pkg/probe"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// TopologyCommand is what the topology probe runs on a GPU node.
const TopologyCommand = "nvidia-smi topo -m"

// DefaultTopologyImage runs the topology probe. nvidia-smi is a glibc binary that the NVIDIA
// container toolkit mounts into a container requesting GPUs when NVIDIA_DRIVER_CAPABILITIES
// includes "utility"; busybox cannot run it, a CUDA base image can and sets the capabilities.
const DefaultTopologyImage = "nvcr.io/nvidia/cuda:12.4.1-base-ubuntu22.04"

const probeTopo = "topology"

// ProbeTopology runs `nvidia-smi topo -m` in a pod pinned to node that holds gpus GPUs (all of
// the node's, so the matrix shows every GPU) and the RDMA resource (so it shows the NICs a rank
// sees), and returns what it printed. o.Image defaults to DefaultTopologyImage here.
func ProbeTopology(ctx context.Context, o probe.Options, node string, gpus int64) ([]byte, error) {
	if o.Image == "" {
		o.Image = DefaultTopologyImage
	}
	o = o.Defaults()
	if gpus < 1 {
		return nil, fmt.Errorf("node %s has no %s allocatable: nothing for nvidia-smi to show", node, o.GPUResource)
	}
	run := probe.NewRun()
	env := []corev1.EnvVar{{Name: "NVIDIA_DRIVER_CAPABILITIES", Value: "utility"}}
	pod := probe.Pod(o, run, probe.Spec{Kind: probeTopo, Name: "ain-topo-" + run, Node: node, Script: TopologyCommand, Env: env, RDMA: true})
	c := &pod.Spec.Containers[0]
	g := *resource.NewQuantity(gpus, resource.DecimalSI)
	c.Resources.Requests[corev1.ResourceName(o.GPUResource)] = g
	c.Resources.Limits[corev1.ResourceName(o.GPUResource)] = g
	c.Resources.Limits[corev1.ResourceMemory] = resource.MustParse("256Mi")
	outs := probe.Run(ctx, o, run, []*corev1.Pod{pod})
	out := outs[0]
	if out.Log == nil {
		return nil, fmt.Errorf("%s", out.NotRun())
	}
	if out.Pod.Status.Phase == corev1.PodFailed {
		return out.Log, fmt.Errorf("probe pod %s failed (is nvidia-smi in the image %s, and the NVIDIA container toolkit on the node?)", out.Pod.Name, o.Image)
	}
	return out.Log, nil
}

// NodeUse is how much of a node's extended resource (its GPUs) the pods bound to it request.
type NodeUse struct {
	Allocatable int64
	Requested   int64
	// Holders are the pods holding some ("namespace/name"), for the message.
	Holders []string
}

// Free is what a new pod can still get.
func (u NodeUse) Free() int64 { return max(u.Allocatable-u.Requested, 0) }

// UseOnNode sums the requests of resource by the pods bound to node that are not finished, the
// way the scheduler counts a pod (the larger of its containers' sum and its largest init
// container): a probe pod asking for more than is left is refused by the kubelet (OutOfnvidia.com/gpu),
// so the topology probe asks for what is free.
func UseOnNode(ctx context.Context, kube kubernetes.Interface, node *corev1.Node, resourceName string) (NodeUse, error) {
	rn := corev1.ResourceName(resourceName)
	q := node.Status.Allocatable[rn]
	u := NodeUse{Allocatable: q.Value()}
	pods, err := kube.CoreV1().Pods("").List(ctx, metav1.ListOptions{FieldSelector: "spec.nodeName=" + node.Name})
	if err != nil {
		return u, err
	}
	for _, p := range pods.Items {
		if p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			continue
		}
		var sum, initMax int64
		for _, c := range p.Spec.Containers {
			r := c.Resources.Requests[rn]
			sum += r.Value()
		}
		for _, c := range p.Spec.InitContainers {
			r := c.Resources.Requests[rn]
			initMax = max(initMax, r.Value())
		}
		if n := max(sum, initMax); n > 0 {
			u.Requested += n
			u.Holders = append(u.Holders, p.Namespace+"/"+p.Name)
		}
	}
	return u, nil
}
