package probe

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Cleanup of a large run: the API server deletes a DeleteCollection's objects one after another
// (kube-apiserver --delete-collection-workers, default 1: k8s.io/apiserver v0.37.2
// pkg/server/options/etcd.go, used by pkg/registry/generic/registry/store.go DeleteCollection),
// each a write to etcd and an event to every pod watcher: at 1000 probe pods, seconds that the
// user waits for after the answer is known. A run of more than shardPods pods is split by
// LabelProbeShard into at most maxShards selectors deleted side by side, so the server spreads
// the deletes over its cores; the requests stay constant in the node count.
const (
	shardPods = 64
	maxShards = 8
)

// A run of more than shardPods pods is deleted by the cluster's garbage collector, not by ain: a
// ConfigMap made for the run owns its pods (ownerReferences), and one delete of it with
// propagationPolicy Background hands them to kube-controller-manager's garbage collector, which
// deletes dependents whose owner is gone. At 1000 nodes the user then has the answer about 6 s
// sooner (the sharded DeleteCollection below took that long on the loaded 2-core machine: each
// pod is an update and a delete in etcd and two events to every pod watcher), and the pods go in
// the next minute or so (the collector's client sends 20 requests a second by default,
// kube-controller-manager --kube-api-qps). ain says so. When the ConfigMap cannot be made or
// deleted (no right, a quota), ain deletes the pods itself.

// ownProbes makes the ConfigMap that owns a large run's pods and points them at it; nil when the
// run is small or the ConfigMap cannot be made.
func ownProbes(o Options, run, kind string, pods []*corev1.Pod) *corev1.ConfigMap {
	if len(pods) <= shardPods {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cm, err := o.Kube.CoreV1().ConfigMaps(o.Namespace).Create(ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{
			Name: "ain-probe-" + run, Namespace: o.Namespace,
			Labels: map[string]string{LabelManaged: "ain", LabelProbe: kind, LabelProbeRun: run},
		},
		Data: map[string]string{
			"pods":  strconv.Itoa(len(pods)),
			"about": "owns the " + kind + " probe pods of one ain run: deleting it deletes them",
		},
	}, metav1.CreateOptions{})
	if err != nil {
		return nil
	}
	for _, p := range pods {
		p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: cm.Name, UID: cm.UID}}
	}
	return cm
}

// handOff deletes owner so that the garbage collector deletes its n pods, and says so; false
// when there is no owner or it could not be deleted (the caller then deletes the pods).
func handOff(o Options, owner *corev1.ConfigMap, n int) bool {
	if owner == nil {
		return false
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	bg := metav1.DeletePropagationBackground
	err := o.Kube.CoreV1().ConfigMaps(o.Namespace).Delete(ctx, owner.Name, metav1.DeleteOptions{PropagationPolicy: &bg})
	if err != nil && !apierrors.IsNotFound(err) {
		return false
	}
	if o.Progress == nil {
		return true
	}
	o.Progress(fmt.Sprintf("%d probe pods left to the garbage collector (their owner, configmap %s, is deleted); `kubectl get pods -l %s=%s` lists those not yet gone",
		n, owner.Name, LabelProbeRun, owner.Labels[LabelProbeRun]))
	return true
}

// labelShards splits pods into the shards of their cleanup (LabelProbeShard, when more than
// one) and returns how many there are.
func labelShards(pods []*corev1.Pod) int {
	shards := min(maxShards, max(1, (len(pods)+shardPods-1)/shardPods))
	for i, p := range pods {
		if shards > 1 {
			p.Labels[LabelProbeShard] = strconv.Itoa(i % shards)
		}
	}
	return shards
}

// Cleanup deletes the pods of run (one DeleteCollection) with a fresh context: it runs after
// Ctrl-C too.
func Cleanup(o Options, run string, pods []*corev1.Pod) { cleanup(o, run, 1, pods) }

// cleanup deletes a run's probe pods with a fresh context. With shards > 1 the pods carry
// LabelProbeShard 0..shards-1 and each shard is deleted by its own DeleteCollection, all at once.
func cleanup(o Options, run string, shards int, pods []*corev1.Pod) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	sel := LabelProbeRun + "=" + run
	zero := int64(0)
	errs := make([]error, shards)
	EachBounded(shards, shards, func(i int) {
		s := sel
		if shards > 1 {
			s += "," + LabelProbeShard + "=" + strconv.Itoa(i)
		}
		errs[i] = o.Kube.CoreV1().Pods(o.Namespace).DeleteCollection(ctx, metav1.DeleteOptions{GracePeriodSeconds: &zero}, metav1.ListOptions{LabelSelector: s})
	})
	if !slices.ContainsFunc(errs, apierrors.IsForbidden) {
		return
	}
	for _, p := range pods { // no deletecollection right: one by one
		_ = o.Kube.CoreV1().Pods(o.Namespace).Delete(ctx, p.Name, metav1.DeleteOptions{GracePeriodSeconds: &zero})
	}
}
