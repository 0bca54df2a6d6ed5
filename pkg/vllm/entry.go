package vllm

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/ain-hpc/ain/pkg/jobs"
	"github.com/ain-hpc/ain/pkg/recipe"
)

// How a model server is reached from outside the cluster (spec.expose): which entry ain serve
// gives it, decided against the cluster.

// Gateway API resources (sigs.k8s.io/gateway-api v1.6.3, standard channel, v1).
var (
	GatewayAPIGroupVersion = gatewayv1.GroupVersion.String()
	httpRoutesGVR          = schema.GroupVersionResource{Group: gatewayv1.GroupName, Version: "v1", Resource: "httproutes"}
	gatewaysGVR            = schema.GroupVersionResource{Group: gatewayv1.GroupName, Version: "v1", Resource: "gateways"}
	gatewayClassesGVR      = schema.GroupVersionResource{Group: gatewayv1.GroupName, Version: "v1", Resource: "gatewayclasses"}
)

// IngressNginxController is the spec.controller of ingress-nginx's IngressClass: the only
// controller that reads the nginx.ingress.kubernetes.io annotations ain's Ingress carries.
const IngressNginxController = "k8s.io/ingress-nginx"

// Entry is the entry ChooseEntry chose for a model server.
type Entry struct {
	// Spec is the serving spec exposed as Kind (recipe.ServingSpec.WithEntry), with the
	// GatewayClass or Gateway found on the cluster when the recipe named none.
	Spec *recipe.ServingSpec
	// Kind is recipe.ExposeIngress, ExposeGateway or ExposeNone.
	Kind string
	// Why says why, for one line of output.
	Why string
	// Notes are remarks to print (settings not carried over, a GatewayClass that is not
	// accepted or does not support route timeouts); Warnings need the user's attention.
	Notes, Warnings []string
}

// GatewayAPIMissingError says a Gateway API entry was asked for on a cluster that does not
// serve gateway.networking.k8s.io/v1 HTTPRoute and Gateway.
type GatewayAPIMissingError struct{ Source string }

func (e *GatewayAPIMissingError) Error() string {
	return fmt.Sprintf("%s: the cluster does not serve the Gateway API (%s httproutes and gateways)", e.Source, GatewayAPIGroupVersion)
}

// GatewayChoiceError says ain cannot tell which Gateway a Gateway API entry should use.
type GatewayChoiceError struct {
	Source string
	Reason string
}

func (e *GatewayChoiceError) Error() string {
	return fmt.Sprintf("%s: spec.gateway names no Gateway, and %s", e.Source, e.Reason)
}

// UnknownGatewayError says the GatewayClass or Gateway a recipe or flag names does not exist.
type UnknownGatewayError struct {
	What, Name string
	Known      []string
}

func (e *UnknownGatewayError) Error() string {
	known := "none"
	if len(e.Known) > 0 {
		known = strings.Join(e.Known, ", ")
	}
	return fmt.Sprintf("%s %s does not exist (the cluster has: %s)", e.What, e.Name, known)
}

// existingEntry is what a model server already has: "ingress", "gateway" or "", with its
// route's parent when it has one.
type existingEntry struct {
	kind, desc string
	route      *gatewayv1.HTTPRoute
}

// ChooseEntry decides the entry of model server name from s.Expose (source says who set it:
// "spec.expose" or the flag) and the cluster:
//
//   - ingress, gateway, none: as asked. gateway needs the Gateway API served; when the recipe
//     names no Gateway or GatewayClass, the model server's existing route keeps its parent,
//     else the cluster's only accepted GatewayClass is used.
//   - auto: a model server that already has an Ingress or an HTTPRoute keeps that kind (a
//     re-run never switches what clients use; --expose does). A new one gets the Gateway API
//     when the cluster serves it and ain knows which Gateway to use (spec.gateway names one,
//     or exactly one GatewayClass is accepted), else an Ingress. ingress-nginx is retired
//     (no releases or security fixes after March 2026) and its streaming settings are
//     annotations other controllers ignore; an HTTPRoute's paths and timeouts are the API's.
func (c *Cluster) ChooseEntry(ctx context.Context, s *recipe.ServingSpec, name, source string) (*Entry, error) {
	e := &Entry{Kind: s.Expose}
	ex, err := c.existingEntry(ctx, name)
	if err != nil {
		return nil, err
	}
	var served bool
	needAPI := s.Expose == recipe.ExposeGateway || (s.Expose == recipe.ExposeAuto && ex.kind == "")
	if needAPI {
		if served, err = c.GatewayAPIServed(); err != nil {
			return nil, err
		}
	}
	named := s.Gateway != nil && (s.Gateway.ClassName != "" || s.Gateway.Name != "")
	var class string // the GatewayClass found for a gateway entry that named none
	switch s.Expose {
	case recipe.ExposeAuto:
		switch {
		case ex.kind == recipe.ExposeNone:
			e.Kind = ex.kind
			e.Why = fmt.Sprintf("auto: model server %s runs without an entry (the Service only), and a re-run keeps it so (--expose switches it)", name)
		case ex.kind != "":
			e.Kind = ex.kind
			e.Why = fmt.Sprintf("auto: model server %s already has %s, and a re-run keeps its entry (--expose switches it)", name, ex.desc)
		case !served:
			e.Kind = recipe.ExposeIngress
			e.Why = fmt.Sprintf("auto: a new model server, and the cluster does not serve the Gateway API (%s HTTPRoute)", GatewayAPIGroupVersion)
		case named:
			e.Kind = recipe.ExposeGateway
			e.Why = fmt.Sprintf("auto: a new model server, the cluster serves the Gateway API, and spec.gateway names %s", describeTarget(s.Gateway))
		default:
			cl, reason, err := c.onlyAcceptedClass(ctx)
			if err != nil {
				return nil, err
			}
			if cl != "" {
				e.Kind, class = recipe.ExposeGateway, cl
				e.Why = fmt.Sprintf("auto: a new model server, the cluster serves the Gateway API, and GatewayClass %s is its only accepted class (ingress-nginx, the Ingress default, is retired: --expose ingress for an Ingress)", cl)
			} else {
				e.Kind = recipe.ExposeIngress
				e.Why = fmt.Sprintf("auto: a new model server; the cluster serves the Gateway API, but %s (name one with --gateway-class CLASS or --gateway [NAMESPACE/]NAME)", reason)
			}
		}
	case recipe.ExposeGateway:
		e.Why = source
		if !served {
			return nil, &GatewayAPIMissingError{Source: source}
		}
		if !named && ex.route == nil {
			cl, reason, err := c.onlyAcceptedClass(ctx)
			if err != nil {
				return nil, err
			}
			if cl == "" {
				return nil, &GatewayChoiceError{Source: source, Reason: reason}
			}
			class = cl
			e.Why += fmt.Sprintf("; GatewayClass %s, the cluster's only accepted class", cl)
		}
	default:
		e.Why = source
	}
	spec, notes := s.WithEntry(e.Kind)
	e.Spec, e.Notes = spec, notes
	if e.Kind != recipe.ExposeGateway {
		return e, nil
	}
	g := spec.Gateway
	switch {
	case g.ClassName != "" || g.Name != "":
	case class != "":
		g.ClassName = class
	case ex.route != nil:
		// Keep the parent the route has: the Gateway ain made for it (its class), or the
		// existing one it attaches to.
		c.keepParent(ctx, g, ex.route, name)
		e.Why += fmt.Sprintf("; keeps the route's %s", describeTarget(g))
	}
	if g.ClassName == "" && g.Name == "" {
		return nil, &GatewayChoiceError{Source: source, Reason: "the model server's route names no Gateway ain can read"}
	}
	if err := c.checkGatewayTarget(ctx, g, e); err != nil {
		return nil, err
	}
	return e, nil
}

func describeTarget(g *recipe.ServingGateway) string {
	if g.Name != "" {
		ns := g.Namespace
		if ns != "" {
			ns += "/"
		}
		s := "Gateway " + ns + g.Name
		if g.SectionName != "" {
			s += " (listener " + g.SectionName + ")"
		}
		return s
	}
	return "GatewayClass " + g.ClassName
}

// GatewayAPIServed reports whether the API server serves the Gateway API's HTTPRoute and
// Gateway (gateway.networking.k8s.io/v1), by discovery.
func (c *Cluster) GatewayAPIServed() (bool, error) {
	list, err := c.Kube.Discovery().ServerResourcesForGroupVersion(GatewayAPIGroupVersion)
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("asking the API server whether it serves %s: %w", GatewayAPIGroupVersion, err)
	}
	have := map[string]bool{}
	for _, r := range list.APIResources {
		have[r.Name] = true
	}
	return have["httproutes"] && have["gateways"], nil
}

// existingEntry finds the Ingress or HTTPRoute ain made for model server name; a model server
// whose Deployments run without either has the entry none (kind "" only when there is no
// model server of that name). A kind that is not installed, or that the user may not list,
// counts as absent.
func (c *Cluster) existingEntry(ctx context.Context, name string) (existingEntry, error) {
	sel := metav1.ListOptions{LabelSelector: runSelector(name)}
	var ex existingEntry
	if c.Dynamic != nil {
		routes, err := c.Dynamic.Resource(httpRoutesGVR).Namespace(c.Namespace).List(ctx, sel)
		switch {
		case err == nil && len(routes.Items) > 0:
			var rt gatewayv1.HTTPRoute
			if err := fromUnstructured(&routes.Items[0], &rt); err != nil {
				return ex, err
			}
			return existingEntry{kind: recipe.ExposeGateway, desc: "HTTPRoute " + rt.Name, route: &rt}, nil
		case err != nil && !apierrors.IsNotFound(err) && !apierrors.IsForbidden(err):
			return ex, fmt.Errorf("listing the HTTPRoutes of model server %s: %w", name, err)
		}
	}
	ings, err := c.Kube.NetworkingV1().Ingresses(c.Namespace).List(ctx, sel)
	switch {
	case err == nil && len(ings.Items) > 0:
		return existingEntry{kind: recipe.ExposeIngress, desc: "Ingress " + ings.Items[0].Name}, nil
	case err != nil && !apierrors.IsNotFound(err) && !apierrors.IsForbidden(err):
		return ex, fmt.Errorf("listing the Ingresses of model server %s: %w", name, err)
	}
	deps, err := c.Kube.AppsV1().Deployments(c.Namespace).List(ctx, sel)
	if err != nil {
		return ex, fmt.Errorf("listing the Deployments of model server %s: %w", name, err)
	}
	if len(deps.Items) > 0 {
		// ain serve applies the entry before the Deployments: replicas without one were
		// deployed so (expose none), and exposing them is a change to ask for.
		return existingEntry{kind: recipe.ExposeNone, desc: "no entry"}, nil
	}
	return ex, nil
}

// keepParent points g at the parent of the model server's existing route.
func (c *Cluster) keepParent(ctx context.Context, g *recipe.ServingGateway, rt *gatewayv1.HTTPRoute, name string) {
	if len(rt.Spec.ParentRefs) == 0 {
		return
	}
	ref := rt.Spec.ParentRefs[0]
	ns := c.Namespace
	if ref.Namespace != nil {
		ns = string(*ref.Namespace)
	}
	if string(ref.Name) == name && ns == c.Namespace {
		if gw, err := c.getGateway(ctx, ns, name); err == nil && gw.Labels[jobs.LabelRun] == name {
			g.ClassName = string(gw.Spec.GatewayClassName)
			return
		}
	}
	g.Name = string(ref.Name)
	if ns != c.Namespace {
		g.Namespace = ns
	}
	if ref.SectionName != nil {
		g.SectionName = string(*ref.SectionName)
	}
}

// onlyAcceptedClass returns the one GatewayClass whose controller accepted it, or "" and why
// there is not exactly one. Listing GatewayClasses is cluster-wide; a user who may not is told.
func (c *Cluster) onlyAcceptedClass(ctx context.Context) (string, string, error) {
	if c.Dynamic == nil {
		return "", "ain cannot list GatewayClasses", nil
	}
	list, err := c.Dynamic.Resource(gatewayClassesGVR).List(ctx, metav1.ListOptions{})
	switch {
	case apierrors.IsForbidden(err):
		return "", "ain may not list GatewayClasses (a cluster-wide read)", nil
	case apierrors.IsNotFound(err):
		return "", "it has no GatewayClass resource", nil
	case err != nil:
		return "", "", fmt.Errorf("listing GatewayClasses: %w", err)
	}
	var accepted, other []string
	for i := range list.Items {
		var gc gatewayv1.GatewayClass
		if err := fromUnstructured(&list.Items[i], &gc); err != nil {
			return "", "", err
		}
		if cond := findCondition(gc.Status.Conditions, string(gatewayv1.GatewayClassConditionStatusAccepted)); cond != nil && cond.Status == metav1.ConditionTrue {
			accepted = append(accepted, gc.Name)
		} else {
			other = append(other, gc.Name)
		}
	}
	slices.Sort(accepted)
	slices.Sort(other)
	switch {
	case len(accepted) == 1:
		return accepted[0], "", nil
	case len(accepted) > 1:
		return "", fmt.Sprintf("several GatewayClasses are accepted (%s)", strings.Join(accepted, ", ")), nil
	case len(other) > 0:
		return "", fmt.Sprintf("no GatewayClass is accepted by a controller (%s: Accepted is not True)", strings.Join(other, ", ")), nil
	}
	return "", "it has no GatewayClass", nil
}

// pinHTTPSListener keeps the route off a shared Gateway's plain-HTTP listeners: a parentRef
// without sectionName attaches to every listener that admits it, and clients of an http://
// listener send the Bearer key in clear text. With exactly one HTTPS listener the route is
// attached to it; with several, or none, the user is warned to name one.
func pinHTTPSListener(g *recipe.ServingGateway, gw *gatewayv1.Gateway, e *Entry) {
	var https, plain []string
	for _, l := range gw.Spec.Listeners {
		switch l.Protocol {
		case gatewayv1.HTTPSProtocolType:
			https = append(https, string(l.Name))
		case gatewayv1.HTTPProtocolType:
			plain = append(plain, string(l.Name))
		}
	}
	switch {
	case len(plain) == 0:
	case len(https) == 1:
		g.SectionName = https[0]
		e.Notes = append(e.Notes, fmt.Sprintf("the route attaches to Gateway %s's HTTPS listener %s only, not to its plain-HTTP listener(s) %s, where the API key would travel in clear text", gw.Name, https[0], strings.Join(plain, ", ")))
	default:
		e.Warnings = append(e.Warnings, fmt.Sprintf("Gateway %s has plain-HTTP listener(s) %s and %d HTTPS listeners: without a listener named, the route attaches to all of them and clients of http:// send the API key in clear text; name the HTTPS one with --gateway NS/NAME:LISTENER (spec.gateway.sectionName)", gw.Name, strings.Join(plain, ", "), len(https)))
	}
}

// checkGatewayTarget checks that the GatewayClass or Gateway g names exists, and notes one
// that is not accepted or does not list route timeouts among its supported features. What
// the user may not read is not checked.
func (c *Cluster) checkGatewayTarget(ctx context.Context, g *recipe.ServingGateway, e *Entry) error {
	if c.Dynamic == nil {
		return nil
	}
	class := g.ClassName
	if g.Name != "" {
		ns := cmp.Or(g.Namespace, c.Namespace)
		gw, err := c.getGateway(ctx, ns, g.Name)
		switch {
		case apierrors.IsNotFound(err):
			var known []string
			if list, err := c.Dynamic.Resource(gatewaysGVR).Namespace(ns).List(ctx, metav1.ListOptions{}); err == nil {
				for _, it := range list.Items {
					known = append(known, ns+"/"+it.GetName())
				}
			}
			return &UnknownGatewayError{What: "Gateway", Name: ns + "/" + g.Name, Known: known}
		case err != nil:
			return nil // forbidden (another team's namespace) or unreadable: the route's status will tell
		}
		if g.SectionName != "" && !slices.ContainsFunc(gw.Spec.Listeners, func(l gatewayv1.Listener) bool { return string(l.Name) == g.SectionName }) {
			var names []string
			for _, l := range gw.Spec.Listeners {
				names = append(names, string(l.Name))
			}
			return &UnknownGatewayError{What: "listener", Name: g.SectionName + " of Gateway " + ns + "/" + g.Name, Known: names}
		}
		if g.SectionName == "" {
			pinHTTPSListener(g, gw, e)
		}
		class = string(gw.Spec.GatewayClassName)
	}
	u, err := c.Dynamic.Resource(gatewayClassesGVR).Get(ctx, class, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err) && g.Name == "":
		var known []string
		if list, err := c.Dynamic.Resource(gatewayClassesGVR).List(ctx, metav1.ListOptions{}); err == nil {
			for _, it := range list.Items {
				known = append(known, it.GetName())
			}
		}
		slices.Sort(known)
		return &UnknownGatewayError{What: "GatewayClass", Name: class, Known: known}
	case err != nil:
		return nil
	}
	var gc gatewayv1.GatewayClass
	if err := fromUnstructured(u, &gc); err != nil {
		return err
	}
	if cond := findCondition(gc.Status.Conditions, string(gatewayv1.GatewayClassConditionStatusAccepted)); cond == nil || cond.Status != metav1.ConditionTrue {
		why := "no controller has reported on it"
		if cond != nil {
			why = conditionText(cond)
		}
		e.Warnings = append(e.Warnings, fmt.Sprintf("GatewayClass %s is not accepted (%s): no controller will program a Gateway of it; `kubectl get gatewayclass %s` shows its controllerName", class, why, class))
	}
	if t := g.Timeouts; len(gc.Status.SupportedFeatures) > 0 && (t.Request != "" || t.BackendRequest != "") {
		var missing []string
		for _, f := range []gatewayv1.FeatureName{"HTTPRouteRequestTimeout", "HTTPRouteBackendTimeout"} {
			if !slices.ContainsFunc(gc.Status.SupportedFeatures, func(s gatewayv1.SupportedFeature) bool { return s.Name == f }) {
				missing = append(missing, string(f))
			}
		}
		if len(missing) > 0 {
			e.Warnings = append(e.Warnings, fmt.Sprintf("GatewayClass %s does not list %s among its supportedFeatures: it may ignore spec.gateway.timeouts and apply its own default, which can cut long streams", class, strings.Join(missing, " and ")))
		}
	}
	return nil
}

func (c *Cluster) getGateway(ctx context.Context, ns, name string) (*gatewayv1.Gateway, error) {
	u, err := c.Dynamic.Resource(gatewaysGVR).Namespace(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	var gw gatewayv1.Gateway
	if err := fromUnstructured(u, &gw); err != nil {
		return nil, err
	}
	return &gw, nil
}

// IngressClassWarning says what a model server's Ingress loses on IngressClass class whose
// controller is controller ("" when unknown: judged by the name alone): ain's streaming
// settings are ingress-nginx annotations, which other controllers ignore without a word
// (F5's NGINX Ingress Controller, often installed with class nginx, reads nginx.org/ ones).
// "" when the class is ingress-nginx's.
func IngressClassWarning(class, controller string) string {
	if isIngressNginx(class, controller) {
		return ""
	}
	who := "IngressClass " + class
	if controller != "" {
		who += " (controller " + controller + ")"
	}
	return who + " is not ingress-nginx, so it may ignore the nginx.ingress.kubernetes.io annotations ain streams with: " +
		"proxy-buffering and proxy-request-buffering off (without them tokens reach clients in bursts; buffering moved TTFT p50 from 22 to 287 ms), " +
		"proxy-read-timeout and proxy-send-timeout (without them a long generation is cut at the controller's default, often 60 s), " +
		"proxy-body-size 32m (without it long prompts may be refused with 413). " +
		"Set the equivalents in that controller's own configuration, or use the Gateway API, whose route carries its timeouts: --expose gateway"
}

func isIngressNginx(class, controller string) bool {
	return controller == IngressNginxController || controller == "" && class == recipe.DefaultIngressClass
}

// IngressNginxNote is a note for an Ingress on ingress-nginx ("" on another controller): Kubernetes
// SIG Network and the Security Response Committee (2025-11-11) retired it, with no releases or
// security fixes after March 2026.
func IngressNginxNote(class, controller string) string {
	if !isIngressNginx(class, controller) {
		return ""
	}
	return "IngressClass " + class + " is ingress-nginx, retired in March 2026 (no releases or security fixes since): the model's entry runs on an unmaintained proxy; the Gateway API (--expose gateway) is the maintained way"
}

// IngressClassController returns the controller of IngressClass class, "" when it cannot be
// read; missing reports that it does not exist.
func (c *Cluster) IngressClassController(ctx context.Context, class string) (controller string, missing bool) {
	ic, err := c.Kube.NetworkingV1().IngressClasses().Get(ctx, class, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return "", true
	}
	if err != nil {
		return "", false
	}
	return ic.Spec.Controller, false
}

// fromUnstructured decodes u into a typed object (a JSON round trip, as kube.ToUnstructured
// encodes).
func fromUnstructured(u *unstructured.Unstructured, out any) error {
	b, err := u.MarshalJSON()
	if err != nil {
		return err
	}
	return json.Unmarshal(b, out)
}

func findCondition(conds []metav1.Condition, t string) *metav1.Condition {
	for i := range conds {
		if conds[i].Type == t {
			return &conds[i]
		}
	}
	return nil
}

// conditionText is "Reason: message" of a condition (status when it has neither).
func conditionText(c *metav1.Condition) string {
	s := strings.TrimSuffix(c.Reason+": "+c.Message, ": ")
	if s == "" {
		s = "status " + string(c.Status)
	}
	return s
}
