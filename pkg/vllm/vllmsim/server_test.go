package vllmsim

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestListenAndServe: the simulation runs as a standalone server (as the sandbox wraps it)
// and stops with its context.
func TestListenAndServe(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan string, 1)
	done := make(chan error, 1)
	go func() { done <- ListenAndServe(ctx, "127.0.0.1:0", Options{APIKey: "k"}, ready) }()
	addr := <-ready
	get := func(path, key string) (int, string) {
		req, _ := http.NewRequest(http.MethodGet, "http://"+addr+path, nil)
		if key != "" {
			req.Header.Set("Authorization", "Bearer "+key)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, _ := get("/health", ""); code != 200 {
		t.Fatalf("/health %d", code)
	}
	if code, body := get("/v1/models", ""); code != 401 || strings.TrimSpace(body) != `{"error":"Unauthorized"}` {
		t.Fatalf("/v1/models without key: %d %s", code, body)
	}
	if code, body := get("/v1/models", "k"); code != 200 || !strings.Contains(body, `"object":"list"`) || !strings.Contains(body, `"owned_by":"vllm"`) {
		t.Fatalf("/v1/models: %d %s", code, body)
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("did not stop")
	}
}

// TestStreamWireFormat pins vLLM V1's stream: role-only first chunk, content chunks with
// finish_reason on the last token's chunk, the usage chunk with empty choices, then [DONE].
// Prompt tokens count the chat template: 2 words + 5 template tokens + 3 for the assistant
// prefix.
func TestStreamWireFormat(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ready := make(chan string, 1)
	go func() { _ = ListenAndServe(ctx, "127.0.0.1:0", Options{Models: []string{"m"}}, ready) }()
	addr := <-ready
	resp, err := http.Post("http://"+addr+"/v1/chat/completions", "application/json",
		strings.NewReader(`{"model":"m","messages":[{"role":"user","content":"capital of France"}],"stream":true,"stream_options":{"include_usage":true}}`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	events := strings.Split(strings.TrimSpace(string(b)), "\n\n")
	if len(events) != 4 {
		t.Fatalf("%d events:\n%s", len(events), b)
	}
	for i, want := range []string{`"delta":{"role":"assistant","content":""}`, `"delta":{"content":"Paris."},"logprobs":null,"finish_reason":"stop"`,
		`"choices":[],"usage":{"prompt_tokens":11,"total_tokens":12,"completion_tokens":1}`, `data: [DONE]`} {
		if !strings.HasPrefix(events[i], "data: ") || !strings.Contains(events[i], want) {
			t.Errorf("event %d = %s, want %s", i, events[i], want)
		}
	}
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/event-stream") {
		t.Errorf("content type %s", ct)
	}
}
