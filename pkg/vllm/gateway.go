package vllm

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/ain-hpc/ain/pkg/recipe"
)

// The Gateway API entry (sigs.k8s.io/gateway-api v1.6.3, apis/v1). Its streaming behaviour is
// in the API itself, not in one controller's annotations: what the route says (paths,
// timeouts) every conformant implementation must do or report in the route's status.

// GatewayListener is the name of the one listener of the Gateway ain creates (HTTPS, port
// 443), and the sectionName of its route's parentRef.
const GatewayListener = "https"

// GatewayPort is that listener's port: HTTPRoute on port 443 with protocol HTTPS and TLS mode
// Terminate is Core support (GatewaySpec.Listeners' documentation).
const GatewayPort = 443

// gateway is the Gateway ain creates for a deployment (spec.gateway.className): one HTTPS
// listener for the host (any host without one), terminating TLS with the deployment's TLS
// Secret, accepting routes from its own namespace only.
func gateway(g *recipe.ServingGateway, meta metav1.ObjectMeta, name string) *gatewayv1.Gateway {
	if g.ClusterIssuer != "" {
		// cert-manager's gateway-shim issues a Certificate per listener that has a hostname,
		// TLS mode Terminate and a certificateRef (cert-manager docs, "Annotated Gateway
		// resource").
		meta.Annotations[AnnotationClusterIssuer] = g.ClusterIssuer
	}
	terminate := gatewayv1.TLSModeTerminate
	same := gatewayv1.NamespacesFromSame
	l := gatewayv1.Listener{
		Name:     GatewayListener,
		Port:     GatewayPort,
		Protocol: gatewayv1.HTTPSProtocolType,
		TLS: &gatewayv1.ListenerTLSConfig{
			Mode: &terminate,
			// A single reference to a kubernetes.io/tls Secret in the Gateway's namespace is
			// Core support; group "" and kind Secret are the defaults.
			CertificateRefs: []gatewayv1.SecretObjectReference{{Name: gatewayv1.ObjectName(tlsSecretName(g.TLSSecret, name))}},
		},
		AllowedRoutes: &gatewayv1.AllowedRoutes{Namespaces: &gatewayv1.RouteNamespaces{From: &same}},
	}
	if g.Host != "" {
		h := gatewayv1.Hostname(g.Host)
		l.Hostname = &h
	}
	return &gatewayv1.Gateway{
		TypeMeta:   metav1.TypeMeta{APIVersion: gatewayv1.GroupVersion.String(), Kind: "Gateway"},
		ObjectMeta: meta,
		Spec: gatewayv1.GatewaySpec{
			GatewayClassName: gatewayv1.ObjectName(g.ClassName),
			Listeners:        []gatewayv1.Listener{l},
		},
	}
}

// ParentRef is the Gateway (and listener) the route of g attaches to: the one ain creates for
// deployment name (its HTTPS listener), or the existing one g names.
func ParentRef(g *recipe.ServingGateway, name string) gatewayv1.ParentReference {
	group, kind := gatewayv1.Group(gatewayv1.GroupName), gatewayv1.Kind("Gateway")
	ref := gatewayv1.ParentReference{Group: &group, Kind: &kind}
	if g.Name == "" {
		section := gatewayv1.SectionName(GatewayListener)
		ref.Name, ref.SectionName = gatewayv1.ObjectName(name), &section
		return ref
	}
	ref.Name = gatewayv1.ObjectName(g.Name)
	if g.Namespace != "" {
		ns := gatewayv1.Namespace(g.Namespace)
		ref.Namespace = &ns
	}
	if g.SectionName != "" {
		section := gatewayv1.SectionName(g.SectionName)
		ref.SectionName = &section
	}
	return ref
}

// httpRoute is the route to the Service: one rule whose only matches are PathPrefix /v1
// (path elements: /v1 and /v1/models, never /v10; PathMatchPathPrefix's documentation) and
// Exact /health, with the recipe's timeouts. Requests that match no rule get a 404 from the
// Gateway ("When no rules matching a request have been successfully attached to the parent
// a request is coming from, a HTTP 404 status code MUST be returned", HTTPRouteRule.Matches).
func httpRoute(g *recipe.ServingGateway, meta metav1.ObjectMeta, name string) *gatewayv1.HTTPRoute {
	prefix, exact := gatewayv1.PathMatchPathPrefix, gatewayv1.PathMatchExact
	api, health := IngressAPIPath, IngressHealthPath
	port := gatewayv1.PortNumber(recipe.DefaultServingPort)
	kind := gatewayv1.Kind("Service")
	rule := gatewayv1.HTTPRouteRule{
		Matches: []gatewayv1.HTTPRouteMatch{
			{Path: &gatewayv1.HTTPPathMatch{Type: &prefix, Value: &api}},
			{Path: &gatewayv1.HTTPPathMatch{Type: &exact, Value: &health}},
		},
		BackendRefs: []gatewayv1.HTTPBackendRef{{BackendRef: gatewayv1.BackendRef{
			// A Service backendRef needs the port number (BackendObjectReference.Port).
			BackendObjectReference: gatewayv1.BackendObjectReference{Kind: &kind, Name: gatewayv1.ObjectName(name), Port: &port},
		}}},
	}
	if t := g.Timeouts; t.Request != "" || t.BackendRequest != "" {
		rule.Timeouts = &gatewayv1.HTTPRouteTimeouts{}
		if t.Request != "" {
			d := gatewayv1.Duration(t.Request)
			rule.Timeouts.Request = &d
		}
		if t.BackendRequest != "" {
			d := gatewayv1.Duration(t.BackendRequest)
			rule.Timeouts.BackendRequest = &d
		}
	}
	rt := &gatewayv1.HTTPRoute{
		TypeMeta:   metav1.TypeMeta{APIVersion: gatewayv1.GroupVersion.String(), Kind: "HTTPRoute"},
		ObjectMeta: meta,
		Spec: gatewayv1.HTTPRouteSpec{
			CommonRouteSpec: gatewayv1.CommonRouteSpec{ParentRefs: []gatewayv1.ParentReference{ParentRef(g, name)}},
			Rules:           []gatewayv1.HTTPRouteRule{rule},
		},
	}
	if g.Host != "" {
		rt.Spec.Hostnames = []gatewayv1.Hostname{gatewayv1.Hostname(g.Host)}
	}
	return rt
}

// GatewayTLSSecretName is the Secret with the certificate of the Gateway ain creates:
// spec.gateway.tlsSecret, else the deployment's name plus "-tls" (as for the Ingress, so a
// switch between the two keeps the certificate).
func GatewayTLSSecretName(g *recipe.ServingGateway, name string) string {
	return tlsSecretName(g.TLSSecret, name)
}
