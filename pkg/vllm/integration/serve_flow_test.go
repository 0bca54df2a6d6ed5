package integration_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/ain-hpc/ain/internal/cli"
	"github.com/ain-hpc/ain/pkg/openaiclient"
	"github.com/ain-hpc/ain/pkg/sandbox"
	"github.com/ain-hpc/ain/pkg/sandbox/sandboxtest"
	"github.com/ain-hpc/ain/pkg/vllm"
	"github.com/ain-hpc/ain/pkg/vllm/vllmsim"
)

func TestMain(m *testing.M) {
	sandboxtest.Main(m, sandbox.Config{Nodes: 3, Stack: sandbox.StackLegacy})
}

// TestIntegrationServeFlow deploys two replicas with `ain serve` against the real API server,
// then reaches them the way clients reach a real vLLM: through the HTTPS Ingress. The sandbox
// has no ingress controller, so vllmsim.IngressProxy stands in for one on loopback: it reads
// the Ingress and its TLS Secret from the API server (what ain rendered and created), routes
// only the Ingress's paths with their Exact/Prefix semantics, and publishes its address in the
// Ingress's status, where ain's discovery finds it. What is not exercised: a real controller's
// own behaviour (ingress-nginx annotations such as proxy-buffering are asserted on the object
// only). The model server behind the pods is vllmsim's simulation, clearly not a model.
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
	pctx, stopProxy := context.WithCancel(ctx)
	defer stopProxy()
	proxyAddr := make(chan string, 1)
	go func() {
		p := &vllmsim.IngressProxy{Kube: sb.Clientset(t), Namespace: ns, Name: "qwen", Backend: srv.URL}
		if err := p.Run(pctx, proxyAddr); err != nil && pctx.Err() == nil {
			t.Errorf("ingress stand-in: %v", err)
		}
	}()
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
		"--host", "llm.ain-sandbox.test"} // no DNS knows it: reached at the address the Ingress's status publishes

	// The API server (schema, admission) accepts every object.
	if code, out, errs := run(append(serve, "--dry-run=server", "-o", "yaml")...); code != 0 || !strings.Contains(out, "kind: Deployment") {
		t.Fatalf("server dry run: exit %d\n%s%s", code, out, errs)
	}
	code, out, errs := run(append(serve, "--timeout", "3m")...)
	if code != 0 || !strings.Contains(errs, "ready: https://llm.ain-sandbox.test:") || !strings.Contains(errs, "serves Qwen2.5-7B-Instruct") ||
		!strings.Contains(errs, "TLS: created Secret qwen-tls with a self-signed certificate") || !strings.Contains(out, "https://llm.ain-sandbox.test:") {
		t.Fatalf("ain serve: exit %d\n%s%s", code, out, errs)
	}
	t.Logf("ain serve:\n%s", errs)
	addr := <-proxyAddr
	// The objects in the API server: the Ingress routes /v1 and /health only, with TLS from
	// the Secret named after --name, which ain created as kubernetes.io/tls.
	kc := sb.Clientset(t)
	ing, err := kc.NetworkingV1().Ingresses(ns).Get(ctx, "qwen", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var paths []string
	for _, p := range ing.Spec.Rules[0].HTTP.Paths {
		paths = append(paths, p.Path+" "+string(*p.PathType))
	}
	if strings.Join(paths, ",") != "/v1 Prefix,/health Exact" || ing.Spec.TLS[0].SecretName != "qwen-tls" {
		t.Fatalf("ingress paths %v tls %+v", paths, ing.Spec.TLS)
	}
	sec, err := kc.CoreV1().Secrets(ns).Get(ctx, "qwen-tls", metav1.GetOptions{})
	if err != nil || sec.Type != corev1.SecretTypeTLS || len(sec.Data["ca.crt"]) == 0 {
		t.Fatalf("TLS secret: %v %+v", err, sec)
	}
	for _, d := range []string{"qwen-0", "qwen-1"} {
		dep, err := kc.AppsV1().Deployments(ns).Get(ctx, d, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		res := dep.Spec.Template.Spec.Containers[0].Resources
		if res.Requests.Cpu().IsZero() || res.Requests.Memory().IsZero() || res.Limits.Memory().Cmp(*res.Requests.Memory()) <= 0 {
			t.Errorf("%s resources %+v: want CPU/memory requests and a memory limit above the request (shm)", d, res)
		}
	}
	// Through the ingress, what vLLM leaves unauthenticated outside /v1 is not reachable.
	ic, err := openaiclient.New(openaiclient.Options{Endpoint: "https://llm.ain-sandbox.test", ConnectTo: addr, CAPEM: sec.Data["ca.crt"]})
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{"/metrics", "/invocations", "/tokenize"} {
		resp, err := ic.HTTPClient().Post("https://llm.ain-sandbox.test"+path, "application/json", strings.NewReader(`{"prompt":"x"}`))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 404 {
			t.Errorf("%s through the ingress: %d, want 404", path, resp.StatusCode)
		}
	}

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

	if code, out, errs = run("models"); code != 0 || !strings.Contains(out, "Qwen2.5-7B-Instruct") || !strings.Contains(errs, "the ingress of model server qwen, at its published address") ||
		strings.Contains(errs, "port-forward") {
		t.Fatalf("ain models: exit %d\n%s%s", code, out, errs)
	}
	if code, out, errs = run("chat", "Which UDP port does RoCEv2 use?"); code != 0 || !strings.Contains(out, "4791") {
		t.Fatalf("ain chat: exit %d\n%s%s", code, out, errs)
	}
	_, file, _, _ := runtime.Caller(0)
	golden := filepath.Join(filepath.Dir(file), "..", "..", "..", "recipes", "qa", "course-qa.yaml")
	if code, out, errs = run("chat", "test", "--golden", golden); code != 0 || !strings.Contains(out, "10/10 passed") || !strings.Contains(out, "choice B (4791): The answer is (B)") || !strings.Contains(out, "(C) same") {
		t.Fatalf("ain chat test: exit %d\n%s%s", code, out, errs)
	}
	code, out, errs = run("bench", "serve", "--requests", "20", "--concurrency", "4", "--input-len", "32", "--output-len", "16", "--ignore-eos", "-o", "json")
	var res struct {
		Completed, Failed int
	}
	if code != 0 || json.Unmarshal([]byte(out), &res) != nil || res.Completed != 20 || res.Failed != 0 {
		t.Fatalf("ain bench serve: exit %d\n%s%s", code, out, errs)
	}
	if _, out, _ = run("serve", "status"); !strings.Contains(out, "tls:     Secret qwen-tls") || !strings.Contains(out, "/v1/models lists Qwen2.5-7B-Instruct") {
		t.Errorf("ain serve status: the probe through the ingress:\n%s", out)
	}
	t.Logf("ain serve status:\n%s", out)
	// A port-forward is taken only when asked for, and says what it reaches.
	if code, out, errs = run("models", "--port-forward", "--connect-to", "127.0.0.1:1"); code != 0 || !strings.Contains(errs, "port-forward through the API server to pod qwen-") {
		t.Fatalf("ain models --port-forward: exit %d\n%s%s", code, out, errs)
	}

	// A changed spec rolls the replicas one at a time, each ready before the next; fewer
	// replicas prune the Deployment no longer rendered (its GPU is freed).
	// This run takes the key from a file and nothing in the environment: the readiness check
	// must send it (it used to deploy, then exit 8 on its own 401).
	keyFile := filepath.Join(t.TempDir(), "api-key")
	if err := os.WriteFile(keyFile, []byte("sim-key\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("AIN_API_KEY", "")
	var fromFile []string
	for _, a := range serve {
		if a == "--api-key-from-env" {
			fromFile = append(fromFile, "--api-key-file", keyFile)
			continue
		}
		fromFile = append(fromFile, a)
	}
	code, out, errs = run(append(fromFile, "--set", "maxModelLen=4096", "--timeout", "3m")...)
	if code != 0 || !strings.Contains(errs, "rolling replica qwen-0: waiting for it to be ready before the next one") || !strings.Contains(errs, "ready: ") {
		t.Fatalf("ain serve (changed spec, --api-key-file): exit %d\n%s%s", code, out, errs)
	}
	t.Setenv("AIN_API_KEY", "sim-key")
	one := append(append([]string{}, serve...), "--timeout", "3m")
	for i, a := range one {
		if a == "--replicas" {
			one[i+1] = "1"
		}
	}
	code, out, errs = run(one...)
	if code != 0 || !strings.Contains(errs, "pruned Deployment/qwen-1 (this run no longer renders it)") {
		t.Fatalf("ain serve --replicas 1: exit %d\n%s%s", code, out, errs)
	}
	if _, err := kc.AppsV1().Deployments(ns).Get(ctx, "qwen-1", metav1.GetOptions{}); err == nil {
		t.Fatal("qwen-1 survived --replicas 1")
	}

	// A routine re-run with no key flag and no key in the environment keeps the key: the
	// Deployment still reads it (server-side apply would have dropped an env entry this run did
	// not send), the readiness check passes the server's auth with the key ain read from the
	// Secret, and ain's clients find it there too.
	t.Setenv("AIN_API_KEY", "")
	var plain []string
	for _, a := range one {
		if a != "--api-key-from-env" {
			plain = append(plain, a)
		}
	}
	code, out, errs = run(plain...)
	if code != 0 || !strings.Contains(errs, "auth: vLLM requires the API key it already has: Secret qwen-api-key (key api-key), kept") || !strings.Contains(errs, "ready: ") {
		t.Fatalf("ain serve (re-run without a key flag): exit %d\n%s%s", code, out, errs)
	}
	if ref := apiKeyEnv(t, kc, ns, "qwen-0"); ref == nil || ref.Name != "qwen-api-key" {
		t.Fatalf("after a re-run without a key flag the Deployment reads VLLM_API_KEY from %+v", ref)
	}
	if code, out, errs = run("models"); code != 0 || !strings.Contains(out, "Qwen2.5-7B-Instruct") {
		t.Fatalf("ain models with the key from the server's Secret: exit %d\n%s%s", code, out, errs)
	}
	// The pods started with this version of the key Secret; a new key is a new version, which
	// rolls them (vLLM reads VLLM_API_KEY at start only).
	before := keyVersion(t, kc, ns, "qwen-0")
	if sec, err := kc.CoreV1().Secrets(ns).Get(ctx, "qwen-api-key", metav1.GetOptions{}); err != nil || before == "" || before != sec.ResourceVersion {
		t.Fatalf("pod template key version %q, Secret %v %v", before, err, sec)
	}
	rotated := filepath.Join(t.TempDir(), "new-key")
	if err := os.WriteFile(rotated, []byte("sim-key-rotated\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if code, out, errs = run(append(plain, "--api-key-file", rotated, "--no-wait")...); code != 0 {
		t.Fatalf("ain serve --api-key-file (rotation): exit %d\n%s%s", code, out, errs)
	}
	if after := keyVersion(t, kc, ns, "qwen-0"); after == before || after == "" {
		t.Errorf("a rotated key left the pod template's key version at %q: the pods keep the old key", after)
	}
	// Removing auth takes the explicit flag, says so, and deletes ain's key Secret with it.
	code, out, errs = run(append(plain, "--allow-unauthenticated", "--no-wait")...)
	if code != 0 || !strings.Contains(errs, "WARNING: --allow-unauthenticated") {
		t.Fatalf("ain serve --allow-unauthenticated: exit %d\n%s%s", code, out, errs)
	}
	if ref := apiKeyEnv(t, kc, ns, "qwen-0"); ref != nil {
		t.Errorf("--allow-unauthenticated left VLLM_API_KEY from %+v", ref)
	}
	if code, out, errs = run("serve", "delete", "qwen"); code != 0 || !strings.Contains(out, "deleted Deployment/qwen-0") || strings.Contains(out, "qwen-1") ||
		!strings.Contains(out, "deleted Ingress/qwen") || strings.Contains(out, "qwen-api-key") {
		t.Fatalf("ain serve delete: exit %d\n%s%s", code, out, errs)
	}
}

// keyVersion is the API-key Secret version Deployment name's pod template records.
func keyVersion(t *testing.T, kc kubernetes.Interface, ns, name string) string {
	t.Helper()
	dep, err := kc.AppsV1().Deployments(ns).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return dep.Spec.Template.Annotations[vllm.AnnotationAPIKeyVersion]
}

// apiKeyEnv is the Secret key Deployment name's vLLM reads VLLM_API_KEY from (nil: none).
func apiKeyEnv(t *testing.T, kc kubernetes.Interface, ns, name string) *corev1.SecretKeySelector {
	t.Helper()
	dep, err := kc.AppsV1().Deployments(ns).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range dep.Spec.Template.Spec.Containers[0].Env {
		if e.Name == "VLLM_API_KEY" && e.ValueFrom != nil {
			return e.ValueFrom.SecretKeyRef
		}
	}
	return nil
}
