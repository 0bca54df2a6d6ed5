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

// PinnedNodesError says that nodes a validated bench measured, to which the job's ranks are
// pinned, cannot take them now: the job would stay Pending until its bound.
type PinnedNodesError struct {
	// Why has one entry per such node: "NAME: reason".
	Why []string
}

func (e *PinnedNodesError) Error() string {
	return "the job's ranks are pinned to the nodes the bench validated, and " + strings.Join(e.Why, "; ")
}

// checkPinned reads the pinned nodes before anything is applied. A node that is gone, cordoned
// or not Ready makes the pinned job unschedulable (its nodeAffinity names that node and no
// other); the scheduler would only say "didn't match Pod's node affinity/selector", which points
// at the selector rather than the node. Nodes the caller may not read are not checked
// (notChecked names them); other API errors are returned as they are.
func checkPinned(ctx context.Context, cs kubernetes.Interface, nodes []string) (notChecked []string, err error) {
	var why []string
	for _, name := range nodes {
		n, err := cs.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			why = append(why, name+": no such node (removed or renamed since the bench)")
			continue
		case apierrors.IsForbidden(err):
			notChecked = append(notChecked, name)
			continue
		case err != nil:
			return nil, &ClusterError{Doing: "reading the pinned node " + name, Err: err}
		}
		if n.Spec.Unschedulable {
			why = append(why, name+": cordoned (spec.unschedulable)")
			continue
		}
		if why1 := notReady(n); why1 != "" {
			why = append(why, name+": "+why1)
		}
	}
	if len(why) > 0 {
		return notChecked, &PinnedNodesError{Why: why}
	}
	return notChecked, nil
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
