package cli

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// fakeProbeAPI is an API server that knows one GPU node, n1, and on the first probe pod created
// calls interrupt (what Ctrl-C does to the command's context), then answers the watch until the
// client goes and the rest with empty successes. It returns a kubeconfig for it.
func fakeProbeAPI(t *testing.T, interrupt func()) (string, *atomic.Int32) {
	t.Helper()
	var created atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		switch {
		case r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, "/nodes/n1"):
			fmt.Fprint(w, `{"kind":"Node","apiVersion":"v1","metadata":{"name":"n1"},"status":{"allocatable":{"nvidia.com/gpu":"8","rdma/rdma_shared_device_a":"63"}}}`)
		case r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/pods"):
			created.Add(1)
			interrupt()
			_, _ = io.Copy(io.Discard, r.Body)
			w.WriteHeader(http.StatusCreated)
			fmt.Fprint(w, `{"kind":"Pod","apiVersion":"v1","metadata":{"name":"probe","namespace":"ns1"}}`)
		case r.Method == http.MethodGet && r.URL.Query().Get("watch") == "true":
			w.WriteHeader(http.StatusOK)
			w.(http.Flusher).Flush()
			<-r.Context().Done()
		case r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, "/pods"):
			fmt.Fprint(w, `{"kind":"PodList","apiVersion":"v1","metadata":{},"items":[]}`)
		default:
			fmt.Fprint(w, `{"kind":"Status","apiVersion":"v1","status":"Success"}`)
		}
	}))
	t.Cleanup(srv.Close)
	kc := filepath.Join(t.TempDir(), "kubeconfig")
	cfg := "apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: " + srv.URL + "}}]\n" +
		"users: [{name: u, user: {token: t}}]\ncontexts: [{name: c, context: {cluster: c, user: u, namespace: ns1}}]\ncurrent-context: c\n"
	if err := os.WriteFile(kc, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return kc, &created
}

// TestDoctorNodeProbeInterrupted: Ctrl-C while doctor topo --node or doctor counters --node runs
// its probe pod is exit 130 with profile detect's words (before: a probe failure, exit 1, or a
// bare "context canceled", with a hint to run nvidia-smi by hand); before the probe pod exists it
// says nothing was left.
func TestDoctorNodeProbeInterrupted(t *testing.T) {
	const want = "error: interrupted: probe pods deleted\n" // profile detect's
	for _, cmd := range []string{"topo", "counters"} {
		args := []string{"doctor", cmd, "--node", "n1"}
		t.Run(cmd, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			kc, created := fakeProbeAPI(t, cancel)
			var out, errb bytes.Buffer
			a := &App{Streams: Streams{In: strings.NewReader(""), Out: &out, Err: &errb}, Now: time.Now, Getenv: func(string) string { return "" }}
			code := a.Run(ctx, append([]string{"ain", "--kubeconfig", kc}, append(args, "--timeout", "20s")...))
			if created.Load() == 0 {
				t.Fatalf("no probe pod was created: exit %d\n%s", code, errb.String())
			}
			if code != 130 || !strings.HasSuffix(errb.String(), want) || strings.Contains(errb.String(), "hint:") {
				t.Errorf("exit %d, want 130 ending %q and no hint\nstderr: %s", code, want, errb.String())
			}
			// Interrupted before anything was made.
			errb.Reset()
			code = a.Run(ctx, append([]string{"ain", "--kubeconfig", kc}, args...))
			if code != 130 || !strings.Contains(errb.String(), "interrupted before a probe pod was created") {
				t.Errorf("already interrupted: exit %d\nstderr: %s", code, errb.String())
			}
		})
	}
}
