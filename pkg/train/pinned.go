package train

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// PinnedNodesError says that too few of the nodes a validated bench measured, to which the
// job's ranks are pinned, can take them now: the job would stay Pending until its bound.
type PinnedNodesError struct {
	// Need is how many nodes the job needs, Usable how many pinned nodes can take a rank.
	Need, Usable int
	// Why has one entry per node that cannot: "NAME: reason".
	Why []string
}

func (e *PinnedNodesError) Error() string {
	return fmt.Sprintf("the job's ranks are pinned to the nodes the bench validated, and only %d of them can take a rank where the job needs %d: %s",
		e.Usable, e.Need, strings.Join(e.Why, "; "))
}

// pinnedNodes is what checkPinned found: the nodes that cannot take a rank (with why) and
// those the caller may not read.
type pinnedNodes struct {
	unusable   []string
	notChecked []string
}

// checkPinned reads the pinned nodes before anything is applied. PinWorkers allows any of
// them (one node-affinity term per node, ORed), and a bench may have measured more nodes than
// the job needs: the job is refused only when fewer usable nodes remain than it needs, and the
// scheduler would otherwise only say "didn't match Pod's node affinity/selector", which points
// at the selector rather than the nodes. A node that is gone, cordoned or not Ready (Unknown
// included) is not usable; nodes the caller may not read are counted as usable and named.
// Other API errors are returned as they are.
func checkPinned(ctx context.Context, cs kubernetes.Interface, nodes []string, need int) (pinnedNodes, error) {
	var p pinnedNodes
	for _, name := range nodes {
		n, err := cs.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		why := ""
		switch {
		case apierrors.IsNotFound(err):
			why = "no such node (removed or renamed since the bench)"
		case apierrors.IsForbidden(err):
			p.notChecked = append(p.notChecked, name)
		case err != nil:
			return p, &ClusterError{Doing: "reading the pinned node " + name, Err: err}
		case n.Spec.Unschedulable:
			why = "cordoned (spec.unschedulable)"
		default:
			why = notReady(n)
		}
		if why != "" {
			p.unusable = append(p.unusable, name+": "+why)
		}
	}
	if usable := len(nodes) - len(p.unusable); usable < need {
		return p, &PinnedNodesError{Need: need, Usable: usable, Why: p.unusable}
	}
	return p, nil
}

// notReady says why a node is not Ready ("" when it is).
func notReady(n *corev1.Node) string {
	for _, c := range n.Status.Conditions {
		if c.Type != corev1.NodeReady {
			continue
		}
		if c.Status == corev1.ConditionTrue {
			return ""
		}
		return fmt.Sprintf("not Ready (%s: %s)", c.Reason, c.Message)
	}
	return "no Ready condition"
}
