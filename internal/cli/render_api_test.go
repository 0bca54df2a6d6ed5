package cli

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ain-hpc/ain/pkg/sandbox/sandboxtest"
)

// render with no cluster: the documented default per recipe (current stack), --api and the
// profile's spec.jobAPI force one, and bad values name the flag or the profile field.
func TestRenderJobAPI(t *testing.T) {
	home := t.TempDir()
	prof := filepath.Join(home, "legacy.yaml")
	if err := os.WriteFile(prof, []byte("apiVersion: ain.dev/v1alpha1\nkind: FabricProfile\nspec:\n  fabric: ib\n  jobAPI: training-operator\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	bad := filepath.Join(home, "bad.yaml")
	if err := os.WriteFile(bad, []byte("apiVersion: ain.dev/v1alpha1\nkind: FabricProfile\nspec:\n  fabric: ib\n  jobAPI: trainr\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	run := func(args ...string) (int, string, string) {
		var o, e bytes.Buffer
		a := &App{Streams: Streams{In: strings.NewReader(""), Out: &o, Err: &e}, Now: time.Now,
			Getenv: func(k string) string { return map[string]string{"HOME": home}[k] }}
		return a.Run(context.Background(), append([]string{"ain"}, args...)), o.String(), e.String()
	}
	cases := []struct {
		args        []string
		code        int
		out, errOut string
		notOut      string
	}{
		{[]string{"render", "allreduce"}, 0, "apiVersion: kubeflow.org/v2beta1", "job API: kubeflow.org/v2beta1 MPIJob (mpi-operator) (no cluster asked: no cluster configured", "wait-for-workers"},
		{[]string{"render", "qlora"}, 0, "kind: TrainingRuntime", "trainer.kubeflow.org/v1alpha1 TrainJob", "PyTorchJob"},
		{[]string{"render", "allreduce", "--api", "training-operator"}, 0, "apiVersion: kubeflow.org/v1\n", "(forced)", "launcherCreationPolicy"},
		{[]string{"render", "allreduce", "--api", "trainer"}, 0, "kind: TrainJob", "", ""},
		{[]string{"render", "qlora", "--api", "v1"}, 0, "kind: PyTorchJob", "", ""},
		{[]string{"render", "qlora", "--profile", prof}, 0, "kind: PyTorchJob", "(forced)", "TrainJob"},
		{[]string{"render", "qlora", "--profile", prof, "--api", "auto"}, 0, "kind: TrainJob", "", ""},
		{[]string{"render", "qlora", "--api", "mpi-operator"}, 2, "", "runs MPI recipes only", ""},
		{[]string{"render", "qlora", "--api", "kueue"}, 2, "", "--api kueue", ""},
		{[]string{"render", "qlora", "--profile", bad}, 2, "", "spec.jobAPI", ""},
		{[]string{"train", "allreduce", "--dry-run=client", "--api", "mpi-operator"}, 0, "launcherCreationPolicy: WaitForWorkersReady", "", ""},
		// A kubeconfig named but missing is said, not "no cluster" (issue 19).
		{[]string{"render", "qlora", "--kubeconfig", filepath.Join(home, "gone.yaml")}, 0, "kind: TrainJob", "(no cluster asked: kubeconfig " + filepath.Join(home, "gone.yaml") + ": stat", ""},
	}
	for _, c := range cases {
		code, out, errOut := run(c.args...)
		if code != c.code || !strings.Contains(out, c.out) || !strings.Contains(errOut, c.errOut) || (c.notOut != "" && strings.Contains(out, c.notOut)) {
			t.Errorf("ain %s: exit %d (want %d), stdout has %q: %v, stderr has %q: %v, stdout lacks %q: %v\nstderr: %s",
				strings.Join(c.args, " "), code, c.code, c.out, strings.Contains(out, c.out), c.errOut, strings.Contains(errOut, c.errOut),
				c.notOut, c.notOut == "" || !strings.Contains(out, c.notOut), errOut)
		}
	}
}

// On the legacy stack (this package's sandbox runs the training-operator v1.8.1) discovery keeps
// kubeflow.org/v1 for both recipes, the server admits them, and a forced new API is refused with
// the served one as the hint.
func TestRenderLegacyStack(t *testing.T) {
	sb := sandboxtest.Get(t)
	ns := sb.Namespace(t)
	for recipe, kind := range map[string]string{"allreduce": "kind: MPIJob", "qlora": "kind: PyTorchJob"} {
		code, out, errOut := runBenchCLI(t, "render", recipe, "-o", "yaml", "--kubeconfig", sb.Kubeconfig, "-n", ns)
		if code != 0 || !strings.Contains(out, "apiVersion: kubeflow.org/v1\n") || !strings.Contains(out, kind) || !strings.Contains(errOut, "served by") {
			t.Errorf("render %s on the legacy stack: exit %d\n%s\n%s", recipe, code, out, errOut)
		}
	}
	code, _, errOut := runBenchCLI(t, "train", "allreduce", "--dry-run=server", "--kubeconfig", sb.Kubeconfig, "-n", ns)
	if code != 0 || !strings.Contains(errOut, "job API: kubeflow.org/v1") {
		t.Errorf("dry-run on the legacy stack: exit %d\n%s", code, errOut)
	}
	code, _, errOut = runBenchCLI(t, "train", "allreduce", "--api", "mpi-operator", "--dry-run=server", "--kubeconfig", sb.Kubeconfig, "-n", ns)
	if code != 2 || !strings.Contains(errOut, "served as v1") || !strings.Contains(errOut, "--api training-operator") {
		t.Errorf("v2beta1 forced on the legacy stack: exit %d\n%s", code, errOut)
	}
}

// render with a cluster configured asks it which job APIs it serves and nothing else, and
// builds no typed or dynamic client to do so: only a discovery client.
func TestRenderAsksOnlyDiscovery(t *testing.T) {
	var mu sync.Mutex
	var asked []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		asked = append(asked, r.Method+" "+r.URL.Path)
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		switch r.URL.Path {
		case "/api":
			fmt.Fprint(w, `{"kind":"APIVersions","versions":["v1"]}`)
		case "/apis":
			fmt.Fprint(w, `{"kind":"APIGroupList","apiVersion":"v1","groups":[{"name":"kubeflow.org","versions":[{"groupVersion":"kubeflow.org/v1","version":"v1"}],"preferredVersion":{"groupVersion":"kubeflow.org/v1","version":"v1"}}]}`)
		case "/api/v1":
			fmt.Fprint(w, `{"kind":"APIResourceList","groupVersion":"v1","resources":[]}`)
		case "/apis/kubeflow.org/v1":
			fmt.Fprint(w, `{"kind":"APIResourceList","groupVersion":"kubeflow.org/v1","resources":[{"name":"mpijobs","namespaced":true,"kind":"MPIJob","verbs":["get","list","create"]}]}`)
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	home := t.TempDir()
	kubeconfig := filepath.Join(home, "config")
	cfg := fmt.Sprintf("apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: %s\ncontexts:\n- name: c\n  context:\n    cluster: c\n    user: u\nusers:\n- name: u\n  user: {}\ncurrent-context: c\n", srv.URL)
	if err := os.WriteFile(kubeconfig, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	var o, e bytes.Buffer
	a := &App{Streams: Streams{In: strings.NewReader(""), Out: &o, Err: &e}, Now: time.Now,
		Getenv: func(k string) string { return map[string]string{"HOME": home, "KUBECONFIG": kubeconfig}[k] }}
	code := a.Run(context.Background(), []string{"ain", "render", "allreduce"})
	if code != 0 || !strings.Contains(o.String(), "apiVersion: kubeflow.org/v1\n") || !strings.Contains(e.String(), "served by "+srv.URL) {
		t.Fatalf("render with a cluster serving kubeflow.org/v1: exit %d\nstdout: %s\nstderr: %s", code, o.String(), e.String())
	}
	mu.Lock()
	defer mu.Unlock()
	discovery := map[string]bool{"GET /api": true, "GET /apis": true, "GET /api/v1": true, "GET /apis/kubeflow.org/v1": true}
	for _, req := range asked {
		if !discovery[req] {
			t.Errorf("render sent %s: it asks the cluster only which APIs it serves (sent: %q)", req, asked)
		}
	}
	kc, err := a.clusterConfig()
	if err != nil {
		t.Fatal(err)
	}
	if kc.Kube != nil || kc.Dynamic != nil || kc.Discovery != nil {
		t.Errorf("clusterConfig, render's way to the cluster, built clients: %+v", kc)
	}
}
