package vllm

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/ain-hpc/ain/pkg/next"
	"github.com/ain-hpc/ain/pkg/recipe"
)

// The Deployer's events as the user reads them: a missing IngressClass is said to serve
// nothing (the choice itself, against a cluster: TestChooseEntryEvents).
func TestEventPrinter(t *testing.T) {
	for _, tc := range []struct {
		e    Event
		want string
	}{
		{Event{Kind: EventIngressClassMissing, Message: "nginx"}, "WARNING: IngressClass nginx does not exist: no controller will serve the Ingress"},
		{Event{Kind: EventExpose, Message: "ingress (why)"}, "expose: ingress (why)\n"},
		{Event{Kind: EventWaiting, Message: "1/2 ready", Elapsed: 75 * time.Second}, "[1:15] 1/2 ready\n"},
		{Event{Kind: EventTLS, TLS: &TLSOutcome{Secret: "vllm-tls"}, Host: "llm.example.com"}, "TLS: Secret vllm-tls holds a valid certificate for llm.example.com\n"},
		{Event{Kind: EventTLS, TLS: &TLSOutcome{Secret: "vllm-tls", Created: true}, Entry: "the ingress"}, "or once `ain serve status` shows the address, delete Secret vllm-tls"},
	} {
		var w bytes.Buffer
		p := &EventPrinter{W: &w, Namespace: "llm", Command: func(c next.Command) string { return "ain " + string(c) }}
		p.Event(tc.e)
		if !strings.Contains(w.String(), tc.want) {
			t.Errorf("event %d: %q, want %q", tc.e.Kind, w.String(), tc.want)
		}
	}
}

// A generated key is shown once on a terminal only; written to a file or on a pipe, the
// output names where it is and never holds it.
func TestEventPrinterRevealsKeyOnlyOnATerminal(t *testing.T) {
	auth := &Auth{Source: AuthGenerated, Generated: "s3cr3t-generated", Secret: &recipe.SecretRef{Name: "qwen-api-key", Key: "api-key"}}
	for _, tc := range []struct {
		p          EventPrinter
		shown      bool
		wantSubstr string
	}{
		{EventPrinter{TTY: true}, true, "API key (shown once; models/chat read it from Secret qwen-api-key themselves)"},
		{EventPrinter{}, false, "kubectl get secret qwen-api-key -n llm -o jsonpath='{.data.api-key}' | base64 -d"},
		{EventPrinter{TTY: true, KeyFile: "key.txt"}, false, "API key: written to key.txt (mode 0600)"},
	} {
		var w bytes.Buffer
		tc.p.W, tc.p.Namespace = &w, "llm"
		tc.p.Event(Event{Kind: EventKeyGenerated, Auth: auth})
		if strings.Contains(w.String(), auth.Generated) != tc.shown || !strings.Contains(w.String(), tc.wantSubstr) {
			t.Errorf("%+v: %q", tc.p, w.String())
		}
	}
}

// The status text: each server's entry, route and probe, then its pods through the table.
func TestWriteReports(t *testing.T) {
	rep := Report{ServingStatus: ServingStatus{Name: "qwen", Ready: 1, Desired: 2, URL: "https://llm.example.com", Address: "10.0.0.9",
		Service: "http://qwen.llm.svc:8000", TLSSecret: "qwen-tls",
		Route:    &RouteStatus{Name: "qwen", Gateway: "infra/public", Accepted: "True", Problem: "no address yet", Pending: true},
		Replicas: []ReplicaStatus{{Deployment: "qwen-0", Pods: []PodStatus{{Name: "qwen-0-abc", Phase: "Running", Ready: true, Node: "gpu-0"}}}, {Deployment: "qwen-1", Stalled: "ImagePullBackOff"}}},
		Probe: &Probe{Endpoint: "https://llm.example.com/v1", At: "2026-12-05T12:00:00Z", Models: []string{"qwen"}}}
	var w bytes.Buffer
	var rows [][]string
	WriteReports(&w, []Report{rep, {ServingStatus: ServingStatus{Name: "other"}}}, func(_ []string, r [][]string) { rows = append(rows, r...) })
	for _, want := range []string{
		"qwen: 1/2 replicas ready, model -\n",
		"  address: 10.0.0.9 (published by Gateway infra/public)\n",
		"  route:   HTTPRoute qwen on Gateway infra/public: Accepted True, ResolvedRefs -\n",
		"  not serving yet: no address yet\n",
		"  probe:   https://llm.example.com/v1/models lists qwen (at 2026-12-05T12:00:00Z)\n",
		"\nother: 0/0 replicas ready",
	} {
		if !strings.Contains(w.String(), want) {
			t.Errorf("missing %q in\n%s", want, w.String())
		}
	}
	if len(rows) != 2 || rows[0][3] != "yes" || rows[1][2] != "no pods" || rows[1][6] != "ImagePullBackOff" {
		t.Errorf("rows %q", rows)
	}
}

// What an interrupt left, with the commands to follow and end it in the namespace.
func TestInterruptedLeft(t *testing.T) {
	cmd := func(c next.Command) string { return "ain " + string(c) }
	e := &InterruptedError{Stage: InterruptedRolling, Name: "m", Deployed: 1, Total: 2}
	want := "\ninterrupted during the rolling update: 1 of 2 replica(s) have the new spec, the others keep the previous one and keep serving. `ain serve` again finishes the update.\nFollow it: ain serve status m -n llm\nEnd it: ain serve delete m -n llm\n"
	if got := e.Left("llm", cmd); got != want {
		t.Errorf("got %q\nwant %q", got, want)
	}
	e = &InterruptedError{Stage: InterruptedFinishFailed, Name: "m", FinishErr: errors.New("refused")}
	if got := e.Left("", cmd); !strings.HasSuffix(got, "(refused): the Service exists without its Deployments.\nRemove it: ain serve delete m\n") {
		t.Errorf("got %q", got)
	}
	if got := (&InterruptedError{Stage: InterruptedBeforeApply}).Left("llm", cmd); got != "" {
		t.Errorf("before apply: %q", got)
	}
}

// A deployment's end: the URL clients use on stdout, the rest on the log; none through a
// port-forward that ends with the command; with no wait, how to check it.
func TestDeployResultText(t *testing.T) {
	cmd := func(c next.Command) string { return "ain " + string(c) }
	for _, tc := range []struct {
		r        DeployResult
		out, log string
	}{
		{DeployResult{Name: "m", Endpoint: "https://llm.example.com/v1", Via: "ingress", Model: "q"}, "https://llm.example.com\n", "ready: https://llm.example.com/v1 serves q (listed by /v1/models)\n"},
		{DeployResult{Name: "m", Endpoint: "http://127.0.0.1:4000/v1", Via: "port-forward", Model: "q"}, "", "(checked through a port-forward"},
		{DeployResult{Name: "m"}, "", "check it with: ain serve status m\n"},
	} {
		var out, log bytes.Buffer
		tc.r.WriteText(&out, &log, cmd)
		if out.String() != tc.out || !strings.Contains(log.String(), tc.log) {
			t.Errorf("%+v: out %q, log %q", tc.r, out.String(), log.String())
		}
	}
}
