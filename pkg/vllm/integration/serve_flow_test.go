package integration_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http/httptest"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/ain-hpc/ain/internal/cli"
	"github.com/ain-hpc/ain/pkg/sandbox"
	"github.com/ain-hpc/ain/pkg/sandbox/sandboxtest"
	"github.com/ain-hpc/ain/pkg/vllm/vllmsim"
)

func TestMain(m *testing.M) { sandboxtest.Main(m, sandbox.Config{Nodes: 3}) }

// TestIntegrationServeFlow deploys two replicas with `ain serve`, then reaches them the way
// ain reaches a real vLLM (discovery by label, a port-forward since the sandbox has no
// ingress controller) and runs models, chat, the course's answer checks and a benchmark.
// The model server behind the pods is vllmsim's simulation, clearly not a model.
func TestIntegrationServeFlow(t *testing.T) {
	sb := sandboxtest.Get(t)
	ns := sb.Namespace(t)
	ctx := context.Background()
	if err := sandbox.EnsureSharedPVC(ctx, sb.REST, ns, sandbox.DefaultSharedClaim); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(vllmsim.NewServer(vllmsim.Options{
		Models: []string{"Qwen2.5-7B-Instruct"}, Root: "/shared/models/Qwen2.5-7B-Instruct", APIKey: "sim-key",
		FirstTokenDelay: 5 * time.Millisecond, TokenInterval: time.Millisecond,
	}))
	defer srv.Close()
	if err := sandbox.ForwardPort(ctx, sb.Dir, sandbox.PortForward{PodPort: 8000, Target: strings.TrimPrefix(srv.URL, "http://")}); err != nil {
		t.Fatal(err)
	}
	t.Setenv("AIN_API_KEY", "sim-key")
	t.Setenv("AIN_ENDPOINT", "")
	run := func(args ...string) (int, string, string) {
		t.Helper()
		var out, errb bytes.Buffer
		full := append([]string{"ain", "--kubeconfig", sb.Kubeconfig, "-n", ns}, args...)
		code := cli.Run(ctx, cli.Streams{In: strings.NewReader(""), Out: &out, Err: &errb}, full)
		if strings.Contains(out.String()+errb.String(), "sim-key") {
			t.Errorf("ain %s printed the API key", strings.Join(args, " "))
		}
		return code, out.String(), errb.String()
	}
	serve := []string{"serve", "vllm", "--model", "/shared/models/Qwen2.5-7B-Instruct", "--replicas", "2", "--name", "qwen", "--api-key-from-env",
		"--host", "llm.ain-sandbox.invalid"} // an Ingress is created; it does not answer from here

	// The API server (schema, admission) accepts every object.
	if code, out, errs := run(append(serve, "--dry-run=server", "-o", "yaml")...); code != 0 || !strings.Contains(out, "kind: Deployment") {
		t.Fatalf("server dry run: exit %d\n%s%s", code, out, errs)
	}
	code, out, errs := run(append(serve, "--timeout", "3m")...)
	if code != 0 || !strings.Contains(errs, "ready: ") || !strings.Contains(errs, "serves Qwen2.5-7B-Instruct") {
		t.Fatalf("ain serve: exit %d\n%s%s", code, out, errs)
	}
	t.Logf("ain serve:\n%s", errs)

	code, out, errs = run("serve", "status", "qwen", "-o", "json")
	var st []struct {
		Ready, Desired int
		Replicas       []struct {
			Pods []struct {
				Phase, Node string
				Ready       bool
			}
		}
	}
	if code != 0 || json.Unmarshal([]byte(out), &st) != nil || len(st) != 1 || st[0].Ready != 2 || st[0].Desired != 2 || len(st[0].Replicas) != 2 {
		t.Fatalf("ain serve status: exit %d\n%s%s", code, out, errs)
	}
	for _, r := range st[0].Replicas {
		for _, p := range r.Pods {
			if p.Phase != "Running" || !p.Ready || !strings.HasPrefix(p.Node, "gpu-node-") {
				t.Errorf("pod %+v", p)
			}
		}
	}

	if code, out, errs = run("models"); code != 0 || !strings.Contains(out, "Qwen2.5-7B-Instruct") || !strings.Contains(errs, "port-forward to pod qwen-") ||
		!strings.Contains(errs, "the ingress https://llm.ain-sandbox.invalid does not answer from here") {
		t.Fatalf("ain models: exit %d\n%s%s", code, out, errs)
	}
	if code, out, errs = run("chat", "Which UDP port does RoCEv2 use?"); code != 0 || !strings.Contains(out, "4791") {
		t.Fatalf("ain chat: exit %d\n%s%s", code, out, errs)
	}
	_, file, _, _ := runtime.Caller(0)
	golden := filepath.Join(filepath.Dir(file), "..", "..", "..", "recipes", "qa", "course-qa.yaml")
	if code, out, errs = run("chat", "test", "--golden", golden); code != 0 || !strings.Contains(out, "10/10 passed") {
		t.Fatalf("ain chat test: exit %d\n%s%s", code, out, errs)
	}
	code, out, errs = run("bench", "serve", "--requests", "20", "--concurrency", "4", "--input-len", "32", "--output-len", "16", "--ignore-eos", "-o", "json")
	var res struct {
		Completed, Failed int
	}
	if code != 0 || json.Unmarshal([]byte(out), &res) != nil || res.Completed != 20 || res.Failed != 0 {
		t.Fatalf("ain bench serve: exit %d\n%s%s", code, out, errs)
	}
	if _, out, _ = run("serve", "status"); true {
		t.Logf("ain serve status:\n%s", out)
	}

	if code, out, errs = run("serve", "delete", "qwen"); code != 0 || !strings.Contains(out, "deleted Deployment/qwen-0") ||
		!strings.Contains(out, "deleted Ingress/qwen") || !strings.Contains(out, "deleted Secret/qwen-api-key") {
		t.Fatalf("ain serve delete: exit %d\n%s%s", code, out, errs)
	}
}
