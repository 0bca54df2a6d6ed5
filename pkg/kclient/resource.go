package kclient

import (
	"context"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
)

type object interface {
	runtime.Object
	metav1.Object
}

// resource is one resource's typed client: each verb is the request client-go's generated
// clients make (gentype, client-go v0.36.2), protobuf preferred as they prefer it for built-in
// types, namespaced when namespace is set. TestPodsListAndLogs compares the requests.
type resource[T object, L runtime.Object] struct {
	rc        rest.Interface
	resource  string
	namespace string
	newObject func() T
	newList   func() L
}

func (c *resource[T, L]) req(r *rest.Request) *rest.Request {
	return r.UseProtobufAsDefaultIfPreferred(true).NamespaceIfScoped(c.namespace, c.namespace != "").Resource(c.resource)
}

func timeout(s *int64) time.Duration {
	if s == nil {
		return 0
	}
	return time.Duration(*s) * time.Second
}

func (c *resource[T, L]) Get(ctx context.Context, name string, opts metav1.GetOptions) (T, error) {
	out := c.newObject()
	err := c.req(c.rc.Get()).Name(name).VersionedParams(&opts, parameterCodec).Do(ctx).Into(out)
	return out, err
}

func (c *resource[T, L]) List(ctx context.Context, opts metav1.ListOptions) (L, error) {
	out := c.newList()
	err := c.req(c.rc.Get()).VersionedParams(&opts, parameterCodec).Timeout(timeout(opts.TimeoutSeconds)).Do(ctx).Into(out)
	return out, err
}

func (c *resource[T, L]) Watch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	opts.Watch = true
	return c.req(c.rc.Get()).VersionedParams(&opts, parameterCodec).Timeout(timeout(opts.TimeoutSeconds)).Watch(ctx)
}

func (c *resource[T, L]) Create(ctx context.Context, obj T, opts metav1.CreateOptions) (T, error) {
	out := c.newObject()
	err := c.req(c.rc.Post()).VersionedParams(&opts, parameterCodec).Body(obj).Do(ctx).Into(out)
	return out, err
}

func (c *resource[T, L]) Update(ctx context.Context, obj T, opts metav1.UpdateOptions) (T, error) {
	out := c.newObject()
	err := c.req(c.rc.Put()).Name(obj.GetName()).VersionedParams(&opts, parameterCodec).Body(obj).Do(ctx).Into(out)
	return out, err
}

func (c *resource[T, L]) UpdateStatus(ctx context.Context, obj T, opts metav1.UpdateOptions) (T, error) {
	out := c.newObject()
	err := c.req(c.rc.Put()).Name(obj.GetName()).SubResource("status").VersionedParams(&opts, parameterCodec).Body(obj).Do(ctx).Into(out)
	return out, err
}

func (c *resource[T, L]) Delete(ctx context.Context, name string, opts metav1.DeleteOptions) error {
	return c.req(c.rc.Delete()).Name(name).Body(&opts).Do(ctx).Error()
}

func (c *resource[T, L]) DeleteCollection(ctx context.Context, opts metav1.DeleteOptions, listOpts metav1.ListOptions) error {
	return c.req(c.rc.Delete()).VersionedParams(&listOpts, parameterCodec).Timeout(timeout(listOpts.TimeoutSeconds)).Body(&opts).Do(ctx).Error()
}

func (c *resource[T, L]) Patch(ctx context.Context, name string, pt types.PatchType, data []byte, opts metav1.PatchOptions, subresources ...string) (T, error) {
	out := c.newObject()
	err := c.req(c.rc.Patch(pt)).Name(name).SubResource(subresources...).VersionedParams(&opts, parameterCodec).Body(data).Do(ctx).Into(out)
	return out, err
}
