package integration_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"sigs.k8s.io/yaml"

	"github.com/ain-hpc/ain/internal/cli"
	"github.com/ain-hpc/ain/pkg/sandbox"
	"github.com/ain-hpc/ain/pkg/sandbox/sandboxtest"
	"github.com/ain-hpc/ain/pkg/vllm"
)

var (
	crdGVR          = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
	gatewayClassGVR = schema.GroupVersionResource{Group: "gateway.networking.k8s.io", Version: "v1", Resource: "gatewayclasses"}
	gatewayGVR      = schema.GroupVersionResource{Group: "gateway.networking.k8s.io", Version: "v1", Resource: "gateways"}
	httpRouteGVR    = schema.GroupVersionResource{Group: "gateway.networking.k8s.io", Version: "v1", Resource: "httproutes"}
)

// TestIntegrationGatewayAPI installs the Gateway API's standard CRDs from the module ain builds
// against (sigs.k8s.io/gateway-api, config/crd/standard) into the sandbox's real kube-apiserver,
// so that its OpenAPI schema and CEL rules judge the HTTPRoute and Gateway `ain serve` applies
// (a server dry run, then for real). No Gateway controller runs: the test writes the statuses a
// controller would (a refusal, then acceptance and an address) and checks what `ain serve status`
// makes of them, that a re-run keeps the entry, and that `ain serve delete` removes ain's route
// and Gateway but never a shared Gateway.
func TestIntegrationGatewayAPI(t *testing.T) {
	sb := sandboxtest.Get(t)
	ctx := context.Background()
	dyn := sb.Dynamic(t)
	installGatewayCRDs(t, dyn)
	ns := sb.Namespace(t)
	if err := sandbox.EnsureSharedPVC(ctx, sb.REST, ns, sandbox.DefaultSharedClaim); err != nil {
		t.Fatal(err)
	}
	class := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "gateway.networking.k8s.io/v1", "kind": "GatewayClass",
		"metadata": map[string]any{"name": "ain-test"},
		"spec":     map[string]any{"controllerName": "example.com/ain-test"},
	}}
	if _, err := dyn.Resource(gatewayClassGVR).Create(ctx, class, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = dyn.Resource(gatewayClassGVR).Delete(context.Background(), "ain-test", metav1.DeleteOptions{})
	})
	t.Setenv("AIN_API_KEY", "")
	t.Setenv("AIN_ENDPOINT", "")
	run := func(args ...string) (int, string, string) {
		t.Helper()
		var out, errb bytes.Buffer
		code := cli.Run(ctx, cli.Streams{In: strings.NewReader(""), Out: &out, Err: &errb}, append([]string{"ain", "--kubeconfig", sb.Kubeconfig, "-n", ns}, args...))
		return code, out.String(), errb.String()
	}
	base := []string{"serve", "vllm", "--model", "/shared/models/Qwen2.5-7B-Instruct", "--replicas", "1", "--host", "llm.ain-sandbox.test"}

	// The API server accepts every object: own Gateway with finite timeouts (the CRD's CEL rule
	// backendRequest <= request), a route on a shared Gateway's listener.
	for _, extra := range [][]string{
		{"--name", "gw1", "--gateway-class", "ain-test", "--set", "gateway.timeouts.request=1h", "--set", "gateway.timeouts.backendRequest=30m"},
		{"--name", "gw1", "--gateway-class", "ain-test"},
		{"--name", "gw2", "--gateway", ns + "/shared:https"},
	} {
		args := append(append(append([]string{}, base...), extra...), "--dry-run=server", "-o", "yaml")
		code, out, errs := run(args...)
		if extra[2] == "--gateway" {
			// The shared Gateway does not exist yet: named, not guessed.
			if code != 2 || !strings.Contains(errs, "Gateway "+ns+"/shared does not exist") {
				t.Fatalf("%v: exit %d\n%s%s", extra, code, out, errs)
			}
			continue
		}
		if code != 0 || !strings.Contains(out, "kind: HTTPRoute") || !strings.Contains(out, "kind: Gateway") || strings.Contains(out, "kind: Ingress") {
			t.Fatalf("server dry run %v: exit %d\n%s%s", extra, code, out, errs)
		}
		if !strings.Contains(errs, "WARNING: GatewayClass ain-test is not accepted") {
			t.Errorf("a GatewayClass no controller accepted is not warned about:\n%s", errs)
		}
	}
	// A value the CRD refuses is refused by ain first, with its line: no request is sent.
	if code, _, errs := run(append(append([]string{}, base...), "--name", "gw1", "--gateway-class", "ain-test", "--set", "gateway.timeouts.request=10m", "--set", "gateway.timeouts.backendRequest=1h", "--dry-run=server")...); code != 2 ||
		!strings.Contains(errs, "backendRequest: 1h is longer than timeouts.request 10m") {
		t.Fatalf("timeouts ain should refuse: exit %d\n%s", code, errs)
	}

	// For real, on a Gateway ain creates.
	code, out, errs := run(append(append([]string{}, base...), "--name", "gw1", "--gateway-class", "ain-test", "--no-wait")...)
	if code != 0 || !strings.Contains(errs, "expose: gateway (--gateway-class ain-test)") || !strings.Contains(errs, "applied Gateway "+ns+"/gw1") ||
		!strings.Contains(errs, "applied HTTPRoute "+ns+"/gw1") || !strings.Contains(errs, "TLS: created Secret gw1-tls") {
		t.Fatalf("ain serve --gateway-class: exit %d\n%s%s", code, out, errs)
	}
	rt, err := dyn.Resource(httpRouteGVR).Namespace(ns).Get(ctx, "gw1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	rules, _, _ := unstructured.NestedSlice(rt.Object, "spec", "rules")
	if b, _ := json.Marshal(rules); len(rules) != 1 || !strings.Contains(string(b), `"matches":[{"path":{"type":"PathPrefix","value":"/v1"}},{"path":{"type":"Exact","value":"/health"}}]`) ||
		!strings.Contains(string(b), `"timeouts":{"backendRequest":"0s","request":"0s"}`) {
		t.Fatalf("stored rules: %s", b)
	}

	// No controller has reported: pending, said so.
	if _, out, _ := run("serve", "status", "gw1"); !strings.Contains(out, "not serving yet: HTTPRoute gw1: no Gateway controller has reported on it") {
		t.Errorf("status before a controller report:\n%s", out)
	}
	// The controller refuses the route: the reason is shown, as its controller gave it.
	gen := rt.GetGeneration()
	setStatus(t, dyn, httpRouteGVR, ns, "gw1", map[string]any{"parents": []any{map[string]any{
		"parentRef":      map[string]any{"group": "gateway.networking.k8s.io", "kind": "Gateway", "name": "gw1", "sectionName": "https"},
		"controllerName": "example.com/ain-test",
		"conditions": []any{
			condition("Accepted", "False", "NotAllowedByListeners", "no listener admits this route", gen),
			condition("ResolvedRefs", "True", "ResolvedRefs", "", gen),
		},
	}}})
	code, out, errs = run("serve", "status", "gw1")
	if code != 0 || !strings.Contains(out, "not serving: HTTPRoute gw1 is not accepted by Gateway "+ns+"/gw1 (listener https): NotAllowedByListeners: no listener admits this route") {
		t.Errorf("status of a refused route: exit %d\n%s%s", code, out, errs)
	}
	// Accepted, and the Gateway published an address: the URL is the host's.
	setStatus(t, dyn, httpRouteGVR, ns, "gw1", map[string]any{"parents": []any{map[string]any{
		"parentRef":      map[string]any{"group": "gateway.networking.k8s.io", "kind": "Gateway", "name": "gw1", "sectionName": "https"},
		"controllerName": "example.com/ain-test",
		"conditions": []any{
			condition("Accepted", "True", "Accepted", "", gen),
			condition("ResolvedRefs", "True", "ResolvedRefs", "", gen),
		},
	}}})
	gw, err := dyn.Resource(gatewayGVR).Namespace(ns).Get(ctx, "gw1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	setStatus(t, dyn, gatewayGVR, ns, "gw1", map[string]any{
		"addresses": []any{map[string]any{"type": "IPAddress", "value": "127.0.0.1"}},
		"conditions": []any{
			condition("Accepted", "True", "Accepted", "", gw.GetGeneration()),
			condition("Programmed", "True", "Programmed", "", gw.GetGeneration()),
		},
	})
	code, out, errs = run("serve", "status", "gw1", "-o", "json")
	var st []vllm.ServingStatus
	if code != 0 || json.Unmarshal([]byte(out), &st) != nil || len(st) != 1 || st[0].Entry != "gateway" || st[0].URL != "https://llm.ain-sandbox.test" ||
		st[0].Address != "127.0.0.1" || st[0].TLSSecret != "gw1-tls" || st[0].Route == nil || st[0].Route.Problem != "" || !st[0].Route.OwnGateway {
		t.Errorf("status of an accepted route: exit %d\n%s%s", code, out, errs)
	}

	// A re-run without an entry flag keeps the route and its Gateway's class, even with an
	// accepted GatewayClass around and an Ingress as the recipe's other section.
	code, out, errs = run(append(append([]string{}, base...), "--name", "gw1", "--no-wait")...)
	if code != 0 || !strings.Contains(errs, "expose: gateway (auto: model server gw1 already has HTTPRoute gw1, and a re-run keeps its entry") ||
		strings.Contains(errs, "pruned") || strings.Contains(errs, "Ingress") {
		t.Fatalf("re-run: exit %d\n%s%s", code, out, errs)
	}

	// A route on a shared Gateway: attached, never modified, never deleted.
	shared := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "gateway.networking.k8s.io/v1", "kind": "Gateway",
		"metadata": map[string]any{"name": "shared", "namespace": ns, "labels": map[string]any{"team": "platform"}},
		"spec": map[string]any{"gatewayClassName": "ain-test", "listeners": []any{map[string]any{
			"name": "https", "port": int64(443), "protocol": "HTTPS",
			"tls": map[string]any{"mode": "Terminate", "certificateRefs": []any{map[string]any{"name": "platform-tls"}}},
		}}},
	}}
	if _, err := dyn.Resource(gatewayGVR).Namespace(ns).Create(ctx, shared, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	code, out, errs = run(append(append([]string{}, base...), "--name", "gw2", "--gateway", "shared:https", "--no-wait")...)
	if code != 0 || !strings.Contains(errs, "applied HTTPRoute "+ns+"/gw2") || strings.Contains(errs, "applied Gateway") || !strings.Contains(errs, "TLS: terminated by the listener of Gateway "+ns+"/shared") {
		t.Fatalf("ain serve --gateway: exit %d\n%s%s", code, out, errs)
	}
	if code, out, errs = run("serve", "delete", "gw2"); code != 0 || !strings.Contains(out, "deleted HTTPRoute/gw2") || strings.Contains(out, "Gateway/") {
		t.Fatalf("delete gw2: exit %d\n%s%s", code, out, errs)
	}
	if _, err := dyn.Resource(gatewayGVR).Namespace(ns).Get(ctx, "shared", metav1.GetOptions{}); err != nil {
		t.Fatalf("ain serve delete removed the shared Gateway: %v", err)
	}
	if code, out, errs = run("serve", "delete", "gw1"); code != 0 || !strings.Contains(out, "deleted Gateway/gw1") || !strings.Contains(out, "deleted HTTPRoute/gw1") {
		t.Fatalf("delete gw1: exit %d\n%s%s", code, out, errs)
	}

	// auto for a new model server: the Gateway API once exactly one GatewayClass is accepted.
	setStatus(t, dyn, gatewayClassGVR, "", "ain-test", map[string]any{"conditions": []any{condition("Accepted", "True", "Accepted", "", 1)}})
	code, out, errs = run(append(append([]string{}, base...), "--name", "gw3", "--dry-run=server", "-o", "yaml")...)
	if code != 0 || !strings.Contains(errs, "expose: gateway (auto: a new model server, the cluster serves the Gateway API, and GatewayClass ain-test is its only accepted class") ||
		!strings.Contains(out, "gatewayClassName: ain-test") {
		t.Fatalf("auto with an accepted class: exit %d\n%s%s", code, out, errs)
	}
}

// installGatewayCRDs creates the standard channel's GatewayClass, Gateway and HTTPRoute CRDs of
// the gateway-api module in go.mod, waits until they are established, and removes them when
// the test ends (the package's other tests run on a cluster without the Gateway API).
func installGatewayCRDs(t *testing.T, dyn dynamic.Interface) {
	t.Helper()
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "sigs.k8s.io/gateway-api").Output()
	if err != nil {
		t.Fatalf("go list -m sigs.k8s.io/gateway-api: %v", err)
	}
	dir := filepath.Join(strings.TrimSpace(string(out)), "config", "crd", "standard")
	ctx := context.Background()
	var names []string
	for _, f := range []string{"gatewayclasses", "gateways", "httproutes"} {
		data, err := os.ReadFile(filepath.Join(dir, "gateway.networking.k8s.io_"+f+".yaml"))
		if err != nil {
			t.Fatal(err)
		}
		j, err := yaml.YAMLToJSON(data)
		if err != nil {
			t.Fatal(err)
		}
		u := &unstructured.Unstructured{}
		if err := u.UnmarshalJSON(j); err != nil {
			t.Fatal(err)
		}
		if _, err := dyn.Resource(crdGVR).Create(ctx, u, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatalf("CRD %s: %v", u.GetName(), err)
		}
		names = append(names, u.GetName())
	}
	t.Cleanup(func() {
		for _, n := range names {
			_ = dyn.Resource(crdGVR).Delete(context.Background(), n, metav1.DeleteOptions{})
		}
	})
	for _, n := range names {
		if _, ok := sandboxtest.Poll(time.Minute, 200*time.Millisecond, func() bool {
			crd, err := dyn.Resource(crdGVR).Get(ctx, n, metav1.GetOptions{})
			if err != nil {
				return false
			}
			conds, _, _ := unstructured.NestedSlice(crd.Object, "status", "conditions")
			for _, c := range conds {
				if m, ok := c.(map[string]any); ok && m["type"] == "Established" && m["status"] == "True" {
					return true
				}
			}
			return false
		}); !ok {
			t.Fatalf("CRD %s not established within a minute", n)
		}
	}
}

func condition(typ, status, reason, msg string, gen int64) map[string]any {
	return map[string]any{"type": typ, "status": status, "reason": reason, "message": msg,
		"observedGeneration": gen, "lastTransitionTime": time.Now().UTC().Format(time.RFC3339)}
}

// setStatus writes an object's status through its status subresource, as its controller does.
func setStatus(t *testing.T, dyn dynamic.Interface, gvr schema.GroupVersionResource, ns, name string, status map[string]any) {
	t.Helper()
	var ri dynamic.ResourceInterface = dyn.Resource(gvr)
	if ns != "" {
		ri = dyn.Resource(gvr).Namespace(ns)
	}
	u, err := ri.Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	u.Object["status"] = status
	if _, err := ri.UpdateStatus(context.Background(), u, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("status of %s %s: %v", gvr.Resource, name, err)
	}
}
