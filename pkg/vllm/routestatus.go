package vllm

import (
	"cmp"
	"context"
	"fmt"
	"github.com/ain-hpc/ain/pkg/next"
	"net"
	"strconv"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/ain-hpc/ain/pkg/jobs"
)

// RouteStatus is a model server's HTTPRoute as the controller of its Gateway reports it
// (status.parents[].conditions), with what stops it from serving.
type RouteStatus struct {
	// Name is the HTTPRoute's.
	Name string `json:"name"`
	// Gateway is its parent, namespace/name; Listener the listener it names, if any.
	Gateway  string `json:"gateway"`
	Listener string `json:"listener,omitempty"`
	// OwnGateway is set when the Gateway is ain's (created, and deleted, with the model
	// server); a shared Gateway is never touched.
	OwnGateway bool `json:"ownGateway,omitempty"`
	// Accepted and ResolvedRefs are the route's conditions for that parent ("True", or
	// "False: Reason: message"); empty when the controller has not reported.
	Accepted     string `json:"accepted,omitempty"`
	ResolvedRefs string `json:"resolvedRefs,omitempty"`
	// Problem says why the route does not serve (yet): "" when it is accepted, its references
	// resolve and the Gateway published an address.
	Problem string `json:"problem,omitempty"`
	// Pending is set when Problem may clear by itself (the controller has not reported on the
	// latest generation, the Gateway is not programmed or has no address yet); a route that is
	// not accepted, or whose references do not resolve, needs a change.
	Pending bool `json:"pending,omitempty"`
}

// RouteError is a model server's route that does not serve and will not by waiting: not
// accepted by its Gateway, or references that do not resolve. Its text is the controller's
// reason and message.
type RouteError struct {
	Server string
	Route  RouteStatus
}

func (e *RouteError) Error() string {
	return fmt.Sprintf("model server %s: %s", e.Server, e.Route.Problem)
}

// Hint says what usually fixes a rejected route, by its condition's reason (the reasons
// RouteConditionAccepted and RouteConditionResolvedRefs list in
// sigs.k8s.io/gateway-api v1.6.3 apis/v1/shared_types.go).
func (e *RouteError) Hint(cmd func(next.Command) string) string {
	text := e.Route.Accepted + " " + e.Route.ResolvedRefs
	switch {
	case strings.Contains(text, string(gatewayv1.RouteReasonNotAllowedByListeners)):
		return "the Gateway's listener does not admit routes from this namespace (its allowedRoutes.namespaces): ask its owner, or let ain create a Gateway with --gateway-class CLASS"
	case strings.Contains(text, string(gatewayv1.RouteReasonNoMatchingListenerHostname)):
		return "no listener of the Gateway has a hostname matching the route's host: use a host the Gateway serves (--host), or another listener (--gateway NAMESPACE/NAME:LISTENER)"
	case strings.Contains(text, string(gatewayv1.RouteReasonNoMatchingParent)):
		return "the Gateway has no listener of that name or port: `kubectl get gateway -o yaml` lists them (--gateway NAMESPACE/NAME:LISTENER)"
	case strings.Contains(text, string(gatewayv1.RouteReasonUnsupportedValue)):
		return "the Gateway's implementation does not support a field of the route (route timeouts are Extended support): check spec.gateway.timeouts against its documentation"
	case strings.Contains(text, string(gatewayv1.RouteReasonRefNotPermitted)), strings.Contains(text, string(gatewayv1.RouteReasonBackendNotFound)):
		return "the route's backend is the model server's Service in its own namespace: `" + cmd("serve status") + "` shows whether the Service exists"
	}
	return "`kubectl describe httproute " + e.Route.Name + "` shows the route's status; the Gateway's controller logs say more"
}

// routeStatus reads route rt (its parent Gateway gw, nil when it could not be read: gwErr)
// into the model server's status: its URL (https://HOST, or the Gateway's address without a
// host; the listener's port when not the scheme's default), the Gateway's published address,
// the TLS Secret of a Gateway ain created, and the route's state.
func routeStatus(rt *gatewayv1.HTTPRoute, gw *gatewayv1.Gateway, gwErr error) (rs RouteStatus, url, address, tlsSecret string) {
	rs.Name = rt.Name
	if len(rt.Spec.ParentRefs) == 0 {
		rs.Problem = "HTTPRoute " + rt.Name + " has no parentRef: no Gateway serves it"
		return rs, "", "", ""
	}
	ref := rt.Spec.ParentRefs[0]
	ns := rt.Namespace
	if ref.Namespace != nil && *ref.Namespace != "" {
		ns = string(*ref.Namespace)
	}
	section := ""
	if ref.SectionName != nil {
		section = string(*ref.SectionName)
	}
	rs.Gateway, rs.Listener = ns+"/"+string(ref.Name), section
	parent := rs.Gateway
	if section != "" {
		parent += " (listener " + section + ")"
	}
	if gw != nil {
		rs.OwnGateway = gw.Labels[jobs.LabelRun] != "" && gw.Labels[jobs.LabelRun] == rt.Labels[jobs.LabelRun] && gw.Labels[jobs.LabelManagedBy] == jobs.ManagedByAin
	}
	problem := func(pending bool, format string, args ...any) {
		if rs.Problem == "" {
			rs.Problem, rs.Pending = fmt.Sprintf(format, args...), pending
		}
	}

	// The route's conditions for this parent.
	var ps *gatewayv1.RouteParentStatus
	for i := range rt.Status.Parents {
		p := &rt.Status.Parents[i]
		pns := rt.Namespace
		if p.ParentRef.Namespace != nil && *p.ParentRef.Namespace != "" {
			pns = string(*p.ParentRef.Namespace)
		}
		psec := ""
		if p.ParentRef.SectionName != nil {
			psec = string(*p.ParentRef.SectionName)
		}
		if p.ParentRef.Name == ref.Name && pns == ns && psec == section {
			ps = p
			break
		}
	}
	controller := "the controller of its GatewayClass"
	if gw != nil {
		controller = "the controller of GatewayClass " + string(gw.Spec.GatewayClassName)
	}
	if ps == nil {
		problem(true, "HTTPRoute %s: no Gateway controller has reported on it for Gateway %s yet: is %s running?", rt.Name, parent, controller)
	} else {
		acc := findCondition(ps.Conditions, string(gatewayv1.RouteConditionAccepted))
		ref := findCondition(ps.Conditions, string(gatewayv1.RouteConditionResolvedRefs))
		rs.Accepted, rs.ResolvedRefs = condSummary(acc), condSummary(ref)
		switch {
		case acc == nil:
			problem(true, "HTTPRoute %s: Gateway %s has not said whether it accepts it yet", rt.Name, parent)
		case acc.ObservedGeneration < rt.Generation:
			problem(true, "HTTPRoute %s: %s has not seen its generation %d yet (its status is of %d)", rt.Name, controller, rt.Generation, acc.ObservedGeneration)
		case acc.Status == metav1.ConditionFalse:
			problem(false, "HTTPRoute %s is not accepted by Gateway %s: %s", rt.Name, parent, conditionText(acc))
		case acc.Status != metav1.ConditionTrue:
			problem(true, "HTTPRoute %s: Gateway %s has not accepted it yet (%s)", rt.Name, parent, conditionText(acc))
		}
		if ref != nil && ref.Status == metav1.ConditionFalse && ref.ObservedGeneration >= rt.Generation {
			problem(false, "HTTPRoute %s: its references do not resolve: %s", rt.Name, conditionText(ref))
		}
	}

	// The Gateway: its conditions, its address and the listener the route uses.
	if gw == nil {
		switch {
		case apierrors.IsNotFound(gwErr):
			problem(false, "HTTPRoute %s: its Gateway %s does not exist", rt.Name, parent)
		case gwErr != nil && !apierrors.IsForbidden(gwErr):
			problem(true, "HTTPRoute %s: cannot read Gateway %s: %v", rt.Name, parent, gwErr)
		}
		// Unreadable (another team's namespace): the host is all there is to connect to.
		if len(rt.Spec.Hostnames) > 0 && !strings.HasPrefix(string(rt.Spec.Hostnames[0]), "*.") {
			url = "https://" + string(rt.Spec.Hostnames[0])
		}
		return rs, url, "", ""
	}
	if c := findCondition(gw.Status.Conditions, string(gatewayv1.GatewayConditionAccepted)); c != nil && c.Status == metav1.ConditionFalse {
		problem(false, "Gateway %s is not accepted: %s", parent, conditionText(c))
	} else if c := findCondition(gw.Status.Conditions, string(gatewayv1.GatewayConditionProgrammed)); c != nil && c.Status == metav1.ConditionFalse {
		problem(true, "Gateway %s is not programmed yet: %s", parent, conditionText(c))
	}
	l := pickListener(gw, section, rt.Spec.Hostnames)
	scheme, port := "https", int32(GatewayPort)
	if l != nil {
		port = l.Port
		if l.Protocol == gatewayv1.HTTPProtocolType {
			scheme = "http"
		}
		if rs.OwnGateway && l.TLS != nil && len(l.TLS.CertificateRefs) > 0 {
			c := l.TLS.CertificateRefs[0]
			if (c.Namespace == nil || string(*c.Namespace) == gw.Namespace) && (c.Kind == nil || *c.Kind == "Secret") {
				tlsSecret = string(c.Name)
			}
		}
	}
	for _, a := range gw.Status.Addresses {
		// IPAddress and Hostname are what a client can dial; a NamedAddress is the
		// implementation's own name.
		if a.Type != nil && *a.Type != gatewayv1.IPAddressType && *a.Type != gatewayv1.HostnameAddressType {
			continue
		}
		if a.Value != "" {
			address = a.Value
			break
		}
	}
	if address == "" {
		problem(true, "Gateway %s has not published an address yet (status.addresses is empty)", parent)
	}
	defPort := map[string]int32{"https": 443, "http": 80}[scheme]
	withPort := func(h string) string {
		if port != defPort && port != 0 {
			return net.JoinHostPort(h, strconv.Itoa(int(port)))
		}
		return h
	}
	if address != "" {
		address = withPort(address)
	}
	host := ""
	if len(rt.Spec.Hostnames) > 0 && !strings.HasPrefix(string(rt.Spec.Hostnames[0]), "*.") {
		host = withPort(string(rt.Spec.Hostnames[0]))
	}
	if h := cmp.Or(host, address); h != "" {
		url = scheme + "://" + h
	}
	return rs, url, address, tlsSecret
}

// pickListener is the listener the route attaches to: the one it names, else the first HTTPS
// listener whose hostname admits the route's (or any HTTPS one), else the first.
func pickListener(gw *gatewayv1.Gateway, section string, hosts []gatewayv1.Hostname) *gatewayv1.Listener {
	ls := gw.Spec.Listeners
	for i := range ls {
		if section != "" && string(ls[i].Name) == section {
			return &ls[i]
		}
	}
	var https *gatewayv1.Listener
	for i := range ls {
		if ls[i].Protocol != gatewayv1.HTTPSProtocolType {
			continue
		}
		if https == nil {
			https = &ls[i]
		}
		if ls[i].Hostname == nil || len(hosts) == 0 || hostMatches(string(*ls[i].Hostname), string(hosts[0])) {
			return &ls[i]
		}
	}
	if https != nil {
		return https
	}
	if len(ls) > 0 {
		return &ls[0]
	}
	return nil
}

// hostMatches reports whether listener hostname l admits host h (a *. wildcard matches one or
// more labels in front of its suffix).
func hostMatches(l, h string) bool {
	if suffix, ok := strings.CutPrefix(l, "*"); ok {
		return strings.HasSuffix(h, suffix) && len(h) > len(suffix)
	}
	return strings.EqualFold(l, h)
}

func condSummary(c *metav1.Condition) string {
	if c == nil {
		return ""
	}
	if c.Status == metav1.ConditionTrue {
		return "True"
	}
	return string(c.Status) + ": " + conditionText(c)
}

// routes adds the HTTPRoutes of the model servers in byRun to their status. A cluster without
// the Gateway API, or a user who may not list routes, has none to add.
func (c *Cluster) routes(ctx context.Context, sel string, byRun map[string]*ServingStatus) error {
	if c.Dynamic == nil || len(byRun) == 0 {
		return nil
	}
	list, err := c.Dynamic.Resource(httpRoutesGVR).Namespace(c.Namespace).List(ctx, metav1.ListOptions{LabelSelector: sel})
	if apierrors.IsNotFound(err) || apierrors.IsForbidden(err) {
		return nil
	}
	if err != nil {
		return err
	}
	for i := range list.Items {
		var rt gatewayv1.HTTPRoute
		if err := fromUnstructured(&list.Items[i], &rt); err != nil {
			return err
		}
		s, ok := byRun[rt.Labels[jobs.LabelRun]]
		if !ok {
			continue
		}
		var gw *gatewayv1.Gateway
		var gwErr error
		if len(rt.Spec.ParentRefs) > 0 {
			ref := rt.Spec.ParentRefs[0]
			ns := c.Namespace
			if ref.Namespace != nil && *ref.Namespace != "" {
				ns = string(*ref.Namespace)
			}
			gw, gwErr = c.getGateway(ctx, ns, string(ref.Name))
		}
		rs, url, addr, secret := routeStatus(&rt, gw, gwErr)
		s.Entry, s.Route = "gateway", &rs
		s.URL, s.Address, s.TLSSecret = url, addr, secret
	}
	return nil
}
