package openaiclient_test

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/ain-hpc/ain/pkg/openaiclient"
	"github.com/ain-hpc/ain/pkg/openaiclient/clienttest"
	"github.com/ain-hpc/ain/pkg/vllm/vllmsim"
)

// A conversation keeps each answer for the next question, drops a failed question, forgets
// on /reset (the system prompt stays), and its printer keeps the thinking off the answers.
func TestSessionConverse(t *testing.T) {
	srv, url := clienttest.Start(t, vllmsim.Options{Reasoning: "let me think", Answers: []vllmsim.Answer{{Match: "ping", Reply: "pong"}}})
	c := clienttest.NewClient(t, openaiclient.Options{Endpoint: url})
	var out, errb bytes.Buffer
	p := &openaiclient.ChatPrinter{Out: &out, Err: &errb, MaxTokensFlag: "--max-tokens"}
	s := &openaiclient.Session{Client: c, Model: "test-model", System: "be brief", MaxTokens: 16, Temperature: -1, Stream: true, Now: time.Now, Event: p.Event}
	var failed []error
	in := strings.NewReader("ping\n\n/reset\nping again\n/exit\nnever asked\n")
	if err := s.Converse(context.Background(), in, &out, func(err error) error { failed = append(failed, err); return nil }); err != nil {
		t.Fatal(err)
	}
	if len(failed) != 0 {
		t.Fatalf("failed: %v", failed)
	}
	bodies := srv.Bodies()
	if len(bodies) != 2 {
		t.Fatalf("%d requests, want 2 (the empty line, /reset and what follows /exit ask nothing)", len(bodies))
	}
	if b := string(bodies[1]); !strings.Contains(b, `"be brief"`) || strings.Contains(b, "pong") || strings.Contains(b, `"temperature"`) {
		t.Errorf("after /reset: %s", b)
	}
	if got := out.String(); got != "> pong\n> > > pong\n> " {
		t.Errorf("stdout %q", got)
	}
	if e := errb.String(); !strings.HasPrefix(e, "[thinking] let me think\n") || !strings.Contains(e, "(conversation forgotten)") || !strings.Contains(e, "TTFT ") {
		t.Errorf("stderr %q", e)
	}

	// Without streaming the whole answer comes at once; a failed question stays out of the
	// history.
	s2 := &openaiclient.Session{Client: c, Model: "test-model", MaxTokens: 16, Temperature: 0, Now: time.Now, Event: p.Event}
	if ans, err := s2.Ask(context.Background(), "ping"); err != nil || ans != "pong" {
		t.Fatalf("%q %v", ans, err)
	}
	s2.Model = "no-such-model"
	if _, err := s2.Ask(context.Background(), "lost"); err == nil {
		t.Fatal("a question to a model not served succeeded")
	}
	s2.Model = "test-model"
	if _, err := s2.Ask(context.Background(), "ping"); err != nil {
		t.Fatal(err)
	}
	last := string(srv.Bodies()[len(srv.Bodies())-1])
	if strings.Contains(last, "lost") || strings.Count(last, "ping") != 2 || !strings.Contains(last, `"role":"assistant","content":"pong"`) || !strings.Contains(last, `"temperature":0`) {
		t.Errorf("history after a failure: %s", last)
	}
}

// An interrupted conversation ends with the question's error, without asking failed.
func TestSessionConverseInterrupted(t *testing.T) {
	_, url := clienttest.Start(t, vllmsim.Options{})
	c := clienttest.NewClient(t, openaiclient.Options{Endpoint: url})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	s := &openaiclient.Session{Client: c, Model: "test-model", Temperature: -1, Now: time.Now}
	err := s.Converse(ctx, strings.NewReader("hello\nagain\n"), &bytes.Buffer{}, func(error) error {
		t.Error("failed called on an interrupt")
		return nil
	})
	if err == nil || !strings.Contains(err.Error(), "cancelled") {
		t.Errorf("err = %v", err)
	}
}

// The model list names the endpoint, and its table shows "-" where the server tells nothing.
func TestListAndModelTable(t *testing.T) {
	_, url := clienttest.Start(t, vllmsim.Options{Models: []string{"a"}, Root: "/models/a"})
	c := clienttest.NewClient(t, openaiclient.Options{Endpoint: url})
	l, err := c.List(context.Background(), 5*time.Second)
	if err != nil || l.Endpoint != c.Endpoint() || len(l.Models) != 1 {
		t.Fatalf("%+v %v", l, err)
	}
	head, rows := openaiclient.ModelTable(append(l.Models, openaiclient.Model{ID: "b", Root: "b"}))
	if len(head) != 4 || rows[0][0] != "a" || rows[0][1] != "/models/a" || rows[0][2] != "4096" || strings.Join(rows[1], " ") != "b - - -" {
		t.Errorf("%q %q", head, rows)
	}
}

// A judge's client never inherits Insecure or ConnectTo, which are about the endpoint under
// test; the CA file and the timeouts carry over.
func TestOptionsForServer(t *testing.T) {
	o := openaiclient.Options{Endpoint: "https://llm", APIKey: "under-test", Insecure: true, ConnectTo: "203.0.113.10:443", CAFile: "/ca.pem", CAPEM: []byte("x"),
		MaxConns: 9, FirstByteTimeout: time.Minute, IdleTimeout: 2 * time.Minute}
	j := o.ForServer("https://judge.example.com/v1", "k")
	if j.Insecure || j.ConnectTo != "" || j.CAPEM != nil || j.CAFile != "/ca.pem" || j.FirstByteTimeout != time.Minute || j.IdleTimeout != 2*time.Minute || j.APIKey != "k" || j.Endpoint != "https://judge.example.com/v1" {
		t.Errorf("judge options %+v", j)
	}
}
