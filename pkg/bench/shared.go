package bench

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/ain-hpc/ain/pkg/probe"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/kubernetes"
)

// ProblemSharedNodes: another workload held GPUs or RDMA devices on the variant's nodes while it
// ran. On hardware two jobs on the same HCAs each get a share of the link, so the numbers say
// less than the fabric gives; the sandbox simulates no such contention, so only this check
// tells. It reads the nodes' pods once the variant has ended: a workload whose pods were
// deleted before that is not seen.
const ProblemSharedNodes = "shared-nodes"

// sharing lists the pods, other than own ones, that held any of resources on nodes at some time
// in [from, to], as "namespace/name on node". It reads the pods of every namespace, bound to
// those nodes (field selector spec.nodeName); where the user may not list pods cluster-wide it
// reads ns only and says so in note. ain's read-only probe pods (counters, ports) hold an RDMA
// device but move no data and are not counted; its perftest and iperf3 pairs are.
func sharing(ctx context.Context, kube kubernetes.Interface, ns string, nodes []string, own func(*corev1.Pod) bool, resources []string, from, to time.Time) (pods []string, note string, err error) {
	scope := metav1.NamespaceAll
	for _, node := range nodes {
		list, err := kube.CoreV1().Pods(scope).List(ctx, metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("spec.nodeName", node).String()})
		if apierrors.IsForbidden(err) && scope == metav1.NamespaceAll {
			scope, note = ns, "pods of other namespaces not visible (listing pods cluster-wide is forbidden)"
			list, err = kube.CoreV1().Pods(scope).List(ctx, metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("spec.nodeName", node).String()})
		}
		if err != nil {
			return nil, note, err
		}
		for i := range list.Items {
			p := &list.Items[i]
			_, isProbe := p.Labels[probe.LabelProbe]
			_, pair := p.Labels[probe.LabelPairRole]
			// A server that ignores the field selector (client-go's fake) lists every node's pods.
			if p.Spec.NodeName != node || own(p) || isProbe && !pair || !holds(p, resources) || !ranDuring(p, from, to) {
				continue
			}
			pods = append(pods, fmt.Sprintf("%s/%s on %s", p.Namespace, p.Name, node))
		}
	}
	slices.Sort(pods)
	return pods, note, nil
}

// holds reports whether a container of p requests or limits any of resources.
func holds(p *corev1.Pod, resources []string) bool {
	for _, c := range p.Spec.Containers {
		for _, r := range resources {
			if r == "" {
				continue
			}
			if q, ok := c.Resources.Limits[corev1.ResourceName(r)]; ok && !q.IsZero() {
				return true
			}
			if q, ok := c.Resources.Requests[corev1.ResourceName(r)]; ok && !q.IsZero() {
				return true
			}
		}
	}
	return false
}

// ranDuring reports whether p's containers ran at some time in [from, to]: started by to, and
// still running or ended after from.
func ranDuring(p *corev1.Pod, from, to time.Time) bool {
	if p.Status.StartTime == nil || p.Status.StartTime.After(to) {
		return false
	}
	if p.Status.Phase == corev1.PodRunning {
		return true
	}
	for _, cs := range p.Status.ContainerStatuses {
		if t := cs.State.Terminated; t != nil && !t.FinishedAt.Time.Before(from) {
			return true
		}
	}
	return false
}

// sharedProblem is the problem a variant gets when others shared its nodes ("" when none did).
func sharedProblem(pods []string) string {
	if len(pods) == 0 {
		return ""
	}
	return fmt.Sprintf("%s: another workload held GPUs or RDMA devices on this variant's nodes while it ran (%s): on real HCAs both share the link, so these numbers are not the fabric's; run it again when the nodes are free",
		ProblemSharedNodes, strings.Join(pods, ", "))
}
