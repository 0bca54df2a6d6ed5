package vllm

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/ain-hpc/ain/pkg/openaiclient"
	"k8s.io/client-go/kubernetes/fake"
)

// Found in the cluster, the server's endpoint is reached with the key its Deployments read,
// unless a key is given; a given endpoint asks no cluster.
func TestConnector(t *testing.T) {
	objs := servingObjects(t)
	cl := &Cluster{Kube: fake.NewClientset(append(clusterState(t, objs, ""), keySecret("vllm-api-key", "api-key", "server-key", false))...), Namespace: "llm"}
	var checked []string
	k := &Connector{Discovery: func() (*Discovery, error) {
		return &Discovery{Cluster: cl, Log: &strings.Builder{}, Reachable: func(_ context.Context, ep Endpoint) error {
			checked = append(checked, ep.URL)
			return nil
		}}, nil
	}, Log: &strings.Builder{}}
	bearer := func(k *Connector) string {
		t.Helper()
		ep, err := k.Find(context.Background(), "")
		if err != nil {
			t.Fatal(err)
		}
		c, err := k.Open(context.Background(), ep)
		if err != nil {
			t.Fatal(err)
		}
		req, _ := http.NewRequest("GET", c.Endpoint(), nil)
		c.Authorize(req)
		return req.Header.Get("Authorization")
	}
	if got := bearer(k); got != "Bearer server-key" || len(checked) != 1 || checked[0] != "https://llm.course.example" {
		t.Errorf("found: %q, checked %q", got, checked)
	}
	k.APIKey = "given"
	if got := bearer(k); got != "Bearer given" {
		t.Errorf("given key: %q", got)
	}
	// The readiness check sends the key the deployment requires, else the one given.
	c, via, err := k.Ready(context.Background(), &ServingStatus{Name: "qwen"}, "deployed-key")
	if err != nil || via != "ingress" {
		t.Fatalf("ready: %q %v", via, err)
	}
	req, _ := http.NewRequest("GET", c.Endpoint(), nil)
	if c.Authorize(req); req.Header.Get("Authorization") != "Bearer deployed-key" {
		t.Errorf("ready: %q", req.Header.Get("Authorization"))
	}
	mapped := errors.New("mapped")
	bad := &Connector{Options: openaiclient.Options{CAFile: "/nonexistent/ca.pem"}, NewError: func(error) error { return mapped }}
	if _, err := bad.Client(Endpoint{URL: "https://x"}); err != mapped {
		t.Errorf("NewError not applied: %v", err)
	}
	given := &Connector{Endpoint: "http://127.0.0.1:8000", Discovery: func() (*Discovery, error) { return nil, errors.New("asked the cluster") }}
	if got := bearer(given); got != "" {
		t.Errorf("given endpoint, no key: %q", got)
	}
	if o := k.ClientOptions(Endpoint{URL: "https://x", Via: "port-forward", ConnectTo: "127.0.0.1:1"}, "k"); o.ConnectTo != "127.0.0.1:1" || o.APIKey != "k" {
		t.Errorf("options %+v", o)
	}
	k.Options = openaiclient.Options{ConnectTo: "10.0.0.1:443"}
	if o := k.ClientOptions(Endpoint{URL: "https://x", Via: "ingress", ConnectTo: "10.9.9.9:443"}, ""); o.ConnectTo != "10.0.0.1:443" {
		t.Errorf("--connect-to lost: %+v", o)
	}
}
