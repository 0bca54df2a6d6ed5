package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ain-hpc/ain/pkg/ainerr"
	"github.com/ain-hpc/ain/pkg/vllm/vllmtest"
)

// runModelCLI runs the command tree in-process against env and stdin, with the real clock
// (these commands measure time), and returns the exit code, stdout and stderr.
func runModelCLI(t *testing.T, env map[string]string, stdin string, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	a := &App{
		Streams: Streams{In: strings.NewReader(stdin), Out: &out, Err: &errb},
		Now:     time.Now,
		Getenv:  func(k string) string { return env[k] },
	}
	code := a.Run(context.Background(), append([]string{"ain"}, args...))
	return code, out.String(), errb.String()
}

func modelServer(t *testing.T, opts vllmtest.Options) (*vllmtest.Server, string) {
	t.Helper()
	s := vllmtest.NewServer(opts)
	ts := httptest.NewServer(s)
	t.Cleanup(ts.Close)
	return s, ts.URL
}

func TestModelsCommand(t *testing.T) {
	_, url := modelServer(t, vllmtest.Options{Models: []string{"qwen"}, Root: "/models/Qwen2.5-7B-Instruct", MaxModelLen: 32768, APIKey: "s3cret"})
	env := map[string]string{"AIN_ENDPOINT": url, "AIN_API_KEY": "s3cret"}
	code, out, errs := runModelCLI(t, env, "", "models")
	if code != 0 || !strings.Contains(out, "qwen") || !strings.Contains(out, "/models/Qwen2.5-7B-Instruct") || !strings.Contains(out, "32768") {
		t.Fatalf("exit %d\n%s%s", code, out, errs)
	}
	code, out, _ = runModelCLI(t, nil, "", "models", "--endpoint", url, "--api-key", "s3cret", "-o", "json")
	var got struct {
		Models []struct {
			ID string `json:"id"`
		} `json:"models"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &got) != nil || len(got.Models) != 1 || got.Models[0].ID != "qwen" {
		t.Fatalf("exit %d: %s", code, out)
	}
	// Wrong key: exit 8, vLLM's message, a hint, and the key never printed.
	code, out, errs = runModelCLI(t, map[string]string{"AIN_ENDPOINT": url, "AIN_API_KEY": "wrong-key-123"}, "", "models")
	if code != int(ainerr.Unauthorized) || !strings.Contains(errs, "Unauthorized") || !strings.Contains(errs, "hint: ") ||
		strings.Contains(out+errs, "wrong-key-123") || strings.Contains(out+errs, "s3cret") {
		t.Fatalf("exit %d\n%s%s", code, out, errs)
	}
	// No endpoint: usage error.
	code, _, errs = runModelCLI(t, nil, "", "models")
	if code != int(ainerr.Usage) || !strings.Contains(errs, "--endpoint") {
		t.Fatalf("exit %d: %s", code, errs)
	}
	// --insecure is loud.
	_, _, errs = runModelCLI(t, env, "", "models", "--insecure")
	if !strings.Contains(errs, "WARNING: --insecure") {
		t.Fatalf("stderr: %s", errs)
	}
}

func TestChatCommand(t *testing.T) {
	srv, url := modelServer(t, vllmtest.Options{FirstTokenDelay: 5 * time.Millisecond})
	env := map[string]string{"AIN_ENDPOINT": url}
	code, out, errs := runModelCLI(t, env, "", "chat", "Which UDP port does RoCEv2 use?", "--temperature", "0", "--max-tokens", "64")
	if code != 0 || !strings.Contains(out, "4791") || !strings.Contains(errs, "TTFT ") || !strings.Contains(errs, "tokens/s") {
		t.Fatalf("exit %d\nout: %s\nerr: %s", code, out, errs)
	}
	b := srv.Bodies()
	if !bytes.Contains(b[len(b)-1], []byte(`"temperature":0`)) {
		t.Fatalf("wire body %s", b[len(b)-1])
	}
	// Question from stdin, not streamed.
	code, out, _ = runModelCLI(t, env, "What is the capital of France?", "chat", "--no-stream")
	if code != 0 || out != "Paris.\n" {
		t.Fatalf("exit %d: %q", code, out)
	}
	// A model the server does not serve.
	code, _, errs = runModelCLI(t, env, "", "chat", "hi", "--model", "llama")
	if code != int(ainerr.Usage) || !strings.Contains(errs, "served: test-model") {
		t.Fatalf("exit %d: %s", code, errs)
	}
}

func TestChatInteractive(t *testing.T) {
	_, url := modelServer(t, vllmtest.Options{})
	var out, errb bytes.Buffer
	a := &App{
		Streams: Streams{In: strings.NewReader("What is RoCEv2?\n/reset\ncapital of france\n/exit\nnever asked\n"), Out: &out, Err: &errb, InTTY: true},
		Now:     time.Now,
		Getenv:  func(k string) string { return map[string]string{"AIN_ENDPOINT": url}[k] },
	}
	if code := a.Run(context.Background(), []string{"ain", "chat"}); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	if !strings.Contains(out.String(), "layer 3") || !strings.Contains(out.String(), "Paris.") || strings.Count(out.String(), "> ") != 4 {
		t.Fatalf("out:\n%s", out.String())
	}
}

func TestChatTestCommand(t *testing.T) {
	_, url := modelServer(t, vllmtest.Options{})
	env := map[string]string{"AIN_ENDPOINT": url}
	golden := filepath.Join("..", "..", "recipes", "qa", "course-qa.yaml")
	code, out, errs := runModelCLI(t, env, "", "chat", "test", "--golden", golden)
	if code != 0 || !strings.Contains(out, "PASS  rocev2-udp-port") || !strings.Contains(out, "10/10 passed (100%)") {
		t.Fatalf("exit %d\n%s%s", code, out, errs)
	}
	// Below --min-pass: exit 5, the failing answer shown; JSON report.
	bad := filepath.Join(t.TempDir(), "qa.yaml")
	_ = os.WriteFile(bad, []byte("cases:\n- name: one\n  question: capital of France?\n  exact: Paris.\n- name: two\n  question: capital of France?\n  contains: [Lyon]\n"), 0o600)
	code, out, _ = runModelCLI(t, env, "", "chat", "test", "--golden", bad, "--min-pass", "0.9")
	if code != int(ainerr.CheckFailed) || !strings.Contains(out, "FAIL  two") || !strings.Contains(out, "answer:   Paris.") || !strings.Contains(out, `does not contain "Lyon"`) {
		t.Fatalf("exit %d\n%s", code, out)
	}
	code, out, _ = runModelCLI(t, env, "", "chat", "test", "-f", bad, "-o", "json", "--min-pass", "0.5")
	var rep struct {
		Passed   int     `json:"passed"`
		PassRate float64 `json:"passRate"`
		OK       bool    `json:"ok"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &rep) != nil || rep.Passed != 1 || rep.PassRate != 0.5 || !rep.OK {
		t.Fatalf("exit %d: %s", code, out)
	}
	// A broken file: usage error with file:line.
	_ = os.WriteFile(bad, []byte("cases:\n- name: one\n  qestion: x\n"), 0o600)
	code, _, errs = runModelCLI(t, env, "", "chat", "test", "--golden", bad)
	if code != int(ainerr.Usage) || !strings.Contains(errs, "qa.yaml:3: cases[0].qestion: unknown field") {
		t.Fatalf("exit %d: %s", code, errs)
	}
}

func TestBenchServeCommand(t *testing.T) {
	_, url := modelServer(t, vllmtest.Options{TokenInterval: time.Millisecond})
	env := map[string]string{"AIN_ENDPOINT": url}
	code, out, errs := runModelCLI(t, env, "", "bench", "serve", "--requests", "20", "--concurrency", "4", "--request-rate", "200",
		"--input-len", "16", "--output-len", "8", "--ignore-eos", "--slo", "ttft=10000,tpot=10000", "-o", "json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var res map[string]any
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"completed", "failed", "durationS", "requestThroughput", "outputTokenThroughput", "ttftMs", "tpotMs", "itlMs", "e2elMs", "requestGoodput"} {
		if _, ok := res[k]; !ok {
			t.Errorf("no %q in %s", k, out)
		}
	}
	for _, k := range []string{"mean", "median", "p90", "p99"} {
		if _, ok := res["ttftMs"].(map[string]any)[k]; !ok {
			t.Errorf("no ttftMs.%s", k)
		}
	}
	if res["completed"] != 20.0 || res["failed"] != 0.0 || res["requestGoodput"] != res["requestThroughput"] {
		t.Fatalf("%s", out)
	}
	code, out, _ = runModelCLI(t, env, "", "bench", "serve", "--requests", "5", "--output-len", "4")
	for _, h := range []string{"Serving Benchmark Result", "Successful requests:", "Benchmark duration (s):", "Output token throughput (tok/s):", "Median TTFT (ms):", "P99 ITL (ms):", "Mean TPOT (ms):"} {
		if !strings.Contains(out, h) {
			t.Errorf("no %q in\n%s", h, out)
		}
	}
	if code != 0 {
		t.Fatalf("exit %d", code)
	}
	code, _, errs = runModelCLI(t, env, "", "bench", "serve", "--request-rate", "fast")
	if code != int(ainerr.Usage) || !strings.Contains(errs, "--request-rate") {
		t.Fatalf("exit %d: %s", code, errs)
	}
}
