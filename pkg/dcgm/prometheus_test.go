package dcgm

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
)

// TestFromPrometheus: one /federate request for the DCGM series (under the server's path prefix,
// text format asked for), the GPUs of the nodes asked kept, a node with no series named; a
// server that refuses says its status and first line.
func TestFromPrometheus(t *testing.T) {
	page, err := os.ReadFile("testdata/healthy-8gpu.txt")
	if err != nil {
		t.Fatal(err)
	}
	var got *http.Request
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = r
		if r.URL.Path == "/prom/federate" {
			w.Header().Set("Content-Type", "text/plain; version=0.0.4")
			_, _ = w.Write(page)
			return
		}
		http.Error(w, "unauthorized\nmore", http.StatusUnauthorized)
	}))
	defer srv.Close()

	read := FromPrometheus(srv.Client(), srv.URL+"/prom")
	gpus, err := read(context.Background(), []string{"dgx-h100-01", "gpu-node-9"})
	var ns *NotScrapedError
	if len(gpus) != 8 || !errors.As(err, &ns) || len(ns.Nodes) != 1 || ns.Nodes[0] != "gpu-node-9" {
		t.Fatalf("%d GPUs, %v", len(gpus), err)
	}
	if m := got.URL.Query()["match[]"]; len(m) != 1 || m[0] != `{__name__=~"DCGM_FI_.+"}` || !strings.HasPrefix(got.Header.Get("Accept"), "text/plain") {
		t.Errorf("request %s, Accept %q", got.URL, got.Header.Get("Accept"))
	}

	_, err = FromPrometheus(srv.Client(), srv.URL)(context.Background(), []string{"dgx-h100-01"})
	var pe *PrometheusError
	if !errors.As(err, &pe) || pe.Status != "401 Unauthorized" || pe.Body != "unauthorized" {
		t.Fatalf("%v", err)
	}
}

// TestReadLiveFromPrometheus: a Live with Read reads through it, and a node Prometheus lacks is
// partial, not a failure, while others were read.
func TestReadLiveFromPrometheus(t *testing.T) {
	page, err := os.ReadFile("testdata/healthy-8gpu.txt")
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write(page) }))
	defer srv.Close()
	res, err := ReadLive(context.Background(), nil, nil, Live{Nodes: []string{"dgx-h100-01", "other"}, Read: FromPrometheus(srv.Client(), srv.URL)})
	var ns *NotScrapedError
	if err != nil || len(res.GPUs) != 8 || !errors.As(res.Partial, &ns) {
		t.Fatalf("%+v %v", res, err)
	}
	if _, err := ReadLive(context.Background(), nil, nil, Live{Nodes: []string{"other"}, Read: FromPrometheus(srv.Client(), srv.URL)}); !errors.As(err, &ns) {
		t.Fatalf("no GPU read: %v", err)
	}
}
