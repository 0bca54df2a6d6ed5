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

	"github.com/ain-hpc/ain/internal/ainerr"
	"github.com/ain-hpc/ain/pkg/vllm/vllmsim"
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

func modelServer(t *testing.T, opts vllmsim.Options) (*vllmsim.Server, string) {
	t.Helper()
	s := vllmsim.NewServer(opts)
	ts := httptest.NewServer(s)
	t.Cleanup(ts.Close)
	return s, ts.URL
}

func TestModelsCommand(t *testing.T) {
	_, url := modelServer(t, vllmsim.Options{Models: []string{"qwen"}, Root: "/models/Qwen2.5-7B-Instruct", MaxModelLen: 32768, APIKey: "s3cret"})
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
	srv, url := modelServer(t, vllmsim.Options{FirstTokenDelay: 5 * time.Millisecond})
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
	_, url := modelServer(t, vllmsim.Options{})
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
	_, url := modelServer(t, vllmsim.Options{})
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
	if code != int(ainerr.CheckFailed) || !strings.Contains(out, "FAIL  two") || !strings.Contains(out, "answer:   Paris.") || !strings.Contains(out, `does not state "Lyon"`) {
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

// A reasoning model's thinking is shown (stderr) as it streams, TTFT counts from its first
// token, and a stream cut before [DONE] is an error, not an answer.
func TestChatReasoningAndCutStream(t *testing.T) {
	for _, field := range []string{"reasoning", "reasoning_content"} {
		_, url := modelServer(t, vllmsim.Options{Reasoning: "The port is fixed by IANA.", ReasoningField: field, FirstTokenDelay: 5 * time.Millisecond})
		code, out, errs := runModelCLI(t, map[string]string{"AIN_ENDPOINT": url}, "", "chat", "Which UDP port does RoCEv2 use?")
		if code != 0 || !strings.Contains(errs, "[thinking] The port is fixed by IANA.") || strings.Contains(out, "IANA") ||
			!strings.Contains(out, "4791") || !strings.Contains(errs, "(first token of the reasoning)") {
			t.Fatalf("%s: exit %d\nout: %s\nerr: %s", field, code, out, errs)
		}
	}
	_, url := modelServer(t, vllmsim.Options{CutAfter: 3})
	code, out, errs := runModelCLI(t, map[string]string{"AIN_ENDPOINT": url}, "", "chat", "What is RoCEv2?")
	if code != int(ainerr.Unreachable) || !strings.Contains(errs, "before data: [DONE]") || !strings.Contains(errs, "incomplete") {
		t.Fatalf("cut stream: exit %d\nout: %s\nerr: %s", code, out, errs)
	}
}

func TestBenchServeCommand(t *testing.T) {
	_, url := modelServer(t, vllmsim.Options{TokenInterval: time.Millisecond})
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

// vllm bench serve parity: vLLM's result JSON (key names, per-request arrays, std and pNN
// keys for the requested percentiles, peaks), its --goodput KEY:VALUE syntax, /v1/completions,
// a ShareGPT dataset with per-request output lengths, and a rate sweep with a plot.
func TestBenchServeVLLMParity(t *testing.T) {
	srv, url := modelServer(t, vllmsim.Options{TokenInterval: time.Millisecond})
	env := map[string]string{"AIN_ENDPOINT": url}
	dir := t.TempDir()
	saved := filepath.Join(dir, "vllm.json")
	code, _, errs := runModelCLI(t, env, "", "bench", "serve", "--api", "completions", "--requests", "12", "--concurrency", "4", "--input-len", "20",
		"--output-len", "6", "--ignore-eos", "--goodput", "ttft:10000", "--goodput", "tpot:10000", "--metric-percentiles", "50,99.9", "--save-result", saved, "--label", "ain")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var res map[string]any
	b, _ := os.ReadFile(saved)
	if err := json.Unmarshal(b, &res); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"date", "endpoint_type", "label", "model_id", "num_prompts", "request_rate", "burstiness", "max_concurrency", "duration", "completed", "failed",
		"total_input_tokens", "total_output_tokens", "request_throughput", "request_goodput", "output_throughput", "total_token_throughput",
		"input_lens", "output_lens", "ttfts", "itls", "latencies", "start_times", "queue_times", "generated_texts", "errors", "max_output_tokens_per_s", "max_concurrent_requests",
		"mean_ttft_ms", "median_ttft_ms", "std_ttft_ms", "p50_ttft_ms", "p99.9_ttft_ms", "mean_tpot_ms", "p99.9_itl_ms", "std_e2el_ms", "p50_e2el_ms"} {
		if _, ok := res[k]; !ok {
			t.Errorf("no %q in vLLM's result JSON", k)
		}
	}
	if res["completed"] != 12.0 || res["request_rate"] != "inf" || res["max_concurrency"] != 4.0 || res["endpoint_type"] != "openai" ||
		res["request_goodput"] != res["request_throughput"] || len(res["itls"].([]any)) != 12 || len(res["queue_times"].([]any)) != 12 || res["max_concurrent_requests"].(float64) < 1 {
		t.Fatalf("%s", b)
	}
	// /v1/completions with a token-ID prompt of exactly --input-len tokens.
	body := string(srv.Bodies()[len(srv.Bodies())-1])
	if !strings.Contains(body, `"prompt":[`) || !strings.Contains(body, `"max_tokens":6`) || res["input_lens"].([]any)[0] != 20.0 {
		t.Fatalf("completions body %s, input_lens %v", body, res["input_lens"])
	}
	// ShareGPT: the first turn is the prompt, the reply's length the output length.
	code, out, errs := runModelCLI(t, env, "", "bench", "serve", "--dataset-name", "sharegpt", "--dataset-path", filepath.Join("testdata", "sharegpt-sample.json"),
		"--requests", "4", "-o", "vllm-json")
	if code != 0 || json.Unmarshal([]byte(out), &res) != nil || res["completed"] != 4.0 {
		t.Fatalf("sharegpt: exit %d\n%s%s", code, out, errs)
	}
	if body := string(srv.Bodies()[len(srv.Bodies())-1]); !strings.Contains(body, "RoCEv2") && !strings.Contains(body, "GPUDirect") || !strings.Contains(body, `"max_completion_tokens":`) {
		t.Fatalf("sharegpt body %s", body)
	}
	// An explicit --output-len overrides the replies' lengths, also at its default value.
	if code, out, errs = runModelCLI(t, env, "", "bench", "serve", "--dataset-name", "sharegpt", "--dataset-path", filepath.Join("testdata", "sharegpt-sample.json"),
		"--requests", "2", "--output-len", "128"); code != 0 || !strings.Contains(string(srv.Bodies()[len(srv.Bodies())-1]), `"max_completion_tokens":128`) {
		t.Fatalf("sharegpt --output-len 128: exit %d\n%s%s\n%s", code, out, errs, srv.Bodies()[len(srv.Bodies())-1])
	}
	// A rate sweep: one row per rate, the knee, and a plot.
	plot := filepath.Join(dir, "sweep.png")
	code, out, errs = runModelCLI(t, env, "", "bench", "serve", "--requests", "6", "--request-rate", "50,100,inf", "--output-len", "4", "--plot", plot)
	if code != 0 || strings.Count(out, "\n") < 4 || !strings.Contains(out, "TTFT P99 MS") || !strings.Contains(out, "50 ") {
		t.Fatalf("sweep: exit %d\n%s%s", code, out, errs)
	}
	if st, err := os.Stat(plot); err != nil || st.Size() < 1000 {
		t.Fatalf("plot: %v", err)
	}
	// Bad goodput syntax names the flag and the bad pair.
	if code, _, errs = runModelCLI(t, env, "", "bench", "serve", "--goodput", "ttft:50", "--goodput", "tpot:abc"); code != int(ainerr.Usage) || !strings.Contains(errs, `--goodput: "tpot:abc": want`) {
		t.Fatalf("bad goodput: exit %d %s", code, errs)
	}
	// A plot format ain cannot draw is refused before the sweep runs (nothing measured).
	if code, _, errs = runModelCLI(t, env, "", "bench", "serve", "--request-rate", "1,2", "--plot", plot+".jpg"); code != int(ainerr.Usage) || !strings.Contains(errs, ".png or .svg") || strings.Contains(errs, "requests done") {
		t.Fatalf("bad plot format: exit %d %s", code, errs)
	}
}

// `ain chat` fails (not exit 0 with whatever arrived) on vLLM's error chunk in its flat shape
// before data: [DONE], on a stream of nothing but [DONE], and names a 200 HTML page as not an
// event stream rather than a cut stream.
func TestChatFailedStreams(t *testing.T) {
	for fault, want := range map[vllmsim.Fault]string{
		vllmsim.FaultErrorChunk: "reported an error in the answer: CUDA error",
		vllmsim.FaultOnlyDone:   "carried no answer",
		vllmsim.FaultHTML:       "not an event stream (Content-Type text/html",
	} {
		_, url := modelServer(t, vllmsim.Options{Fault: fault})
		code, out, errs := runModelCLI(t, map[string]string{"AIN_ENDPOINT": url}, "", "chat", "What is RoCEv2?")
		if code != int(ainerr.Failure) || !strings.Contains(errs, want) || strings.Contains(errs, "before data: [DONE]") || strings.Contains(errs, "tokens in") {
			t.Errorf("%s: exit %d\nout: %s\nerr: %s", fault, code, out, errs)
		}
	}
}

// On a wedged engine (/health 200, answers never begin or stop mid-way) chat, chat test and
// bench serve end, naming the bound and its flag: chat and chat test exit 6 (chat test at its
// first case, not once per case), bench serve counts each request as failed.
func TestServingCommandsBounded(t *testing.T) {
	_, hang := modelServer(t, vllmsim.Options{Fault: vllmsim.FaultHang})
	_, stall := modelServer(t, vllmsim.Options{Fault: vllmsim.FaultStall})
	golden := filepath.Join("..", "..", "recipes", "qa", "course-qa.yaml")
	for _, tc := range []struct {
		url  string
		args []string
		code ainerr.Code
		want string
	}{
		{hang, []string{"chat", "What is RoCEv2?", "--ttfb-timeout", "200ms"}, ainerr.Timeout, "within 200ms of sending the request (--ttfb-timeout)"},
		{stall, []string{"chat", "What is RoCEv2?", "--idle-timeout", "300ms"}, ainerr.Timeout, "no byte for 300ms (--idle-timeout)"},
		{hang, []string{"chat", "test", "--golden", golden, "--ttfb-timeout", "200ms"}, ainerr.Timeout, "(--ttfb-timeout)"},
		{stall, []string{"bench", "serve", "--requests", "3", "--warmup", "0", "--output-len", "4", "--idle-timeout", "300ms"}, ainerr.Failure, "no byte for 300ms (--idle-timeout) (first: request 0)"},
		{hang, []string{"chat", "hi", "--idle-timeout", "-1s"}, ainerr.Usage, "--idle-timeout -1s: give 0 or a positive duration"},
	} {
		var code int
		var out, errs string
		done := make(chan struct{})
		go func() {
			defer close(done)
			code, out, errs = runModelCLI(t, map[string]string{"AIN_ENDPOINT": tc.url}, "", tc.args...)
		}()
		select {
		case <-done:
		case <-time.After(60 * time.Second):
			t.Fatalf("%v: still running after 60 s", tc.args)
		}
		if code != int(tc.code) || !strings.Contains(out+errs, tc.want) || strings.Count(out, "FAIL  ") > 1 {
			t.Errorf("%v: exit %d, want %d with %q\nout: %s\nerr: %s", tc.args, code, tc.code, tc.want, out, errs)
		}
	}
}

// bench serve --burstiness inf sends at constant gaps of 1/rate (vLLM's limit of the Gamma
// process) instead of hanging, and both result formats say "inf"; NaN is refused.
func TestBenchServeInfiniteBurstiness(t *testing.T) {
	_, url := modelServer(t, vllmsim.Options{})
	env := map[string]string{"AIN_ENDPOINT": url}
	for _, format := range []string{"json", "vllm-json"} {
		var code int
		var out, errs string
		done := make(chan struct{})
		go func() {
			defer close(done)
			code, out, errs = runModelCLI(t, env, "", "bench", "serve", "--requests", "3", "--request-rate", "100", "--burstiness", "inf", "--output-len", "4", "-o", format)
		}()
		select {
		case <-done:
		case <-time.After(60 * time.Second):
			t.Fatal("--burstiness inf: still running after 60 s")
		}
		var res map[string]any
		if code != 0 || json.Unmarshal([]byte(out), &res) != nil {
			t.Fatalf("-o %s: exit %d\n%s%s", format, code, out, errs)
		}
		b := res["burstiness"]
		if cfg, ok := res["config"].(map[string]any); ok {
			b = cfg["burstiness"]
		}
		if b != "inf" {
			t.Errorf("-o %s: burstiness %v in %s", format, b, out)
		}
	}
	if code, _, errs := runModelCLI(t, env, "", "bench", "serve", "--burstiness", "nan"); code != int(ainerr.Usage) || !strings.Contains(errs, "--burstiness NaN: want a number > 0, or inf") {
		t.Fatalf("nan: exit %d: %s", code, errs)
	}
}

// An API key about to travel over plain http:// off this machine is warned about, naming
// the address; to a loopback server (a port-forward) it is not.
func TestAPIKeyInClearTextWarned(t *testing.T) {
	// 192.0.2.1 (TEST-NET-1) answers nothing; the short bound ends the request.
	_, _, errs := runModelCLI(t, map[string]string{"AIN_API_KEY": "s3cret"}, "", "models", "--endpoint", "http://192.0.2.1:9", "--ttfb-timeout", "200ms")
	if !strings.Contains(errs, "WARNING: the API key goes in clear text over http:// to 192.0.2.1:9") || strings.Contains(errs, "s3cret") {
		t.Fatalf("stderr: %s", errs)
	}
	_, url := modelServer(t, vllmsim.Options{APIKey: "s3cret"})
	code, _, errs := runModelCLI(t, map[string]string{"AIN_ENDPOINT": url, "AIN_API_KEY": "s3cret"}, "", "models")
	if code != 0 || strings.Contains(errs, "clear text") {
		t.Fatalf("loopback: exit %d: %s", code, errs)
	}
}

// --connect-to with an empty port is refused, naming the flag, before anything is sent.
func TestConnectToEmptyPortRefused(t *testing.T) {
	code, _, errs := runModelCLI(t, nil, "", "models", "--endpoint", "https://llm.example.com", "--connect-to", "127.0.0.1:")
	if code != int(ainerr.Usage) || !strings.Contains(errs, `--connect-to "127.0.0.1:": want HOST:PORT with a port number`) {
		t.Fatalf("exit %d: %s", code, errs)
	}
	code, _, errs = runModelCLI(t, nil, "", "models", "--endpoint", "ftp://x")
	if code != int(ainerr.Usage) || !strings.Contains(errs, `--endpoint "ftp://x": want http(s)://HOST[:PORT][/v1]`) {
		t.Fatalf("bad endpoint: exit %d: %s", code, errs)
	}
}
