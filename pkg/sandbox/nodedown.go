package sandbox

import (
	"context"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
)

// nodeDownResync is how often the agent looks again at the pods of a node marked down (a pod a
// stage made Ready again, one that started there meanwhile).
const nodeDownResync = 15 * time.Second

// nodeIsDown says whether a node carries AnnoNodeDown and the node-down stage has set its Ready
// condition away from True.
func nodeIsDown(n *corev1.Node) bool {
	if _, ok := n.Annotations[AnnoNodeDown]; !ok {
		return false
	}
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status != corev1.ConditionTrue
		}
	}
	return false
}

// watchDownNodes marks the pods of a node marked down (AnnoNodeDown) not Ready, as
// kube-controller-manager's node lifecycle controller does when it finds a kubelet silent
// (k8s.io/kubernetes v1.37.2 pkg/controller/nodelifecycle monitorNodeHealth ->
// pkg/controller/util/node MarkPodsNotReady: the pod's Ready condition goes False, nothing else).
// The real controller, which runs in the sandbox, does not do it here: it marks pods only on a
// transition it made itself (current Ready not True while the condition it observed was True),
// and the node-down stage made this one before the controller's grace period could find the
// node silent. The controller's taints (node.kubernetes.io/unreachable,
// then eviction past the pods' toleration) are its own.
func (a *agent) watchDownNodes(ctx context.Context) {
	nodes := a.cs.CoreV1().Nodes()
	inf := cache.NewSharedIndexInformerWithOptions(
		cache.ToListWatcherWithWatchListSemantics(&cache.ListWatch{
			ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
				return nodes.List(ctx, o)
			},
			WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
				return nodes.Watch(ctx, o)
			},
		}, a.cs),
		&corev1.Node{}, cache.SharedIndexInformerOptions{ResyncPeriod: nodeDownResync})
	q := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[string]())
	// Both ways: a node marked down gets its pods marked not Ready; a node back up gets them
	// Ready again, as its kubelet would report them once it posts status again.
	// Not on every heartbeat: kwok rewrites every node's status every 20-30 s (40 updates a second
	// at 1000 nodes), and looking at a node's pods each time, by a scan of every pod as it was,
	// cost the agent as much as the probes it plays. A node is looked at when first seen (pods
	// left marked after an agent restart), when it is or was down, when its Ready condition
	// turns, and on the resync (Update with the same object): the repair for a pod whose status
	// reached the agent's cache only after its node was last looked at. Through the node index a
	// look costs a map read and no request unless a pod must change.
	enqueue := func(obj any) {
		if n, ok := obj.(*corev1.Node); ok {
			q.Add(n.Name)
		}
	}
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: enqueue,
		UpdateFunc: func(old, cur any) {
			o, ok1 := old.(*corev1.Node)
			n, ok2 := cur.(*corev1.Node)
			if ok1 && ok2 && queueOnUpdate(o, n) {
				q.Add(n.Name)
			}
		},
	}); err != nil {
		fmt.Fprintf(a.log, "sandbox agent: watch nodes: %v\n", err)
		return
	}
	go inf.RunWithContext(ctx)
	go func() {
		<-ctx.Done()
		q.ShutDown()
	}()
	for {
		name, quit := q.Get()
		if quit {
			return
		}
		var err error
		obj, exists, _ := inf.GetStore().GetByKey(name)
		if n, ok := obj.(*corev1.Node); exists && ok {
			if ready, act := wantPodsReady(n); act {
				err = a.setPodsReady(ctx, name, ready)
			}
		}
		if err != nil {
			fmt.Fprintf(a.log, "sandbox agent: node %s: %v\n", name, err)
			q.AddRateLimited(name)
		} else {
			q.Forget(name)
		}
		q.Done(name)
	}
}

// queueOnUpdate says whether an update of a node from old to cur queues it: a resync (the same
// object again) or a change that matters.
func queueOnUpdate(old, cur *corev1.Node) bool {
	return old.ResourceVersion == cur.ResourceVersion || nodeChangeMatters(old, cur)
}

// wantPodsReady says what n's running pods' Ready condition should follow (act false: leave
// them): not Ready on a node down, Ready again on a Ready node no longer marked. Not while still
// marked: Ready there is a heartbeat the node-down stage is about to overwrite, not the node's
// return.
func wantPodsReady(n *corev1.Node) (ready, act bool) {
	_, marked := n.Annotations[AnnoNodeDown]
	switch {
	case nodeIsDown(n):
		return false, true
	case nodeReady(n) && !marked:
		return true, true
	}
	return false, false
}

// nodeChangeMatters says whether an update of a node from old to cur may change what its pods'
// Ready condition should be: it is down (or was), or its Ready condition turned.
func nodeChangeMatters(old, cur *corev1.Node) bool {
	return nodeIsDown(cur) || nodeIsDown(old) || nodeReady(old) != nodeReady(cur)
}

// reasonNodeDown marks the Ready condition of a pod the agent made not Ready because its node
// went down (the node lifecycle controller sets no reason), so that only those are made Ready
// again when the node is back.
const reasonNodeDown = "NodeDown"

// setPodsReady follows a node's state in its running pods' Ready condition. Down (ready false):
// every Ready pod goes not Ready, marked reasonNodeDown. Back (ready true): the pods so marked,
// and those the node lifecycle controller marked (markedNotReady), are Ready again, as a kubelet
// back from a silence reports its running containers anew, which kwok's stages, having made these
// pods Ready once, do not do a second time.
func (a *agent) setPodsReady(ctx context.Context, node string, ready bool) error {
	pods := a.podsOn(node)
	status, reason, what := corev1.ConditionFalse, reasonNodeDown, "is down: pod %s/%s not Ready"
	if ready {
		status, reason, what = corev1.ConditionTrue, "", "is back: pod %s/%s Ready again"
	}
	var firstErr error
	for _, p := range pods {
		if p.DeletionTimestamp != nil || p.Status.Phase != corev1.PodRunning {
			continue
		}
		i := slices.IndexFunc(p.Status.Conditions, func(c corev1.PodCondition) bool { return c.Type == corev1.PodReady })
		if i < 0 || p.Status.Conditions[i].Status == status || ready && p.Status.Conditions[i].Reason != reasonNodeDown && !markedNotReady(p) {
			continue
		}
		p = p.DeepCopy()
		p.Status.Conditions[i].Status, p.Status.Conditions[i].Reason = status, reason
		p.Status.Conditions[i].LastTransitionTime = metav1.Now()
		_, err := a.cs.CoreV1().Pods(p.Namespace).UpdateStatus(ctx, p, metav1.UpdateOptions{})
		switch {
		case err == nil:
			fmt.Fprintf(a.log, "sandbox agent: node %s "+what+"\n", node, p.Namespace, p.Name)
		case !apierrors.IsNotFound(err) && firstErr == nil:
			firstErr = fmt.Errorf("pod %s/%s: Ready %s: %w", p.Namespace, p.Name, status, err)
		}
	}
	return firstErr
}

// markedNotReady says whether pod's Ready condition was turned False by the node lifecycle
// controller rather than by its kubelet: MarkPodsNotReady sets Ready False and nothing else
// (k8s.io/kubernetes v1.37.2 pkg/controller/util/node/controller_utils.go), while a kubelet, or
// kwok's stages standing in for it, derives Ready from ContainersReady and its containers'
// readiness, so Ready False beside ContainersReady True and every container ready is the
// controller's mark (a node whose heartbeats came late under load).
func markedNotReady(p *corev1.Pod) bool {
	isTrue := func(t corev1.PodConditionType) bool {
		for _, c := range p.Status.Conditions {
			if c.Type == t {
				return c.Status == corev1.ConditionTrue
			}
		}
		return false
	}
	if !isTrue(corev1.ContainersReady) {
		return false
	}
	// A readiness gate not True keeps a pod not Ready beside ready containers (the kubelet's
	// GeneratePodReadyCondition, reason ReadinessGatesNotReady): not the controller's mark.
	for _, g := range p.Spec.ReadinessGates {
		if !isTrue(g.ConditionType) {
			return false
		}
	}
	ready := map[string]bool{}
	for _, cs := range p.Status.ContainerStatuses {
		ready[cs.Name] = cs.Ready
	}
	for _, c := range p.Spec.Containers {
		if !ready[c.Name] {
			return false
		}
	}
	return len(p.Spec.Containers) > 0
}
