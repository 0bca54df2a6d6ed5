package recipe

import (
	"errors"
	"strings"
	"testing"

	"github.com/ain-hpc/ain/pkg/strict"
)

const servingBase = `apiVersion: ain.dev/v1alpha1
kind: Serving
metadata:
  name: qwen
spec:
  image: vllm/vllm-openai:v0.30.0
  model: /shared/models/Qwen2.5-7B-Instruct
  volumes:
    - {name: shared, claimName: nfs-shared, mountPath: /shared}
`

// problems parses a serving recipe with the given spec lines appended and returns its
// problems, one "line: path: message" per problem.
func problems(t *testing.T, spec string, sets ...string) []string {
	t.Helper()
	_, err := Parse("s.yaml", []byte(servingBase+spec), sets)
	if err == nil {
		return nil
	}
	var ps strict.Problems
	if !errors.As(err, &ps) {
		t.Fatalf("not problems: %v", err)
	}
	var out []string
	for _, p := range ps {
		out = append(out, p.Error())
	}
	return out
}

// The entry's fields are checked against what the Gateway API CRDs accept (sigs.k8s.io/gateway-api
// v1.6.3), each problem at its line.
func TestGatewayValidation(t *testing.T) {
	for _, tc := range []struct {
		name, spec string
		sets       []string
		want       string // a substring of the one problem; "" for none
	}{
		{"class", "  gateway: {className: eg, host: llm.example.com}\n", nil, ""},
		{"existing", "  gateway: {name: public, namespace: infra, sectionName: https}\n", nil, ""},
		{"none named", "  gateway: {host: llm.example.com}\n", nil, ""},
		{"both sections", "  ingress: {host: a.example.com}\n  gateway: {className: eg}\n", nil,
			"s.yaml:11: spec.gateway: spec.ingress (s.yaml:10) and spec.gateway are both set: keep one, or set spec.expose"},
		{"both sections, expose set", "  expose: gateway\n  ingress: {host: a.example.com}\n  gateway: {className: eg}\n", nil, ""},
		{"bad expose", "  expose: route\n", nil, `spec.expose: "route" is not one of auto, ingress, gateway, none`},
		{"class and name", "  gateway:\n    className: eg\n    name: public\n", nil, "s.yaml:12: spec.gateway.name: set either className (ain creates Gateway NAME of that class, s.yaml:11) or name"},
		{"namespace alone", "  gateway: {className: eg, namespace: infra}\n", nil, "spec.gateway.name: required with spec.gateway.namespace and sectionName"},
		{"tls on shared", "  gateway: {name: public, tlsSecret: my-tls}\n", nil, "spec.gateway.tlsSecret: only with className: the existing Gateway public's listener holds the certificate"},
		{"ip host", "  gateway: {className: eg, host: 10.0.0.1}\n", nil, `spec.gateway.host: "10.0.0.1" is not a DNS name`},
		{"bad host", "  gateway: {className: eg, host: Bad_Host}\n", nil, `spec.gateway.host: "Bad_Host" is not a DNS name`},
		{"bad class", "  gateway: {className: Envoy_GW}\n", nil, `spec.gateway.className: "Envoy_GW" is not a valid GatewayClass name`},
		{"bad namespace", "  gateway: {name: gw, namespace: infra.team}\n", nil, `spec.gateway.namespace: "infra.team" is not a valid namespace name`},
		{"day unit", "  gateway:\n    className: eg\n    timeouts: {request: 1d}\n", nil, `s.yaml:12: spec.gateway.timeouts.request: "1d" is not a Gateway API duration`},
		{"fraction", "  gateway:\n    className: eg\n    timeouts: {request: 1.5h}\n", nil, `spec.gateway.timeouts.request: "1.5h" is not a Gateway API duration`},
		{"six digits", "  gateway:\n    className: eg\n    timeouts: {backendRequest: 100000s}\n", nil, `spec.gateway.timeouts.backendRequest: "100000s" is not a Gateway API duration`},
		{"backend longer", "  gateway:\n    className: eg\n    timeouts: {request: 10m, backendRequest: 1h}\n", nil, "spec.gateway.timeouts.backendRequest: 1h is longer than timeouts.request 10m"},
		{"backend under unbounded request", "  gateway:\n    className: eg\n    timeouts: {request: 0s, backendRequest: 1h}\n", nil, ""},
		{"compound", "  gateway:\n    className: eg\n    timeouts: {request: 1h30m, backendRequest: 90m}\n", nil, ""},
		{"flag", "", []string{"gateway.timeouts.request=1w", "gateway.className=eg"}, `--set gateway.timeouts.request=1w: spec.gateway.timeouts.request: "1w" is not a Gateway API duration`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := problems(t, tc.spec, tc.sets...)
			switch {
			case tc.want == "" && len(got) > 0:
				t.Errorf("problems: %q", got)
			case tc.want != "" && (len(got) != 1 || !strings.Contains(got[0], tc.want)):
				t.Errorf("got %q, want one containing %q", got, tc.want)
			}
		})
	}
}

// spec.expose defaults to the section present, so every recipe written before it keeps its
// entry (an Ingress, or nothing); the built-in vllm recipe says auto.
func TestExposeDefault(t *testing.T) {
	for spec, want := range map[string]string{
		"":                                   ExposeNone,
		"  ingress: {className: nginx}\n":    ExposeIngress,
		"  gateway: {className: eg}\n":       ExposeGateway,
		"  expose: auto\n":                   ExposeAuto,
		"  expose: none\n  ingress: {}\n":    ExposeNone,
		"  expose: ingress\n  ingress: {}\n": ExposeIngress,
	} {
		r, err := Parse("s.yaml", []byte(servingBase+spec), nil)
		if err != nil {
			t.Fatalf("%q: %v", spec, err)
		}
		if r.Serving.Expose != want {
			t.Errorf("%q: expose %s, want %s", spec, r.Serving.Expose, want)
		}
	}
	r, err := Load("vllm", nil)
	if err != nil || r.Serving.Expose != ExposeAuto || r.Serving.Ingress == nil || r.Serving.Ingress.ClassName != "nginx" {
		t.Fatalf("built-in vllm: %+v %v", r.Serving, err)
	}
	r, err = Parse("s.yaml", []byte(servingBase+"  gateway: {className: eg}\n"), nil)
	if err != nil || r.Serving.Gateway.Timeouts.Request != "0s" || r.Serving.Gateway.Timeouts.BackendRequest != "0s" {
		t.Fatalf("gateway timeouts default: %+v %v", r.Serving.Gateway, err)
	}
	// A finite timeout cuts streams: said, not refused.
	r, err = Parse("s.yaml", []byte(servingBase+"  gateway:\n    className: eg\n    host: llm.example.com\n    timeouts: {request: 10m}\n"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if w := r.Warnings().Error(); !strings.Contains(w, "spec.gateway.timeouts.request: 10m bounds every whole request, streams included") {
		t.Errorf("warnings: %s", w)
	}
}

// WithEntry keeps the chosen section and lends it the other's host and certificate, never a
// certificate to an existing Gateway's route; what does not carry over is noted.
func TestWithEntry(t *testing.T) {
	in := &ServingIngress{Host: "llm.example.com", ClassName: "traefik", TLSSecret: "mine", ClusterIssuer: "le", ProxyReadTimeout: 600}
	s := &ServingSpec{Expose: ExposeAuto, Ingress: in}
	g, notes := s.WithEntry(ExposeGateway)
	if g.Expose != ExposeGateway || g.Ingress != nil || g.Gateway == nil || g.Gateway.Host != "llm.example.com" || g.Gateway.TLSSecret != "mine" ||
		g.Gateway.ClusterIssuer != "le" || g.Gateway.Timeouts.Request != "0s" || g.Gateway.Timeouts.BackendRequest != "0s" {
		t.Fatalf("to gateway: %+v %+v", g, g.Gateway)
	}
	if n := strings.Join(notes, "\n"); !strings.Contains(n, "spec.ingress.className traefik is not used") || !strings.Contains(n, "proxyReadTimeout 600 is not used") {
		t.Errorf("notes: %s", n)
	}
	if s.Ingress != in || s.Expose != ExposeAuto || s.Gateway != nil {
		t.Fatalf("WithEntry changed its receiver: %+v", s)
	}
	// An existing Gateway holds its own certificate.
	s = &ServingSpec{Expose: ExposeGateway, Ingress: in, Gateway: &ServingGateway{Name: "public"}}
	g, notes = s.WithEntry(ExposeGateway)
	if g.Gateway.TLSSecret != "" || g.Gateway.ClusterIssuer != "" || g.Gateway.Host != "llm.example.com" || !strings.Contains(strings.Join(notes, "\n"), "Gateway public's listener holds the certificate") {
		t.Fatalf("shared gateway: %+v %q", g.Gateway, notes)
	}
	s = &ServingSpec{Expose: ExposeIngress, Gateway: &ServingGateway{Host: "h.example.com", ClassName: "eg", Timeouts: GatewayTimeouts{Request: "5m"}}}
	i, notes := s.WithEntry(ExposeIngress)
	if i.Gateway != nil || i.Ingress.Host != "h.example.com" || i.Ingress.ClassName != DefaultIngressClass || i.Ingress.ProxyReadTimeout != DefaultProxyReadTimeout ||
		!strings.Contains(strings.Join(notes, "\n"), "spec.gateway.timeouts are not used") {
		t.Fatalf("to ingress: %+v %q", i.Ingress, notes)
	}
	n, notes := s.WithEntry(ExposeNone)
	if n.Ingress != nil || n.Gateway != nil || len(notes) != 1 {
		t.Fatalf("none: %+v %q", n, notes)
	}
	// Without a cluster, auto is the Gateway API only when spec.gateway names a target.
	for spec, want := range map[*ServingSpec]string{
		{Expose: ExposeAuto}: ExposeIngress,
		{Expose: ExposeAuto, Gateway: &ServingGateway{Host: "x"}}:         ExposeIngress,
		{Expose: ExposeAuto, Gateway: &ServingGateway{ClassName: "eg"}}:   ExposeGateway,
		{Expose: ExposeAuto, Gateway: &ServingGateway{Name: "public"}}:    ExposeGateway,
		{Expose: ExposeNone, Gateway: &ServingGateway{ClassName: "eg"}}:   ExposeNone,
		{Expose: ExposeIngress, Gateway: &ServingGateway{ClassName: "e"}}: ExposeIngress,
	} {
		if got := spec.OfflineEntry(); got != want {
			t.Errorf("%+v: %s, want %s", spec, got, want)
		}
	}
}
