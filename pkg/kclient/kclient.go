// Package kclient is the typed Kubernetes client of ain's cluster code: the few built-in
// resources it reads and writes (pods, nodes, events, namespaces, services, secrets, configmaps,
// volumes, deployments, ingresses, leases, access reviews, webhook configurations) and discovery, with
// the method signatures of client-go's generated clientset, so call sites read the same
// (kc.CoreV1().Pods(ns).List(ctx, opts)) and client-go's fake clientset still serves unit tests
// (kclienttest.FromClientset).
//
// Why not k8s.io/client-go/kubernetes: its scheme package registers every built-in API group
// (about 60 group versions) in package init, and its discovery and informer packages import it.
// Go runs every linked package's init in every process, so that cost (about 1,100 KB and 9,000
// allocations over 290 packages, enough to start a garbage collection during start-up) fell on
// offline commands too: `ain render` ran at 0.4x `helm template` (issue 16). This package makes the
// requests the generated clients make (resource.go; not through client-go's gentype, which
// links client-go's fake-client machinery and its schema packages: 200 KB more at init) with a
// scheme that holds only the groups above, built on first use, not at init.
//
// A resource ain starts to use is added here (interface, constructor, scheme group) and to
// kclienttest's adapter; cmd/ain's TestBinaryLinksNoTypedClientset keeps the clientset out.
package kclient

import (
	"context"
	"net/http"
	"sync"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	authv1 "k8s.io/api/authorization/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/types"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
)

// Interface is the part of client-go's kubernetes.Interface that ain uses.
type Interface interface {
	Discovery() Discovery
	CoreV1() CoreV1
	AppsV1() AppsV1
	NetworkingV1() NetworkingV1
	AuthorizationV1() AuthorizationV1
	AdmissionregistrationV1() AdmissionregistrationV1
	CoordinationV1() CoordinationV1
}

// Client is the verbs every generated typed client has, with its signatures.
type Client[T, L any] interface {
	Create(ctx context.Context, obj T, opts metav1.CreateOptions) (T, error)
	Update(ctx context.Context, obj T, opts metav1.UpdateOptions) (T, error)
	Delete(ctx context.Context, name string, opts metav1.DeleteOptions) error
	Get(ctx context.Context, name string, opts metav1.GetOptions) (T, error)
	List(ctx context.Context, opts metav1.ListOptions) (L, error)
	Watch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error)
	Patch(ctx context.Context, name string, pt types.PatchType, data []byte, opts metav1.PatchOptions, subresources ...string) (T, error)
}

// StatusClient is Client for a resource with a status subresource.
type StatusClient[T, L any] interface {
	Client[T, L]
	UpdateStatus(ctx context.Context, obj T, opts metav1.UpdateOptions) (T, error)
}

// Pods is client-go's PodInterface, the part ain uses.
type Pods interface {
	StatusClient[*corev1.Pod, *corev1.PodList]
	DeleteCollection(ctx context.Context, opts metav1.DeleteOptions, listOpts metav1.ListOptions) error
	GetLogs(name string, opts *corev1.PodLogOptions) *rest.Request
}

// CoreV1 is client-go's CoreV1Interface, the part ain uses.
type CoreV1 interface {
	RESTClient() rest.Interface
	Pods(namespace string) Pods
	Nodes() StatusClient[*corev1.Node, *corev1.NodeList]
	Events(namespace string) Client[*corev1.Event, *corev1.EventList]
	Namespaces() StatusClient[*corev1.Namespace, *corev1.NamespaceList]
	Services(namespace string) StatusClient[*corev1.Service, *corev1.ServiceList]
	Secrets(namespace string) Client[*corev1.Secret, *corev1.SecretList]
	ConfigMaps(namespace string) Client[*corev1.ConfigMap, *corev1.ConfigMapList]
	PersistentVolumes() StatusClient[*corev1.PersistentVolume, *corev1.PersistentVolumeList]
	PersistentVolumeClaims(namespace string) StatusClient[*corev1.PersistentVolumeClaim, *corev1.PersistentVolumeClaimList]
}

// AppsV1 is client-go's AppsV1Interface, the part ain uses.
type AppsV1 interface {
	Deployments(namespace string) StatusClient[*appsv1.Deployment, *appsv1.DeploymentList]
}

// NetworkingV1 is client-go's NetworkingV1Interface, the part ain uses.
type NetworkingV1 interface {
	Ingresses(namespace string) StatusClient[*networkingv1.Ingress, *networkingv1.IngressList]
}

// SelfSubjectAccessReviews is client-go's SelfSubjectAccessReviewInterface.
type SelfSubjectAccessReviews interface {
	Create(ctx context.Context, obj *authv1.SelfSubjectAccessReview, opts metav1.CreateOptions) (*authv1.SelfSubjectAccessReview, error)
}

// AuthorizationV1 is client-go's AuthorizationV1Interface, the part ain uses.
type AuthorizationV1 interface {
	SelfSubjectAccessReviews() SelfSubjectAccessReviews
}

// AdmissionregistrationV1 is client-go's AdmissionregistrationV1Interface, the part ain uses.
type AdmissionregistrationV1 interface {
	ValidatingWebhookConfigurations() Client[*admissionv1.ValidatingWebhookConfiguration, *admissionv1.ValidatingWebhookConfigurationList]
}

// CoordinationV1 is client-go's CoordinationV1Interface, the part ain uses.
type CoordinationV1 interface {
	Leases(namespace string) Client[*coordinationv1.Lease, *coordinationv1.LeaseList]
}

// The scheme holds only the groups above, registered as client-go's kubernetes/scheme
// registers them (plus the unversioned meta types), built on first use.
var (
	schemeOnce     sync.Once
	scheme         *runtime.Scheme
	codecs         serializer.CodecFactory
	parameterCodec runtime.ParameterCodec
)

func buildScheme() {
	schemeOnce.Do(func() {
		scheme = runtime.NewScheme()
		metav1.AddToGroupVersion(scheme, schema.GroupVersion{Version: "v1"})
		for _, add := range []func(*runtime.Scheme) error{corev1.AddToScheme, appsv1.AddToScheme, networkingv1.AddToScheme, authv1.AddToScheme, admissionv1.AddToScheme, coordinationv1.AddToScheme} {
			utilruntime.Must(add(scheme))
		}
		codecs = serializer.NewCodecFactory(scheme)
		parameterCodec = runtime.NewParameterCodec(scheme)
	})
}

// clientset implements Interface over one REST client per group version, sharing one HTTP
// client and rate limiter, as kubernetes.NewForConfig does.
type clientset struct {
	core, apps, networking, authorization, admission, coordination rest.Interface
	discovery                                                      *discoveryClient
}

// NewForConfig is kubernetes.NewForConfig for the groups ain uses.
func NewForConfig(c *rest.Config) (Interface, error) {
	cfg := *c
	if cfg.UserAgent == "" {
		cfg.UserAgent = rest.DefaultKubernetesUserAgent()
	}
	httpClient, err := rest.HTTPClientFor(&cfg)
	if err != nil {
		return nil, err
	}
	return NewForConfigAndClient(&cfg, httpClient)
}

// NewForConfigAndClient is kubernetes.NewForConfigAndClient for the groups ain uses.
func NewForConfigAndClient(c *rest.Config, h *http.Client) (Interface, error) {
	buildScheme()
	cfg := *c
	if cfg.RateLimiter == nil && cfg.QPS > 0 {
		if cfg.Burst <= 0 {
			return nil, errBurst
		}
		cfg.RateLimiter = newRateLimiter(cfg.QPS, cfg.Burst)
	}
	cs := &clientset{}
	for _, g := range []struct {
		into    *rest.Interface
		gv      schema.GroupVersion
		apiPath string
	}{
		{&cs.core, corev1.SchemeGroupVersion, "/api"},
		{&cs.apps, appsv1.SchemeGroupVersion, "/apis"},
		{&cs.networking, networkingv1.SchemeGroupVersion, "/apis"},
		{&cs.authorization, authv1.SchemeGroupVersion, "/apis"},
		{&cs.admission, admissionv1.SchemeGroupVersion, "/apis"},
		{&cs.coordination, coordinationv1.SchemeGroupVersion, "/apis"},
	} {
		gc := cfg
		gv := g.gv
		gc.GroupVersion, gc.APIPath = &gv, g.apiPath
		gc.NegotiatedSerializer = rest.CodecFactoryForGeneratedClient(scheme, codecs).WithoutConversion()
		if gc.UserAgent == "" {
			gc.UserAgent = rest.DefaultKubernetesUserAgent()
		}
		rc, err := rest.RESTClientForConfigAndClient(&gc, h)
		if err != nil {
			return nil, err
		}
		*g.into = rc
	}
	d, err := newDiscoveryForConfigAndClient(&cfg, h)
	if err != nil {
		return nil, err
	}
	cs.discovery = d
	return cs, nil
}

func (c *clientset) Discovery() Discovery                             { return c.discovery }
func (c *clientset) CoreV1() CoreV1                                   { return core{c.core} }
func (c *clientset) AppsV1() AppsV1                                   { return apps{c.apps} }
func (c *clientset) NetworkingV1() NetworkingV1                       { return networking{c.networking} }
func (c *clientset) AuthorizationV1() AuthorizationV1                 { return authorization{c.authorization} }
func (c *clientset) AdmissionregistrationV1() AdmissionregistrationV1 { return admission{c.admission} }
func (c *clientset) CoordinationV1() CoordinationV1                   { return coordination{c.coordination} }

// list is a generated client's constructor: namespaced when ns is set, protobuf preferred.
func list[T object, L runtime.Object](rc rest.Interface, res, ns string, obj func() T, lst func() L) *resource[T, L] {
	return &resource[T, L]{rc: rc, resource: res, namespace: ns, newObject: obj, newList: lst}
}

type core struct{ rc rest.Interface }

func (c core) RESTClient() rest.Interface { return c.rc }

type pods struct {
	*resource[*corev1.Pod, *corev1.PodList]
}

// GetLogs is the pods/log request, as client-go's pod expansion builds it.
func (p pods) GetLogs(name string, opts *corev1.PodLogOptions) *rest.Request {
	return p.rc.Get().Namespace(p.namespace).Name(name).Resource("pods").SubResource("log").VersionedParams(opts, parameterCodec)
}

func (c core) Pods(ns string) Pods {
	return pods{list(c.rc, "pods", ns, func() *corev1.Pod { return &corev1.Pod{} }, func() *corev1.PodList { return &corev1.PodList{} })}
}

func (c core) Nodes() StatusClient[*corev1.Node, *corev1.NodeList] {
	return list(c.rc, "nodes", "", func() *corev1.Node { return &corev1.Node{} }, func() *corev1.NodeList { return &corev1.NodeList{} })
}

func (c core) Events(ns string) Client[*corev1.Event, *corev1.EventList] {
	return list(c.rc, "events", ns, func() *corev1.Event { return &corev1.Event{} }, func() *corev1.EventList { return &corev1.EventList{} })
}

func (c core) Namespaces() StatusClient[*corev1.Namespace, *corev1.NamespaceList] {
	return list(c.rc, "namespaces", "", func() *corev1.Namespace { return &corev1.Namespace{} }, func() *corev1.NamespaceList { return &corev1.NamespaceList{} })
}

func (c core) Services(ns string) StatusClient[*corev1.Service, *corev1.ServiceList] {
	return list(c.rc, "services", ns, func() *corev1.Service { return &corev1.Service{} }, func() *corev1.ServiceList { return &corev1.ServiceList{} })
}

func (c core) Secrets(ns string) Client[*corev1.Secret, *corev1.SecretList] {
	return list(c.rc, "secrets", ns, func() *corev1.Secret { return &corev1.Secret{} }, func() *corev1.SecretList { return &corev1.SecretList{} })
}

func (c core) ConfigMaps(ns string) Client[*corev1.ConfigMap, *corev1.ConfigMapList] {
	return list(c.rc, "configmaps", ns, func() *corev1.ConfigMap { return &corev1.ConfigMap{} }, func() *corev1.ConfigMapList { return &corev1.ConfigMapList{} })
}

func (c core) PersistentVolumes() StatusClient[*corev1.PersistentVolume, *corev1.PersistentVolumeList] {
	return list(c.rc, "persistentvolumes", "", func() *corev1.PersistentVolume { return &corev1.PersistentVolume{} }, func() *corev1.PersistentVolumeList { return &corev1.PersistentVolumeList{} })
}

func (c core) PersistentVolumeClaims(ns string) StatusClient[*corev1.PersistentVolumeClaim, *corev1.PersistentVolumeClaimList] {
	return list(c.rc, "persistentvolumeclaims", ns, func() *corev1.PersistentVolumeClaim { return &corev1.PersistentVolumeClaim{} }, func() *corev1.PersistentVolumeClaimList { return &corev1.PersistentVolumeClaimList{} })
}

type apps struct{ rc rest.Interface }

func (c apps) Deployments(ns string) StatusClient[*appsv1.Deployment, *appsv1.DeploymentList] {
	return list(c.rc, "deployments", ns, func() *appsv1.Deployment { return &appsv1.Deployment{} }, func() *appsv1.DeploymentList { return &appsv1.DeploymentList{} })
}

type networking struct{ rc rest.Interface }

func (c networking) Ingresses(ns string) StatusClient[*networkingv1.Ingress, *networkingv1.IngressList] {
	return list(c.rc, "ingresses", ns, func() *networkingv1.Ingress { return &networkingv1.Ingress{} }, func() *networkingv1.IngressList { return &networkingv1.IngressList{} })
}

type authorization struct{ rc rest.Interface }

func (c authorization) SelfSubjectAccessReviews() SelfSubjectAccessReviews {
	return list(c.rc, "selfsubjectaccessreviews", "", func() *authv1.SelfSubjectAccessReview { return &authv1.SelfSubjectAccessReview{} },
		func() *authv1.SelfSubjectAccessReview { return nil })
}

type admission struct{ rc rest.Interface }

func (c admission) ValidatingWebhookConfigurations() Client[*admissionv1.ValidatingWebhookConfiguration, *admissionv1.ValidatingWebhookConfigurationList] {
	return list(c.rc, "validatingwebhookconfigurations", "", func() *admissionv1.ValidatingWebhookConfiguration {
		return &admissionv1.ValidatingWebhookConfiguration{}
	},
		func() *admissionv1.ValidatingWebhookConfigurationList {
			return &admissionv1.ValidatingWebhookConfigurationList{}
		})
}

type coordination struct{ rc rest.Interface }

func (c coordination) Leases(ns string) Client[*coordinationv1.Lease, *coordinationv1.LeaseList] {
	return list(c.rc, "leases", ns, func() *coordinationv1.Lease { return &coordinationv1.Lease{} }, func() *coordinationv1.LeaseList { return &coordinationv1.LeaseList{} })
}
