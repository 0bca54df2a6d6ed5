package vllm

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes/fake"

	"github.com/ain-hpc/ain/pkg/openaiclient"
	"github.com/ain-hpc/ain/pkg/openaiclient/clienttest"
	"github.com/ain-hpc/ain/pkg/profile"
	"github.com/ain-hpc/ain/pkg/recipe"
	"github.com/ain-hpc/ain/pkg/vllm/vllmsim"
)

// TestIngressExposesOnlyTheAPI serves the Ingress the course recipe renders (through the
// stand-in controller, which honours its rules and TLS Secret) in front of a simulated vLLM
// that, like vLLM, requires the API key on /v1 and not on /invocations, /tokenize or /metrics
// (vLLM guards /v1, /v2, /inference and /cohere). Through the ingress: /v1 needs the key,
// /health answers, and /invocations (full inference without the key), /tokenize, /metrics,
// /v10 get the controller's 404. Directly at the server, /invocations and /metrics answer
// without the key: that is what the ingress must not expose.
func TestIngressExposesOnlyTheAPI(t *testing.T) {
	r, err := recipe.Parse("vllm.yaml", mustRead(t, "../../recipes/vllm.yaml"), []string{"ingress.host=llm.ain.test", "servedModelName=test-model"})
	if err != nil {
		t.Fatal(err)
	}
	objs, err := BuildObjects(r, profile.Default(), ObjectOptions{Namespace: "llm"})
	if err != nil {
		t.Fatal(err)
	}
	kube := fake.NewClientset(objs.Ingress)
	cl := &Cluster{Kube: kube, Namespace: "llm"}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	tlsOut, err := cl.EnsureTLS(ctx, r.Serving.Ingress, objs.Name, nil, time.Now(), false)
	if err != nil || !tlsOut.Created || len(tlsOut.CA) == 0 {
		t.Fatalf("EnsureTLS: %+v %v", tlsOut, err)
	}
	// A second run finds and checks it instead of creating another.
	if again, err := cl.EnsureTLS(ctx, r.Serving.Ingress, "vllm", nil, time.Now(), false); err != nil || again.Created {
		t.Fatalf("EnsureTLS again: %+v %v", again, err)
	}
	srv := httptest.NewServer(vllmsim.NewServer(vllmsim.Options{APIKey: "k"}))
	defer srv.Close()
	ready := make(chan string, 1)
	go func() {
		_ = (&vllmsim.IngressProxy{Kube: kube, Namespace: "llm", Name: "vllm", Backend: srv.URL}).Run(ctx, ready)
	}()
	addr := <-ready

	// Discovery finds the ingress by its published address and trusts the created CA.
	st, err := cl.Status(ctx, "")
	if err == nil {
		t.Fatalf("no Deployments applied, yet a status: %+v", st)
	}
	c := clienttest.NewClient(t, openaiclient.Options{Endpoint: "https://llm.ain.test", ConnectTo: addr, CAPEM: tlsOut.CA, CAName: "ca.crt", APIKey: "k"})
	if _, err := c.Models(ctx); err != nil {
		t.Fatalf("/v1/models through the ingress: %v", err)
	}
	if err := c.Health(ctx); err != nil {
		t.Fatalf("/health through the ingress: %v", err)
	}
	const ingress = "https://llm.ain.test"
	get := func(base, method, path string) int {
		req, _ := http.NewRequestWithContext(ctx, method, base+path, strings.NewReader(`{"model":"test-model","messages":[{"role":"user","content":"hi"}],"prompt":"hi"}`))
		hc := http.DefaultClient
		if base == ingress {
			hc = c.HTTPClient()
			req.Header.Set("Authorization", "Bearer k")
		}
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatalf("%s %s: %v", method, path, err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	for _, tc := range []struct {
		method, path string
		direct, ing  int
	}{
		{"POST", "/invocations", 200, 404},
		{"POST", "/tokenize", 200, 404},
		{"GET", "/metrics", 200, 404},
		{"GET", "/v10/models", 404, 404},
		{"GET", "/health/x", 404, 404},
		{"GET", "/v1/models", 401, 200}, // directly: no key sent
	} {
		if got := get(srv.URL, tc.method, tc.path); got != tc.direct {
			t.Errorf("direct %s %s: %d, want %d", tc.method, tc.path, got, tc.direct)
		}
		if got := get(ingress, tc.method, tc.path); got != tc.ing {
			t.Errorf("ingress %s %s: %d, want %d", tc.method, tc.path, got, tc.ing)
		}
	}
}
