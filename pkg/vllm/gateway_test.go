package vllm

import (
	"errors"
	"strings"
	"testing"

	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/ain-hpc/ain/internal/golden"
	"github.com/ain-hpc/ain/pkg/jobs"
	"github.com/ain-hpc/ain/pkg/profile"
	"github.com/ain-hpc/ain/pkg/recipe"
)

// gatewaySets turn the test recipe's Ingress into a Gateway API entry on a Gateway ain creates.
var gatewaySets = []string{"expose=gateway", "gateway.className=eg"}

func TestGatewayObjectsGolden(t *testing.T) {
	objs := servingObjects(t, gatewaySets...)
	got, err := jobs.Encode(objs.All(), "yaml")
	if err != nil {
		t.Fatal(err)
	}
	golden.File(t, "testdata/golden/serving-gateway.yaml", got)
}

// The route matches PathPrefix /v1 and Exact /health and nothing else, sends them to the
// Service's port, names the host and the Gateway ain creates, and bounds nothing by default;
// the Gateway has one HTTPS listener terminating TLS with the deployment's Secret. No
// Ingress is rendered beside it.
func TestGatewayRoute(t *testing.T) {
	objs := servingObjects(t, gatewaySets...)
	if objs.Ingress != nil || objs.Gateway == nil || objs.HTTPRoute == nil {
		t.Fatalf("objects: ingress %v gateway %v route %v", objs.Ingress != nil, objs.Gateway != nil, objs.HTTPRoute != nil)
	}
	kinds := []string{}
	for _, o := range objs.All() {
		kinds = append(kinds, o.GetObjectKind().GroupVersionKind().Kind)
	}
	if got := strings.Join(kinds, ","); got != "Deployment,Deployment,Service,PodDisruptionBudget,Gateway,HTTPRoute" {
		t.Errorf("apply order %s", got)
	}
	rt := objs.HTTPRoute
	if len(rt.Spec.Rules) != 1 {
		t.Fatalf("%d rules, want 1", len(rt.Spec.Rules))
	}
	rule := rt.Spec.Rules[0]
	var matches []string
	for _, m := range rule.Matches {
		if m.Path == nil || len(m.Headers) > 0 || len(m.QueryParams) > 0 || m.Method != nil {
			t.Errorf("match %+v: a path match only", m)
			continue
		}
		matches = append(matches, string(*m.Path.Type)+" "+*m.Path.Value)
	}
	if got := strings.Join(matches, ", "); got != "PathPrefix /v1, Exact /health" {
		t.Errorf("matches %s, want PathPrefix /v1, Exact /health", got)
	}
	if len(rule.BackendRefs) != 1 || rule.BackendRefs[0].Name != "qwen" || *rule.BackendRefs[0].Port != 8000 || *rule.BackendRefs[0].Kind != "Service" || len(rule.Filters) > 0 {
		t.Errorf("backends %+v filters %+v", rule.BackendRefs, rule.Filters)
	}
	if to := rule.Timeouts; to == nil || *to.Request != "0s" || *to.BackendRequest != "0s" {
		t.Errorf("timeouts %+v, want 0s (none) for both", to)
	}
	if len(rt.Spec.Hostnames) != 1 || rt.Spec.Hostnames[0] != "llm.course.example" {
		t.Errorf("hostnames %v", rt.Spec.Hostnames)
	}
	if p := rt.Spec.ParentRefs; len(p) != 1 || p[0].Name != "qwen" || *p[0].SectionName != GatewayListener || *p[0].Kind != "Gateway" ||
		*p[0].Group != gatewayv1.GroupName || p[0].Namespace != nil {
		t.Errorf("parentRefs %+v", p)
	}
	gw := objs.Gateway
	if gw.Spec.GatewayClassName != "eg" || len(gw.Spec.Listeners) != 1 {
		t.Fatalf("gateway %+v", gw.Spec)
	}
	l := gw.Spec.Listeners[0]
	if l.Name != GatewayListener || l.Port != 443 || l.Protocol != gatewayv1.HTTPSProtocolType || *l.Hostname != "llm.course.example" ||
		*l.TLS.Mode != gatewayv1.TLSModeTerminate || len(l.TLS.CertificateRefs) != 1 || l.TLS.CertificateRefs[0].Name != "qwen-tls" ||
		*l.AllowedRoutes.Namespaces.From != gatewayv1.NamespacesFromSame {
		t.Errorf("listener %+v", l)
	}
	if gw.Labels[jobs.LabelRun] != "qwen" || gw.Labels[LabelComponent] != ComponentServer || rt.Labels[LabelComponent] != ComponentServer {
		t.Errorf("labels: ain's prune and delete select by them: %v %v", gw.Labels, rt.Labels)
	}

	// An existing Gateway: the route names it (and its listener); ain renders no Gateway and no
	// certificate of its own.
	shared := servingObjects(t, "expose=gateway", "gateway.name=public", "gateway.namespace=infra", "gateway.sectionName=web-https", "gateway.timeouts.request=1h")
	if shared.Gateway != nil || shared.Ingress != nil {
		t.Fatalf("shared gateway: ain renders a Gateway %v or an Ingress %v", shared.Gateway, shared.Ingress)
	}
	p := shared.HTTPRoute.Spec.ParentRefs[0]
	if p.Name != "public" || *p.Namespace != "infra" || *p.SectionName != "web-https" {
		t.Errorf("parentRef %+v", p)
	}
	if to := shared.HTTPRoute.Spec.Rules[0].Timeouts; *to.Request != "1h" || *to.BackendRequest != "0s" {
		t.Errorf("timeouts %+v", to)
	}
	// A cert-manager issuer annotates the Gateway, which its gateway-shim reads.
	issued := servingObjects(t, append(gatewaySets, "gateway.clusterIssuer=letsencrypt")...)
	if issued.Gateway.Annotations[AnnotationClusterIssuer] != "letsencrypt" {
		t.Errorf("annotations %v", issued.Gateway.Annotations)
	}
	// Without a cluster to ask, a Gateway API entry that names no Gateway cannot be built.
	r, err := recipe.Parse("qwen.yaml", []byte(servingRecipe), []string{"expose=gateway"})
	if err != nil {
		t.Fatal(err)
	}
	var ng *NoGatewayError
	if _, err := BuildObjects(r, profile.Default(), ObjectOptions{}); !errors.As(err, &ng) {
		t.Errorf("no gateway named: %v", err)
	}
}
