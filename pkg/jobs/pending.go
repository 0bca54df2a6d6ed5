package jobs

import (
	"context"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ExplainPending enriches an unschedulable pod's scheduler message with what the nodes can
// allocate (ExplainUnschedulable); "" when the pod is not unschedulable or the nodes cannot be
// read. It fits WatchOptions.Explain (the watcher calls it once per distinct reason). The node
// list is served from the API server's cache (resourceVersion 0): a hint, not a verdict.
//
// A scheduled pod that is not progressing may instead be on a node that is NotReady: then it
// says so (NodeNotReady), from one read of that node; "" when the node is Ready or cannot be
// read (a namespaced Role has no rights on nodes: nothing is claimed then).
func (c *Cluster) ExplainPending(ctx context.Context, pod *corev1.Pod) string {
	msg := ""
	for _, cond := range pod.Status.Conditions {
		if cond.Type == corev1.PodScheduled && cond.Status == corev1.ConditionFalse {
			msg = cond.Message
		}
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if msg == "" {
		if pod.Spec.NodeName == "" {
			return ""
		}
		node, err := c.Kube.CoreV1().Nodes().Get(ctx, pod.Spec.NodeName, metav1.GetOptions{})
		if err != nil {
			return ""
		}
		return NodeNotReady(node)
	}
	nodes, err := c.Kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{ResourceVersion: "0"})
	if err != nil {
		return ""
	}
	return ExplainUnschedulable(pod, msg, nodes.Items)
}

// NodeNotReady explains a pod on a node whose Ready condition is False or Unknown (the kubelet
// stopped reporting: the node lifecycle controller sets Unknown after its grace period), e.g.
// "node gpu-3 is NotReady since 2026-12-03T15:20:00Z (NodeStatusUnknown: Kubelet stopped
// posting node status.): the pod's containers are not running there, or not reported"; ""
// when the node is Ready or has no Ready condition yet.
func NodeNotReady(node *corev1.Node) string {
	for _, c := range node.Status.Conditions {
		if c.Type != corev1.NodeReady || c.Status == corev1.ConditionTrue {
			continue
		}
		s := fmt.Sprintf("node %s is NotReady since %s", node.Name, c.LastTransitionTime.UTC().Format(time.RFC3339))
		if why := strings.TrimSpace(c.Reason + ": " + firstLine(c.Message)); why != ":" {
			s += " (" + strings.Trim(why, ": ") + ")"
		}
		s += ": the pod's containers are not running there, or not reported; pods there are evicted after their toleration (default 300 s) and the job may fail or restart them elsewhere"
		if c.Status == corev1.ConditionUnknown {
			s += " (the kubelet stopped reporting: check the node's network and kubelet)"
		}
		return s
	}
	return ""
}
