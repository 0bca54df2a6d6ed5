package kclient

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/cache"
)

// NewPodInformer is the pod informer client-go's informer factory builds (namespace "" for all,
// options adjusted by tweak, indexed by namespace), without the factory: the factory's package
// imports every built-in API group.
func NewPodInformer(c Interface, namespace string, resync time.Duration, tweak func(*metav1.ListOptions)) cache.SharedIndexInformer {
	return cache.NewSharedIndexInformerWithOptions(
		cache.ToListWatcherWithWatchListSemantics(&cache.ListWatch{
			ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
				if tweak != nil {
					tweak(&o)
				}
				return c.CoreV1().Pods(namespace).List(ctx, o)
			},
			WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
				if tweak != nil {
					tweak(&o)
				}
				return c.CoreV1().Pods(namespace).Watch(ctx, o)
			},
		}, c),
		&corev1.Pod{},
		cache.SharedIndexInformerOptions{ResyncPeriod: resync, Indexers: cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc}},
	)
}

// NewDynamicInformer is dynamicinformer.NewFilteredDynamicInformer, whose package imports the
// typed informer factory (and with it every built-in API group) for one interface type.
func NewDynamicInformer(c dynamic.Interface, gvr schema.GroupVersionResource, namespace string, resync time.Duration, tweak func(*metav1.ListOptions)) cache.SharedIndexInformer {
	return cache.NewSharedIndexInformerWithOptions(
		cache.ToListWatcherWithWatchListSemantics(&cache.ListWatch{
			ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
				if tweak != nil {
					tweak(&o)
				}
				return c.Resource(gvr).Namespace(namespace).List(ctx, o)
			},
			WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
				if tweak != nil {
					tweak(&o)
				}
				return c.Resource(gvr).Namespace(namespace).Watch(ctx, o)
			},
		}, c),
		&unstructured.Unstructured{},
		cache.SharedIndexInformerOptions{ResyncPeriod: resync, Indexers: cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc}, ObjectDescription: gvr.String()},
	)
}
