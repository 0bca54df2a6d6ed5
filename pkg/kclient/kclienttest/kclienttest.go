// Package kclienttest adapts client-go's clientsets (the fake one in unit tests, the real one
// over a sandbox) to kclient.Interface. Only tests import it: it links
// k8s.io/client-go/kubernetes, which the ain binary must not (see package kclient).
package kclienttest

import (
	"k8s.io/client-go/kubernetes"

	"github.com/ain-hpc/ain/pkg/kclient"
	admissionv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	admissionclient "k8s.io/client-go/kubernetes/typed/admissionregistration/v1"
	appsclient "k8s.io/client-go/kubernetes/typed/apps/v1"
	authclient "k8s.io/client-go/kubernetes/typed/authorization/v1"
	coordinationclient "k8s.io/client-go/kubernetes/typed/coordination/v1"
	coreclient "k8s.io/client-go/kubernetes/typed/core/v1"
	networkingclient "k8s.io/client-go/kubernetes/typed/networking/v1"
	"k8s.io/client-go/rest"
)

// FromClientset is cs as a kclient.Interface: every call goes to cs (its typed clients have the
// methods kclient's interfaces name, with the same signatures).
func FromClientset(cs kubernetes.Interface) kclient.Interface { return clientset{cs} }

type clientset struct{ cs kubernetes.Interface }

// IsWatchListSemanticsUnSupported passes on what the fake clientset says to informers.
func (c clientset) IsWatchListSemanticsUnSupported() bool {
	u, ok := c.cs.(interface{ IsWatchListSemanticsUnSupported() bool })
	return ok && u.IsWatchListSemanticsUnSupported()
}

func (c clientset) Discovery() kclient.Discovery       { return c.cs.Discovery() }
func (c clientset) CoreV1() kclient.CoreV1             { return core{c.cs.CoreV1()} }
func (c clientset) AppsV1() kclient.AppsV1             { return apps{c.cs.AppsV1()} }
func (c clientset) NetworkingV1() kclient.NetworkingV1 { return networking{c.cs.NetworkingV1()} }
func (c clientset) AuthorizationV1() kclient.AuthorizationV1 {
	return authorization{c.cs.AuthorizationV1()}
}
func (c clientset) AdmissionregistrationV1() kclient.AdmissionregistrationV1 {
	return admission{c.cs.AdmissionregistrationV1()}
}
func (c clientset) CoordinationV1() kclient.CoordinationV1 {
	return coordination{c.cs.CoordinationV1()}
}

type core struct{ c coreclient.CoreV1Interface }

func (c core) RESTClient() rest.Interface                                  { return c.c.RESTClient() }
func (c core) Pods(ns string) kclient.Pods                                 { return c.c.Pods(ns) }
func (c core) Nodes() kclient.StatusClient[*corev1.Node, *corev1.NodeList] { return c.c.Nodes() }
func (c core) Events(ns string) kclient.Client[*corev1.Event, *corev1.EventList] {
	return c.c.Events(ns)
}
func (c core) Namespaces() kclient.StatusClient[*corev1.Namespace, *corev1.NamespaceList] {
	return c.c.Namespaces()
}
func (c core) Services(ns string) kclient.StatusClient[*corev1.Service, *corev1.ServiceList] {
	return c.c.Services(ns)
}
func (c core) Secrets(ns string) kclient.Client[*corev1.Secret, *corev1.SecretList] {
	return c.c.Secrets(ns)
}

func (c core) ConfigMaps(ns string) kclient.Client[*corev1.ConfigMap, *corev1.ConfigMapList] {
	return c.c.ConfigMaps(ns)
}
func (c core) PersistentVolumes() kclient.StatusClient[*corev1.PersistentVolume, *corev1.PersistentVolumeList] {
	return c.c.PersistentVolumes()
}
func (c core) PersistentVolumeClaims(ns string) kclient.StatusClient[*corev1.PersistentVolumeClaim, *corev1.PersistentVolumeClaimList] {
	return c.c.PersistentVolumeClaims(ns)
}

type apps struct{ c appsclient.AppsV1Interface }

func (c apps) Deployments(ns string) kclient.StatusClient[*appsv1.Deployment, *appsv1.DeploymentList] {
	return c.c.Deployments(ns)
}

type networking struct {
	c networkingclient.NetworkingV1Interface
}

func (c networking) Ingresses(ns string) kclient.StatusClient[*networkingv1.Ingress, *networkingv1.IngressList] {
	return c.c.Ingresses(ns)
}

type authorization struct {
	c authclient.AuthorizationV1Interface
}

func (c authorization) SelfSubjectAccessReviews() kclient.SelfSubjectAccessReviews {
	return c.c.SelfSubjectAccessReviews()
}

type admission struct {
	c admissionclient.AdmissionregistrationV1Interface
}

func (c admission) ValidatingWebhookConfigurations() kclient.Client[*admissionv1.ValidatingWebhookConfiguration, *admissionv1.ValidatingWebhookConfigurationList] {
	return c.c.ValidatingWebhookConfigurations()
}

type coordination struct {
	c coordinationclient.CoordinationV1Interface
}

func (c coordination) Leases(ns string) kclient.Client[*coordinationv1.Lease, *coordinationv1.LeaseList] {
	return c.c.Leases(ns)
}
