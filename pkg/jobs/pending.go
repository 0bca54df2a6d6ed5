package jobs

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ExplainPending enriches an unschedulable pod's scheduler message with what the nodes can
// allocate (ExplainUnschedulable); "" when the pod is not unschedulable or the nodes cannot be
// read. It fits WatchOptions.Explain (the watcher calls it once per distinct reason). The node
// list is served from the API server's cache (resourceVersion 0): a hint, not a verdict.
func (c *Cluster) ExplainPending(ctx context.Context, pod *corev1.Pod) string {
	msg := ""
	for _, cond := range pod.Status.Conditions {
		if cond.Type == corev1.PodScheduled && cond.Status == corev1.ConditionFalse {
			msg = cond.Message
		}
	}
	if msg == "" {
		return ""
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	nodes, err := c.Kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{ResourceVersion: "0"})
	if err != nil {
		return ""
	}
	return ExplainUnschedulable(pod, msg, nodes.Items)
}
