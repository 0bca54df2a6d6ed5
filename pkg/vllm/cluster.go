package vllm

import (
	"context"
	"fmt"
	"net"
	"sort"
	"strconv"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/ain-hpc/ain/pkg/jobs"
	"github.com/ain-hpc/ain/pkg/kube"
)

// Cluster applies, inspects and deletes serving deployments in one namespace.
type Cluster struct {
	Kube      kubernetes.Interface
	Dynamic   dynamic.Interface
	Namespace string
}

var servingGVRs = map[string]schema.GroupVersionResource{
	"Deployment":          {Group: "apps", Version: "v1", Resource: "deployments"},
	"Service":             {Version: "v1", Resource: "services"},
	"Ingress":             {Group: "networking.k8s.io", Version: "v1", Resource: "ingresses"},
	"Secret":              {Version: "v1", Resource: "secrets"},
	"PodDisruptionBudget": {Group: "policy", Version: "v1", Resource: "poddisruptionbudgets"},
	"Gateway":             gatewaysGVR,
	"HTTPRoute":           httpRoutesGVR,
}

// serverKinds are the kinds of a model server's own objects (labelled with its component);
// the Secrets beside them are created outside the rendering and carry no component label.
// gatewayKinds are those of its Gateway API entry: the HTTPRoute, and the Gateway when ain
// created one (a shared Gateway the route attaches to carries no ain label, so no prune or
// delete ever selects it).
var (
	serverKinds  = []string{"Deployment", "Service", "PodDisruptionBudget", "Ingress"}
	gatewayKinds = []string{"Gateway", "HTTPRoute"}
)

// applier is kube.Applier (ain's one apply and prune) over the given serving kinds.
func (c *Cluster) applier(kinds ...string) *kube.Applier {
	m := make(map[string]kube.Resource, len(kinds))
	for _, k := range kinds {
		m[k] = kube.Resource{GVR: servingGVRs[k], Namespaced: true}
	}
	return &kube.Applier{Dynamic: c.Dynamic, Namespace: c.Namespace, Kinds: m}
}

// Apply server-side applies objs (field manager "ain"); dryRun asks the API server (schema,
// admission webhooks) without persisting. Re-running with the same recipe changes nothing.
func (c *Cluster) Apply(ctx context.Context, objs []runtime.Object, dryRun bool) ([]*unstructured.Unstructured, error) {
	ap := c.applier(append(append(serverKinds, gatewayKinds...), "Secret")...)
	ap.Force = true
	dry := kube.DryRunNone
	if dryRun {
		dry = kube.DryRunServer
	}
	res, err := ap.Apply(ctx, objs, dry)
	out := make([]*unstructured.Unstructured, len(res))
	for i, r := range res {
		out[i] = r.Object
	}
	return out, err
}

// Prune deletes the model-server objects of deployment name (Deployments, Service, PDB, Ingress,
// HTTPRoute and the Gateway ain created, labelled as ain's with its run name and component)
// that rendered no longer contains: `--replicas 2` then `--replicas 1` removes replica 1 and
// frees its GPU, a dropped entry goes (an Ingress replaced by an HTTPRoute, or the reverse),
// and so does the PDB of a server scaled to one replica. Secrets are not pruned (see
// serverKinds). A cluster without the Gateway API has no route to prune; a user who may not
// list routes and Gateways (a Role from before ain offered them) has none pruned unless this
// rendering has a route, whose apply needed those rights anyway.
func (c *Cluster) Prune(ctx context.Context, name string, rendered []runtime.Object) ([]string, error) {
	var keep []kube.Applied
	withRoute := false
	for _, o := range rendered {
		u, err := kube.ToUnstructured(o)
		if err != nil {
			return nil, err
		}
		keep = append(keep, kube.Applied{Object: u})
		withRoute = withRoute || u.GetKind() == "HTTPRoute"
	}
	extra := map[string]string{LabelComponent: ComponentServer}
	gone, err := c.applier(serverKinds...).Prune(ctx, name, extra, keep)
	if err != nil {
		return gone, err
	}
	more, err := c.applier(gatewayKinds...).Prune(ctx, name, extra, keep)
	gone = append(gone, more...)
	sort.Strings(gone)
	if err != nil && kube.IsForbidden(err) && !withRoute {
		err = nil
	}
	return gone, err
}

// PodStatus is one model server pod.
type PodStatus struct {
	Name     string `json:"name"`
	Phase    string `json:"phase"`
	Ready    bool   `json:"ready"`
	Node     string `json:"node,omitempty"`
	Restarts int32  `json:"restarts"`
	// Reason says why it is not ready (Unschedulable, CrashLoopBackOff, a failing probe...).
	Reason string `json:"reason,omitempty"`
}

// ReplicaStatus is one Deployment.
type ReplicaStatus struct {
	Deployment string      `json:"deployment"`
	Desired    int32       `json:"desired"`
	Ready      int32       `json:"ready"`
	Pods       []PodStatus `json:"pods"`
	// Stalled is set when the rollout passed its progress deadline.
	Stalled string `json:"stalled,omitempty"`
	// Rolling says why Ready counts fewer than the ready pods: the Deployment's controller has
	// not seen its spec yet, or old pods are still there beside the updated ones.
	Rolling string `json:"rolling,omitempty"`
}

// readyUpdated counts a Deployment's ready replicas of its current spec, the way `kubectl rollout
// status` judges one (deployment_util's rollout check): until the controller has observed the
// latest generation its status describes the old spec, and ReadyReplicas counts old pods too, so
// right after an apply "1 ready" would be the replica being replaced. Old pods still present cap
// the count at the updated ones.
func readyUpdated(d *appsv1.Deployment) (int32, string) {
	st := d.Status
	if st.ObservedGeneration < d.Generation {
		return 0, fmt.Sprintf("the Deployment controller has not seen generation %d yet (status is of %d)", d.Generation, st.ObservedGeneration)
	}
	if old := st.Replicas - st.UpdatedReplicas; old > 0 {
		return min(st.ReadyReplicas, st.UpdatedReplicas), fmt.Sprintf("%d of %d pods updated, %d old still there", st.UpdatedReplicas, st.Replicas, old)
	}
	return min(st.ReadyReplicas, st.UpdatedReplicas), ""
}

// ServingStatus is a serving deployment as the cluster sees it.
type ServingStatus struct {
	Name      string          `json:"name"`
	Namespace string          `json:"namespace"`
	Model     string          `json:"model"`
	Ready     int32           `json:"ready"`
	Desired   int32           `json:"desired"`
	Replicas  []ReplicaStatus `json:"replicas"`
	// URL is the entry's URL (https://HOST, or the controller's or Gateway's address without
	// a host), empty without an entry or before the controller gave it an address.
	URL string `json:"url,omitempty"`
	// TLSSecret is the Secret the Ingress (or the Gateway ain created) takes its certificate
	// from.
	TLSSecret string `json:"tlsSecret,omitempty"`
	// Address is where the ingress controller published that it listens for the Ingress
	// (status.loadBalancer), or the Gateway's status.addresses: IP or hostname, with the port
	// when it is not 443.
	Address string `json:"address,omitempty"`
	// Service is the in-cluster address.
	Service string `json:"service"`
	// Entry is how clients outside the cluster reach it: "ingress", "gateway" (a Gateway API
	// HTTPRoute, whose state is Route), or "" (the Service only).
	Entry string       `json:"entry,omitempty"`
	Route *RouteStatus `json:"route,omitempty"`
}

// AllReady reports whether every desired pod is ready (the kubelet's /health probes).
func (s *ServingStatus) AllReady() bool { return s.Desired > 0 && s.Ready == s.Desired }

func runSelector(name string) string {
	sel := labels.Set(Selector(name))
	if name == "" {
		sel = labels.Set{LabelComponent: ComponentServer}
	}
	return sel.String()
}

// Status reads the deployment NAME: its Deployments, their pods, the ingress URL.
func (c *Cluster) Status(ctx context.Context, name string) (*ServingStatus, error) {
	all, err := c.List(ctx, name)
	if err != nil {
		return nil, err
	}
	if len(all) == 0 {
		return nil, &NotFoundError{Name: name, Namespace: c.Namespace}
	}
	return &all[0], nil
}

// NotFoundError says no serving deployment has that name.
type NotFoundError struct{ Name, Namespace string }

func (e *NotFoundError) Error() string {
	return fmt.Sprintf("no model server %q in namespace %s", e.Name, e.Namespace)
}

// List returns the serving deployments (all, or the one named), sorted by name.
func (c *Cluster) List(ctx context.Context, name string) ([]ServingStatus, error) {
	sel := runSelector(name)
	deps, err := c.Kube.AppsV1().Deployments(c.Namespace).List(ctx, metav1.ListOptions{LabelSelector: sel})
	if err != nil {
		return nil, err
	}
	pods, err := c.Kube.CoreV1().Pods(c.Namespace).List(ctx, metav1.ListOptions{LabelSelector: sel})
	if err != nil {
		return nil, err
	}
	ings, err := c.Kube.NetworkingV1().Ingresses(c.Namespace).List(ctx, metav1.ListOptions{LabelSelector: sel})
	if err != nil && !apierrors.IsNotFound(err) {
		return nil, err
	}
	byRun := map[string]*ServingStatus{}
	var order []string
	for i := range deps.Items {
		d := &deps.Items[i]
		run := d.Labels[jobs.LabelRun]
		s, ok := byRun[run]
		if !ok {
			s = &ServingStatus{Name: run, Namespace: c.Namespace, Model: d.Annotations[AnnotationModel],
				Service: fmt.Sprintf("http://%s.%s.svc:%d", run, c.Namespace, 8000)}
			byRun[run] = s
			order = append(order, run)
		}
		rs := ReplicaStatus{Deployment: d.Name}
		if d.Spec.Replicas != nil {
			rs.Desired = *d.Spec.Replicas
		}
		rs.Ready, rs.Rolling = readyUpdated(d)
		for _, cond := range d.Status.Conditions {
			if cond.Type == appsv1.DeploymentProgressing && cond.Reason == "ProgressDeadlineExceeded" {
				rs.Stalled = cond.Message
			}
		}
		sel := labels.SelectorFromSet(d.Spec.Selector.MatchLabels)
		for j := range pods.Items {
			p := &pods.Items[j]
			if sel.Matches(labels.Set(p.Labels)) {
				rs.Pods = append(rs.Pods, podStatus(p))
			}
		}
		sort.Slice(rs.Pods, func(a, b int) bool { return rs.Pods[a].Name < rs.Pods[b].Name })
		s.Replicas = append(s.Replicas, rs)
		s.Ready += rs.Ready
		s.Desired += rs.Desired
	}
	if ings != nil {
		for _, in := range ings.Items {
			s, ok := byRun[in.Labels[jobs.LabelRun]]
			if !ok || len(in.Spec.Rules) == 0 {
				continue
			}
			s.Entry = "ingress"
			scheme := "http"
			if len(in.Spec.TLS) > 0 {
				scheme = "https"
				s.TLSSecret = in.Spec.TLS[0].SecretName
			}
			port := ""
			for _, lb := range in.Status.LoadBalancer.Ingress {
				a := lb.Hostname
				if a == "" {
					a = lb.IP
				}
				if a == "" {
					continue
				}
				for _, ps := range lb.Ports {
					if ps.Port != 443 && ps.Port != 0 {
						port = strconv.Itoa(int(ps.Port))
					}
				}
				s.Address = a
				if port != "" {
					s.Address = net.JoinHostPort(a, port)
				}
				break
			}
			host := in.Spec.Rules[0].Host
			if host == "" {
				// A host-less rule: the controller's address, once it has published one.
				host = s.Address
			} else if port != "" {
				host = net.JoinHostPort(host, port)
			}
			if host != "" {
				s.URL = scheme + "://" + host
			}
		}
	}
	if err := c.routes(ctx, sel, byRun); err != nil {
		return nil, err
	}
	sort.Strings(order)
	out := make([]ServingStatus, 0, len(order))
	for _, run := range order {
		s := byRun[run]
		sort.Slice(s.Replicas, func(a, b int) bool { return s.Replicas[a].Deployment < s.Replicas[b].Deployment })
		out = append(out, *s)
	}
	return out, nil
}

func podStatus(p *corev1.Pod) PodStatus {
	ps := PodStatus{Name: p.Name, Phase: string(p.Status.Phase), Node: p.Spec.NodeName}
	if p.DeletionTimestamp != nil {
		ps.Phase = "Terminating"
	}
	for _, c := range p.Status.Conditions {
		switch {
		case c.Type == corev1.PodReady:
			ps.Ready = c.Status == corev1.ConditionTrue
		case c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse:
			ps.Reason = strings.TrimSpace(c.Reason + ": " + c.Message)
		}
	}
	for _, cs := range p.Status.ContainerStatuses {
		ps.Restarts += cs.RestartCount
		if w := cs.State.Waiting; w != nil && ps.Reason == "" {
			ps.Reason = strings.TrimSuffix(w.Reason+": "+w.Message, ": ")
		}
		if !cs.Ready && cs.Started != nil && !*cs.Started && ps.Reason == "" && p.Status.Phase == corev1.PodRunning {
			ps.Reason = "loading the model (startup probe on /health not passed yet)"
		}
	}
	return ps
}

// Delete removes what `ain serve` created for NAME: Deployments, Service, its entry (Ingress,
// or HTTPRoute and the Gateway ain created; never a shared Gateway) and the Secrets it created (labelled as its own), and returns "Kind/name" of each. It is a prune
// that keeps nothing. Training jobs are not touched (`ain release` ends jobs and keeps services).
// A failed call is a ClusterError; no such server, a NotFoundError.
func (c *Cluster) Delete(ctx context.Context, name string) ([]string, error) {
	gone, err := c.Prune(ctx, name, nil)
	if err != nil {
		return gone, &ClusterError{Doing: "deleting the model server", Err: err}
	}
	secrets, err := c.applier("Secret").Prune(ctx, name, nil, nil)
	gone = append(gone, secrets...)
	if err != nil {
		return gone, &ClusterError{Doing: "deleting the model server", Err: err}
	}
	if len(gone) == 0 {
		return nil, &NotFoundError{Name: name, Namespace: c.Namespace}
	}
	return gone, nil
}
