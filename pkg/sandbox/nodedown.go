package sandbox

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
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
	enqueue := func(obj any) {
		if n, ok := obj.(*corev1.Node); ok {
			q.Add(n.Name)
		}
	}
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    enqueue,
		UpdateFunc: func(_, o any) { enqueue(o) },
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
			if nodeIsDown(n) {
				err = a.markPodsNotReady(ctx, name)
			} else if nodeReady(n) {
				err = a.markPodsReadyAgain(ctx, name)
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

// markPodsNotReady sets the Ready condition of the node's running pods False.
func (a *agent) markPodsNotReady(ctx context.Context, node string) error {
	pods, err := a.lister.List(labels.Everything())
	if err != nil {
		return err
	}
	var firstErr error
	for _, p := range pods {
		if p.Spec.NodeName != node || p.DeletionTimestamp != nil || p.Status.Phase != corev1.PodRunning {
			continue
		}
		for i, c := range p.Status.Conditions {
			if c.Type != corev1.PodReady || c.Status != corev1.ConditionTrue {
				continue
			}
			p = p.DeepCopy()
			p.Status.Conditions[i].Status = corev1.ConditionFalse
			p.Status.Conditions[i].Reason = reasonNodeDown
			p.Status.Conditions[i].LastTransitionTime = metav1.Now()
			_, err := a.cs.CoreV1().Pods(p.Namespace).UpdateStatus(ctx, p, metav1.UpdateOptions{})
			switch {
			case err == nil:
				fmt.Fprintf(a.log, "sandbox agent: node %s is down: pod %s/%s not Ready\n", node, p.Namespace, p.Name)
			case !apierrors.IsNotFound(err) && firstErr == nil:
				firstErr = fmt.Errorf("mark pod %s/%s not Ready: %w", p.Namespace, p.Name, err)
			}
			break
		}
	}
	return firstErr
}

// reasonNodeDown marks the Ready condition of a pod the agent made not Ready because its node
// went down (the node lifecycle controller sets no reason), so that only those are made Ready
// again when the node is back.
const reasonNodeDown = "NodeDown"

// markPodsReadyAgain makes the pods that markPodsNotReady took out Ready again, now that their
// node posts status again: a kubelet back from a silence reports its running containers'
// readiness anew (without a readiness probe, Ready as soon as they run), which kwok's stages,
// having made these pods Ready once, do not do a second time.
func (a *agent) markPodsReadyAgain(ctx context.Context, node string) error {
	pods, err := a.lister.List(labels.Everything())
	if err != nil {
		return err
	}
	var firstErr error
	for _, p := range pods {
		if p.Spec.NodeName != node || p.DeletionTimestamp != nil || p.Status.Phase != corev1.PodRunning {
			continue
		}
		for i, c := range p.Status.Conditions {
			if c.Type != corev1.PodReady || c.Status == corev1.ConditionTrue || c.Reason != reasonNodeDown {
				continue
			}
			p = p.DeepCopy()
			p.Status.Conditions[i].Status = corev1.ConditionTrue
			p.Status.Conditions[i].Reason = ""
			p.Status.Conditions[i].LastTransitionTime = metav1.Now()
			_, err := a.cs.CoreV1().Pods(p.Namespace).UpdateStatus(ctx, p, metav1.UpdateOptions{})
			switch {
			case err == nil:
				fmt.Fprintf(a.log, "sandbox agent: node %s is back: pod %s/%s Ready again\n", node, p.Namespace, p.Name)
			case !apierrors.IsNotFound(err) && firstErr == nil:
				firstErr = fmt.Errorf("mark pod %s/%s Ready again: %w", p.Namespace, p.Name, err)
			}
			break
		}
	}
	return firstErr
}
