package openaiclient_test

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"log"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ain-hpc/ain/pkg/next"
	"github.com/ain-hpc/ain/pkg/openaiclient"
	"github.com/ain-hpc/ain/pkg/openaiclient/clienttest"
	"github.com/ain-hpc/ain/pkg/vllm/vllmsim"
)

func TestParseEndpoint(t *testing.T) {
	for in, want := range map[string]string{
		"http://127.0.0.1:8000":      "http://127.0.0.1:8000/v1",
		"http://127.0.0.1:8000/":     "http://127.0.0.1:8000/v1",
		"https://llm.example.com/v1": "https://llm.example.com/v1",
		"https://h/prefix/v1/":       "https://h/prefix/v1",
	} {
		u, err := openaiclient.ParseEndpoint(in)
		if err != nil || u.String() != want {
			t.Errorf("ParseEndpoint(%q) = %v, %v; want %s", in, u, err, want)
		}
	}
	for _, bad := range []string{"", "127.0.0.1:8000", "ftp://h", "https://user:secret@h"} {
		_, err := openaiclient.ParseEndpoint(bad)
		var ee *openaiclient.EndpointError
		if !errors.As(err, &ee) {
			t.Errorf("ParseEndpoint(%q) = %v, want an *openaiclient.EndpointError", bad, err)
		}
		if strings.Contains(fmt.Sprint(err), "secret") {
			t.Errorf("error prints the password: %v", err)
		}
	}
}

func TestModels(t *testing.T) {
	_, url := clienttest.Start(t, vllmsim.Options{Models: []string{"qwen", "qwen-lora"}, Root: "/models/Qwen2.5-7B-Instruct", MaxModelLen: 32768, APIKey: "k"})
	c := clienttest.NewClient(t, openaiclient.Options{Endpoint: url, APIKey: "k"})
	ms, err := c.Models(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(ms) != 2 || ms[0].ID != "qwen" || ms[0].OwnedBy != "vllm" || ms[0].Root != "/models/Qwen2.5-7B-Instruct" || ms[0].MaxModelLen != 32768 {
		t.Fatalf("models = %+v", ms)
	}
	if err := c.Health(context.Background()); err != nil {
		t.Fatal(err)
	}
	if m, err := c.ResolveModel(context.Background(), "qwen-lora"); err != nil || m != "qwen-lora" {
		t.Fatalf("ResolveModel(qwen-lora) = %q, %v", m, err)
	}
	if _, err := c.ResolveModel(context.Background(), ""); openaiclient.ReasonOf(err) != openaiclient.ReasonInput || !strings.Contains(err.Error(), "serves 2 models (qwen, qwen-lora): say which") {
		t.Fatalf("ResolveModel(\"\") with two served = %v", err)
	}
	_, err = c.ResolveModel(context.Background(), "llama")
	if openaiclient.ReasonOf(err) != openaiclient.ReasonInput || !strings.Contains(err.Error(), "served: qwen, qwen-lora") {
		t.Fatalf("ResolveModel(llama) = %v", err)
	}
}

func TestUnauthorized(t *testing.T) {
	_, url := clienttest.Start(t, vllmsim.Options{APIKey: "right-key"})
	for _, key := range []string{"", "wrong-key"} {
		c := clienttest.NewClient(t, openaiclient.Options{Endpoint: url, APIKey: key})
		_, err := c.Models(context.Background())
		if openaiclient.ReasonOf(err) != openaiclient.ReasonUnauthorized {
			t.Fatalf("key %q: Models err = %v, want Unauthorized", key, err)
		}
		_, err = c.Chat(context.Background(), openaiclient.ChatRequest{Model: "test-model", Messages: user("hi")}, nil)
		if openaiclient.ReasonOf(err) != openaiclient.ReasonUnauthorized || !strings.Contains(err.Error(), "Unauthorized") {
			t.Fatalf("key %q: Chat err = %v, want Unauthorized with vLLM's message", key, err)
		}
		if key != "" && strings.Contains(err.Error()+hintOf(err), key) {
			t.Fatalf("the API key is printed: %v", err)
		}
	}
}

func TestConnectionRefused(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	c := clienttest.NewClient(t, openaiclient.Options{Endpoint: "http://" + addr})
	_, err = c.Models(context.Background())
	if openaiclient.ReasonOf(err) != openaiclient.ReasonUnreachable || !strings.Contains(err.Error(), "connection refused at "+addr) {
		t.Fatalf("err = %v", err)
	}
	if !strings.Contains(hintOf(err), "ready") {
		t.Fatalf("hint = %q", hintOf(err))
	}
}

func TestTLS(t *testing.T) {
	ts := httptest.NewUnstartedServer(vllmsim.NewServer(vllmsim.Options{}))
	ts.Config.ErrorLog = log.New(io.Discard, "", 0) // the refused handshakes are expected
	ts.StartTLS()
	defer ts.Close()
	// Unknown CA: verified by default, the error says which CAs were trusted.
	c := clienttest.NewClient(t, openaiclient.Options{Endpoint: ts.URL})
	_, err := c.Models(context.Background())
	if openaiclient.ReasonOf(err) != openaiclient.ReasonUnreachable || !strings.Contains(err.Error(), "not signed by a CA trusted here") {
		t.Fatalf("unknown CA: err = %v", err)
	}
	if !strings.Contains(hintOf(err), "--ca-file") {
		t.Fatalf("hint = %q", hintOf(err))
	}
	// --ca-file with the server's CA.
	ca := filepath.Join(t.TempDir(), "ca.pem")
	var buf bytes.Buffer
	_ = pem.Encode(&buf, &pem.Block{Type: "CERTIFICATE", Bytes: ts.Certificate().Raw})
	if err := os.WriteFile(ca, buf.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	c = clienttest.NewClient(t, openaiclient.Options{Endpoint: ts.URL, CAFile: ca})
	if _, err := c.Models(context.Background()); err != nil {
		t.Fatalf("with --ca-file: %v", err)
	}
	// --insecure.
	c = clienttest.NewClient(t, openaiclient.Options{Endpoint: ts.URL, Insecure: true})
	if _, err := c.Models(context.Background()); err != nil {
		t.Fatalf("insecure: %v", err)
	}
	// A CA file without certificates is a usage error.
	bad := filepath.Join(t.TempDir(), "bad.pem")
	_ = os.WriteFile(bad, []byte("not pem"), 0o600)
	var cfe *openaiclient.CAFileError
	if _, err := openaiclient.New(openaiclient.Options{Endpoint: ts.URL, CAFile: bad}); !errors.As(err, &cfe) || cfe.Path != bad {
		t.Fatalf("bad CA file: %v", err)
	}
	// Plain HTTP server, https endpoint.
	_, url := clienttest.Start(t, vllmsim.Options{})
	c = clienttest.NewClient(t, openaiclient.Options{Endpoint: strings.Replace(url, "http://", "https://", 1)})
	_, err = c.Models(context.Background())
	if !strings.Contains(fmt.Sprint(err), "does not speak TLS") {
		t.Fatalf("https to http server: %v", err)
	}
}

func user(q string) []openaiclient.Message { return []openaiclient.Message{{Role: "user", Content: q}} }

func TestChatStreamAndTemperatureZero(t *testing.T) {
	srv, url := clienttest.Start(t, vllmsim.Options{Models: []string{"m"}})
	c := clienttest.NewClient(t, openaiclient.Options{Endpoint: url})
	var deltas []string
	zero, seed := 0.0, 7
	res, err := c.Chat(context.Background(), openaiclient.ChatRequest{
		Model: "m", Messages: user("Which UDP port does RoCEv2 use?"), MaxTokens: 64,
		Temperature: &zero, Seed: &seed, Stream: true,
		OnDelta: func(s string) { deltas = append(deltas, s) },
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(res.Text, "4791") || strings.Join(deltas, "") != res.Text || len(deltas) < 5 {
		t.Fatalf("text %q from %d deltas", res.Text, len(deltas))
	}
	if res.FinishReason != "stop" || res.CompletionTokens != len(deltas) || res.PromptTokens == 0 {
		t.Fatalf("result = %+v", res)
	}
	if res.TTFT <= 0 || res.Duration < res.TTFT {
		t.Fatalf("timing = %v / %v", res.TTFT, res.Duration)
	}
	// The wire JSON has "temperature":0 although go-openai's field is omitempty, and keeps
	// the other fields go-openai encoded.
	bodies := srv.Bodies()
	var wire map[string]json.RawMessage
	if err := json.Unmarshal(bodies[len(bodies)-1], &wire); err != nil {
		t.Fatal(err)
	}
	if string(wire["temperature"]) != "0" {
		t.Fatalf("wire temperature = %s; body %s", wire["temperature"], bodies[len(bodies)-1])
	}
	if string(wire["seed"]) != "7" || string(wire["max_tokens"]) != "64" || string(wire["stream"]) != "true" ||
		string(wire["stream_options"]) != `{"include_usage":true}` || !bytes.Contains(wire["messages"], []byte("RoCEv2")) {
		t.Fatalf("wire body = %s", bodies[len(bodies)-1])
	}
	// Without Temperature the field stays absent (the server's default applies).
	if _, err := c.Chat(context.Background(), openaiclient.ChatRequest{Model: "m", Messages: user("hi")}, nil); err != nil {
		t.Fatal(err)
	}
	bodies = srv.Bodies()
	if bytes.Contains(bodies[len(bodies)-1], []byte("temperature")) {
		t.Fatalf("temperature sent though unset: %s", bodies[len(bodies)-1])
	}
}

func TestChatNoStreamAndMaxTokens(t *testing.T) {
	_, url := clienttest.Start(t, vllmsim.Options{})
	c := clienttest.NewClient(t, openaiclient.Options{Endpoint: url})
	res, err := c.Chat(context.Background(), openaiclient.ChatRequest{Model: "test-model", Messages: user("What is RoCEv2?"), MaxTokens: 3}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.Text != "RoCEv2 (RDMA over" || res.FinishReason != "length" || res.CompletionTokens != 3 {
		t.Fatalf("result = %+v", res)
	}
}

func TestChatModelNotFound(t *testing.T) {
	_, url := clienttest.Start(t, vllmsim.Options{Models: []string{"a", "b"}})
	c := clienttest.NewClient(t, openaiclient.Options{Endpoint: url})
	for _, stream := range []bool{false, true} {
		_, err := c.Chat(context.Background(), openaiclient.ChatRequest{Model: "zzz", Messages: user("hi"), Stream: stream}, nil)
		if openaiclient.ReasonOf(err) != openaiclient.ReasonInput || !strings.Contains(err.Error(), `model "zzz" is not served here; served: a, b`) {
			t.Fatalf("stream=%v: err = %v", stream, err)
		}
	}
}

// ingress-nginx's fake default certificate means the Ingress's own Secret was not used: the
// error says so instead of asking for a CA file.
func TestIngressFakeCertificateNamed(t *testing.T) {
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "Kubernetes Ingress Controller Fake Certificate", Organization: []string{"Acme Co"}},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), DNSNames: []string{"ingress.local"}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewUnstartedServer(vllmsim.NewServer(vllmsim.Options{}))
	ts.TLS = &tls.Config{Certificates: []tls.Certificate{{Certificate: [][]byte{der}, PrivateKey: key}}}
	ts.Config.ErrorLog = log.New(io.Discard, "", 0)
	ts.StartTLS()
	defer ts.Close()
	_, err = clienttest.NewClient(t, openaiclient.Options{Endpoint: ts.URL}).Models(context.Background())
	if !strings.Contains(fmt.Sprint(err), "fake default certificate") || strings.Contains(hintOf(err), "--ca-file") {
		t.Fatalf("fake cert: %v (hint %q)", err, hintOf(err))
	}
}

// A failed answer is an error whatever its wire shape: vLLM's error chunk in either shape
// before data: [DONE], a proxy's HTML page with status 200 (named as such, not as a cut
// stream), and a stream of nothing but data: [DONE].
func TestChatStreamFailures(t *testing.T) {
	for _, tc := range []struct {
		fault  vllmsim.Fault
		stream bool
		want   []string
	}{
		{vllmsim.FaultErrorChunk, true, []string{"the server reported an error in the answer: CUDA error: an illegal memory access"}},
		{vllmsim.FaultErrorChunkNested, true, []string{"the server reported an error in the answer: CUDA error: an illegal memory access"}},
		{vllmsim.FaultHTML, true, []string{"not an event stream", "Content-Type text/html; charset=utf-8", "Please sign in."}},
		{vllmsim.FaultHTML, false, []string{"the answer (Content-Type text/html; charset=utf-8) is not JSON", "Please sign in."}},
		{vllmsim.FaultOnlyDone, true, []string{"carried no answer (0 chunk(s), none with choices)"}},
	} {
		_, url := clienttest.Start(t, vllmsim.Options{Fault: tc.fault})
		c := clienttest.NewClient(t, openaiclient.Options{Endpoint: url})
		res, err := c.Chat(context.Background(), openaiclient.ChatRequest{Model: "test-model", Messages: user("What is RoCEv2?"), Stream: tc.stream}, nil)
		if err == nil {
			t.Errorf("%s (stream %v): no error, answer %+v", tc.fault, tc.stream, res)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s (stream %v): %q not in %v", tc.fault, tc.stream, w, err)
			}
		}
		if strings.Contains(err.Error(), "before data: [DONE]") || openaiclient.ReasonOf(err) != openaiclient.ReasonFailure {
			t.Errorf("%s (stream %v): reason %d, %v", tc.fault, tc.stream, openaiclient.ReasonOf(err), err)
		}
	}
}

// A wedged engine (headers, then nothing; or a few tokens, then nothing) fails the request
// with the bound and the flag named, streamed or not, instead of holding it for ever.
func TestChatBoundedOnWedgedEngine(t *testing.T) {
	for _, tc := range []struct {
		fault  vllmsim.Fault
		stream bool
		want   string
	}{
		{vllmsim.FaultHang, true, "no byte of the answer within 200ms of sending the request (--ttfb-timeout)"},
		{vllmsim.FaultHang, false, "no byte of the answer within 200ms of sending the request (--ttfb-timeout)"},
		{vllmsim.FaultStall, true, "the answer stopped: no byte for 300ms (--idle-timeout)"},
	} {
		_, url := clienttest.Start(t, vllmsim.Options{Fault: tc.fault})
		c := clienttest.NewClient(t, openaiclient.Options{Endpoint: url, FirstByteTimeout: 200 * time.Millisecond, IdleTimeout: 300 * time.Millisecond})
		err := clienttest.Bounded(t, func() error {
			_, err := c.Chat(context.Background(), openaiclient.ChatRequest{Model: "test-model", Messages: user("What is RoCEv2?"), Stream: tc.stream}, nil)
			return err
		})
		if openaiclient.ReasonOf(err) != openaiclient.ReasonTimeout || !strings.Contains(err.Error(), tc.want) || hintOf(err) == "" {
			t.Errorf("%s (stream %v): reason %d, %v", tc.fault, tc.stream, openaiclient.ReasonOf(err), err)
		}
	}
	// A healthy stream with gaps shorter than the bounds is not cut.
	_, url := clienttest.Start(t, vllmsim.Options{FirstTokenDelay: 20 * time.Millisecond, TokenInterval: 5 * time.Millisecond})
	c := clienttest.NewClient(t, openaiclient.Options{Endpoint: url, FirstByteTimeout: 5 * time.Second, IdleTimeout: 5 * time.Second})
	if res, err := c.Chat(context.Background(), openaiclient.ChatRequest{Model: "test-model", Messages: user("What is RoCEv2?"), Stream: true}, nil); err != nil || !strings.Contains(res.Text, "routable") {
		t.Fatalf("healthy stream: %v", err)
	}
}

// The API key is in clear text only over http:// to an address off this machine (the
// --connect-to address when there is one); never without a key, over https://, or to loopback.
func TestClearTextKeyTo(t *testing.T) {
	for _, tc := range []struct {
		opts openaiclient.Options
		want string
	}{
		{openaiclient.Options{Endpoint: "http://10.0.0.5:8000", APIKey: "k"}, "10.0.0.5:8000"},
		{openaiclient.Options{Endpoint: "http://llm.example.com", APIKey: "k"}, "llm.example.com"},
		{openaiclient.Options{Endpoint: "http://127.0.0.1:8000", APIKey: "k", ConnectTo: "10.0.0.9:80"}, "10.0.0.9:80"},
		{openaiclient.Options{Endpoint: "http://10.0.0.5:8000"}, ""},
		{openaiclient.Options{Endpoint: "https://llm.example.com", APIKey: "k"}, ""},
		{openaiclient.Options{Endpoint: "http://127.0.0.1:8000", APIKey: "k"}, ""},
		{openaiclient.Options{Endpoint: "http://[::1]:8000", APIKey: "k"}, ""},
		{openaiclient.Options{Endpoint: "http://localhost:8000", APIKey: "k"}, ""},
		{openaiclient.Options{Endpoint: "http://llm.example.com", APIKey: "k", ConnectTo: "127.0.0.1:8080"}, ""},
	} {
		if got := clienttest.NewClient(t, tc.opts).ClearTextKeyTo(); got != tc.want {
			t.Errorf("%+v: %q, want %q", tc.opts, got, tc.want)
		}
	}
}

// A connect-to address needs a host and a port number: net.SplitHostPort alone accepts
// "127.0.0.1:", which would dial port 0.
func TestConnectToNeedsPort(t *testing.T) {
	for _, bad := range []string{"127.0.0.1:", "127.0.0.1", ":443", "127.0.0.1:0", "127.0.0.1:https", "127.0.0.1:70000"} {
		_, err := openaiclient.New(openaiclient.Options{Endpoint: "https://llm.example.com", ConnectTo: bad})
		var ee *openaiclient.EndpointError
		if !errors.As(err, &ee) || !ee.ConnectTo || ee.Endpoint != bad {
			t.Errorf("--connect-to %q: %v", bad, err)
		}
	}
	if _, err := openaiclient.New(openaiclient.Options{Endpoint: "https://llm.example.com", ConnectTo: "[::1]:443"}); err != nil {
		t.Fatal(err)
	}
}

// TestClientSpeaksHTTP1: against a TLS server offering HTTP/2, the client still speaks
// HTTP/1.1, as vLLM's benchmark client does.
func TestClientSpeaksHTTP1(t *testing.T) {
	proto := make(chan string, 1)
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case proto <- r.Proto:
		default:
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"object":"list","data":[{"id":"m","object":"model"}]}`))
	}))
	srv.EnableHTTP2 = true
	srv.StartTLS()
	defer srv.Close()
	c, err := openaiclient.New(openaiclient.Options{Endpoint: srv.URL, Insecure: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Models(context.Background()); err != nil {
		t.Fatal(err)
	}
	if p := <-proto; p != "HTTP/1.1" {
		t.Errorf("the client spoke %s", p)
	}
}

// hintOf is the hint of the CallError in err's chain.
func hintOf(err error) string {
	var ce *openaiclient.CallError
	if errors.As(err, &ce) {
		return ce.Hint(func(c next.Command) string { return "ain " + string(c) })
	}
	return ""
}
