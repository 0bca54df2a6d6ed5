package probe

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

// A run's cleanup removes every one of its pods and no other, with one DeleteCollection per
// shard: one for a small run, at most maxShards for a large one; a pod is in exactly one shard.
func TestCleanupShards(t *testing.T) {
	for _, c := range []struct{ pods, shards int }{{1, 1}, {64, 1}, {65, 2}, {200, 4}, {1000, 8}} {
		t.Run(fmt.Sprint(c.pods), func(t *testing.T) {
			o := Options{Namespace: "ns"}
			var pods []*corev1.Pod
			for i := range c.pods {
				pods = append(pods, Pod(o, "run1", Spec{Kind: "ib-ports", Name: fmt.Sprintf("p%d", i), Node: fmt.Sprintf("n%d", i), Script: "true"}))
			}
			got := labelShards(pods)
			other := Pod(o, "run2", Spec{Kind: "ib-ports", Name: "other", Node: "n0", Script: "true"})
			cs := fake.NewClientset()
			for _, p := range append([]*corev1.Pod{other}, pods...) {
				if _, err := cs.CoreV1().Pods("ns").Create(context.Background(), p, metav1.CreateOptions{}); err != nil {
					t.Fatal(err)
				}
			}
			var mu sync.Mutex
			var calls []string
			matched := map[string]int{}
			serveDeleteCollection(cs, "ns", func(sel labels.Selector, deleted []string) {
				mu.Lock()
				defer mu.Unlock()
				calls = append(calls, sel.String())
				for _, n := range deleted {
					matched[n]++
				}
			})
			o.Kube = cs
			cleanup(o, "run1", got, pods)
			if got != c.shards || len(calls) != c.shards {
				t.Errorf("%d pods: %d shards, %d DeleteCollections (%v); want %d", c.pods, got, len(calls), calls, c.shards)
			}
			l, _ := cs.CoreV1().Pods("ns").List(context.Background(), metav1.ListOptions{})
			if len(l.Items) != 1 || l.Items[0].Name != "other" {
				t.Errorf("left after cleanup: %d pods, want only another run's pod", len(l.Items))
			}
			for _, p := range pods {
				if matched[p.Name] != 1 {
					t.Errorf("pod %s matched %d selectors", p.Name, matched[p.Name])
				}
			}
		})
	}
}

// A large run's pods are owned by a ConfigMap made for the run, and its cleanup is one delete of
// that ConfigMap with propagationPolicy Background (the garbage collector deletes the pods); a
// small run, or one whose ConfigMap cannot be made or deleted, is left to cleanup.
func TestLargeRunHandedToTheGarbageCollector(t *testing.T) {
	forbidden := func(verb string) k8stesting.ReactionFunc {
		return func(k8stesting.Action) (bool, runtime.Object, error) {
			return true, nil, apierrors.NewForbidden(corev1.Resource("configmaps"), "", fmt.Errorf("cannot %s configmaps", verb))
		}
	}
	for _, c := range []struct {
		name     string
		pods     int
		deny     string // "create" or "delete": the ConfigMap verb refused
		owned    bool
		handedOn bool
	}{
		{"large", 200, "", true, true},
		{"small", 64, "", false, false},
		{"no right to create", 200, "create", false, false},
		{"no right to delete", 200, "delete", true, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			cs := fake.NewClientset()
			if c.deny != "" {
				cs.PrependReactor(c.deny, "configmaps", forbidden(c.deny))
			}
			var said []string
			o := Options{Namespace: "ns", Kube: cs, Progress: func(s string) { said = append(said, s) }}
			var pods []*corev1.Pod
			for i := range c.pods {
				pods = append(pods, Pod(o, "run1", Spec{Kind: "ib-ports", Name: fmt.Sprintf("p%d", i), Node: fmt.Sprintf("n%d", i), Script: "true"}))
			}
			owner := ownProbes(o, "run1", "ib-ports", pods)
			for _, p := range pods {
				refs := p.OwnerReferences
				if got := len(refs) == 1 && refs[0].Kind == "ConfigMap" && refs[0].Name == "ain-probe-run1"; got != c.owned {
					t.Fatalf("pod %s owner references %+v, want owned by the run's ConfigMap: %v", p.Name, refs, c.owned)
				}
			}
			if got := handOff(o, owner, len(pods)); got != c.handedOn {
				t.Fatalf("handed to the garbage collector: %v, want %v", got, c.handedOn)
			}
			var deletes []k8stesting.DeleteActionImpl
			for _, a := range cs.Actions() {
				if d, ok := a.(k8stesting.DeleteActionImpl); ok && a.GetResource().Resource == "configmaps" {
					deletes = append(deletes, d)
				}
			}
			if !c.handedOn {
				if len(said) > 0 {
					t.Errorf("said %q without handing the pods on", said)
				}
				return
			}
			if len(deletes) != 1 || deletes[0].GetName() != "ain-probe-run1" || deletes[0].DeleteOptions.PropagationPolicy == nil || *deletes[0].DeleteOptions.PropagationPolicy != metav1.DeletePropagationBackground {
				t.Errorf("want one delete of configmap ain-probe-run1 with propagationPolicy Background: %+v", deletes)
			}
			if len(said) != 1 || !strings.Contains(said[0], "200 probe pods left to the garbage collector") || !strings.Contains(said[0], "ain.dev/probe-run=run1") {
				t.Errorf("said %q", said)
			}
		})
	}
}

// serveDeleteCollection makes cs delete a pod collection as the API server does (the fake's
// tracker has none), telling seen each selector and the pods it deleted.
func serveDeleteCollection(cs *fake.Clientset, ns string, seen func(sel labels.Selector, deleted []string)) {
	var mu sync.Mutex
	pods := corev1.SchemeGroupVersion.WithResource("pods")
	cs.PrependReactor("delete-collection", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		sel := a.(k8stesting.DeleteCollectionAction).GetListRestrictions().Labels
		mu.Lock()
		defer mu.Unlock()
		l, err := cs.Tracker().List(pods, corev1.SchemeGroupVersion.WithKind("Pod"), ns)
		if err != nil {
			return true, nil, err
		}
		var deleted []string
		for _, p := range l.(*corev1.PodList).Items {
			if sel.Matches(labels.Set(p.Labels)) {
				if err := cs.Tracker().Delete(pods, ns, p.Name); err != nil {
					return true, nil, err
				}
				deleted = append(deleted, p.Name)
			}
		}
		if seen != nil {
			seen(sel, deleted)
		}
		return true, nil, nil
	})
}
