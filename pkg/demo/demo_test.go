package demo

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ain-hpc/ain/pkg/next"
	"github.com/ain-hpc/ain/pkg/sandbox"
)

// completeCache is a binary cache where every component counts as built, so no build starts.
func completeCache(t *testing.T) string {
	t.Helper()
	cache := t.TempDir()
	for _, c := range sandbox.Components() {
		if err := os.MkdirAll(c.Dir(cache), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(c.Dir(cache), ".complete"), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return cache
}

type call struct {
	args []string
	env  map[string]string
}

// TestRunOrderAndEnvironment runs the flow with a runner that records each command: the offline
// steps, then the sandbox, the detected profile used by every later step, the user's cluster,
// endpoint and key never reaching a step, and the sandbox stopped at the end.
func TestRunOrderAndEnvironment(t *testing.T) {
	out, state := t.TempDir(), t.TempDir()
	var calls []call
	user := map[string]string{"KUBECONFIG": "/home/u/.kube/config", "AIN_API_KEY": "sk-user", "AIN_ENDPOINT": "https://prod", "HOME": "/home/u"}
	run := func(ctx context.Context, args []string, getenv func(string) string, tee io.Writer) int {
		env := map[string]string{}
		for _, k := range []string{"KUBECONFIG", "AIN_API_KEY", "AIN_ENDPOINT", "HOME", "AIN_PROFILE", "AIN_SANDBOX_STATE"} {
			env[k] = getenv(k)
		}
		calls = append(calls, call{args, env})
		if args[0] == "profile" {
			if tee == nil {
				t.Error("profile detect's output is not kept")
			} else {
				fmt.Fprintln(tee, "fabric: ib")
			}
		}
		return 0
	}
	var events []EventKind
	var eventsMu sync.Mutex
	res, err := Run(context.Background(), Options{StateDir: state, Out: out, Cache: completeCache(t),
		Getenv: func(k string) string { return user[k] }, Run: run, Event: func(e Event) {
			// The demo's ingress runs beside the steps and, with no cluster here, warns when it
			// likes: not part of the order checked below.
			if e.Kind != Warning || !strings.HasPrefix(e.Text, "demo ingress: ") {
				eventsMu.Lock()
				events = append(events, e.Kind)
				eventsMu.Unlock()
			}
		}})
	if err != nil {
		t.Fatal(err)
	}
	if res.Failed() != 0 || res.Interrupted {
		t.Fatalf("failed %d, interrupted %v", res.Failed(), res.Interrupted)
	}
	var firsts []string
	for _, c := range calls {
		firsts = append(firsts, strings.Join(c.args[:min(2, len(c.args))], " "))
	}
	got := strings.Join(firsts, ", ")
	want := "recipes show, render qlora, bench model, doctor nccl-log, sandbox up, profile detect, preflight allreduce, doctor topo, doctor gpu, preflight qlora, train qlora, " +
		"bench allreduce, bench allreduce, bench rdma, bench plot, serve vllm, models --kubeconfig, chat What is RoCEv2?, chat test, bench serve, report " + out + ", release --yes, sandbox status, sandbox down"
	if got != want {
		t.Errorf("steps:\n got %s\nwant %s", got, want)
	}
	if len(res.Steps) != len(calls) {
		t.Errorf("%d results for %d commands", len(res.Steps), len(calls))
	}
	for i, c := range calls {
		if c.env["KUBECONFIG"] != "" || c.env["AIN_API_KEY"] != "" || c.env["AIN_ENDPOINT"] != "" {
			t.Errorf("%v: the user's cluster, endpoint or key reached a demo step: %v", c.args, c.env)
		}
		if c.env["HOME"] != "/home/u" || c.env["AIN_SANDBOX_STATE"] != state {
			t.Errorf("%v: environment %v", c.args, c.env)
		}
		detected := i > 5 // after `profile detect`
		if hasProfile := c.env["AIN_PROFILE"] != ""; hasProfile != detected {
			t.Errorf("%v: AIN_PROFILE=%q, want the detected profile only after detection", c.args, c.env["AIN_PROFILE"])
		}
		if strings.Join(c.args, " ") == "models" || (c.args[0] == "train" && c.args[len(c.args)-1] != sandbox.Layout{Dir: state}.Kubeconfig()) {
			t.Errorf("%v: a cluster step without the demo's kubeconfig", c.args)
		}
	}
	if b, err := os.ReadFile(filepath.Join(out, "profile.yaml")); err != nil || string(b) != "fabric: ib\n" {
		t.Errorf("detected profile %q, %v", b, err)
	}
	if events[0] != Started || events[len(events)-1] != StepEnd {
		t.Errorf("events %v", events)
	}
}

// TestRunStopsWithoutSandbox: when `sandbox up` fails, no cluster step runs; the failure counts.
func TestRunStopsWithoutSandbox(t *testing.T) {
	var ran []string
	run := func(ctx context.Context, args []string, getenv func(string) string, tee io.Writer) int {
		ran = append(ran, args[0]+" "+args[1])
		if args[0] == "sandbox" && args[1] == "up" {
			return 3
		}
		return 0
	}
	res, err := Run(context.Background(), Options{StateDir: t.TempDir(), Out: t.TempDir(), Keep: true, Cache: completeCache(t),
		Getenv: func(string) string { return "" }, Run: run})
	if err != nil {
		t.Fatal(err)
	}
	if last := ran[len(ran)-1]; last != "sandbox up" || res.Failed() != 1 {
		t.Errorf("ran %v, %d failed", ran, res.Failed())
	}
}

// TestRunInterrupted: an interrupt during a step ends the flow there and says so.
func TestRunInterrupted(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var ran []string
	run := func(_ context.Context, args []string, getenv func(string) string, tee io.Writer) int {
		ran = append(ran, args[0])
		if args[0] == "preflight" {
			cancel()
			return 130
		}
		return 0
	}
	res, err := Run(ctx, Options{StateDir: t.TempDir(), Out: t.TempDir(), Keep: true, Cache: completeCache(t),
		Getenv: func(string) string { return "" }, Run: run, Now: time.Now})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Interrupted || ran[len(ran)-1] != "preflight" {
		t.Errorf("interrupted %v after %v", res.Interrupted, ran)
	}
}

func TestEventWriteText(t *testing.T) {
	for _, tc := range []struct {
		e    Event
		want string
	}{
		{Event{Kind: Building, Text: "3/9 built", BlankBefore: true}, "\n⧗ 3/9 built\n"},
		{Event{Kind: StepStart, Step: StepResult{Title: "train", Command: "ain train qlora"}}, "\n━━ train\n$ ain train qlora\n"},
		{Event{Kind: StepEnd, Step: StepResult{Code: 5, Took: 1234 * time.Millisecond}}, "→ exit 5 in 1.2s\n"},
		{Event{Kind: StepEnd, Step: StepResult{Err: errors.New("build failed")}}, "build failed\n"},
		{Event{Kind: Warning, Text: "careful"}, "careful\n"},
	} {
		var b strings.Builder
		tc.e.WriteText(&b)
		if b.String() != tc.want {
			t.Errorf("kind %d: got %q, want %q", tc.e.Kind, b.String(), tc.want)
		}
	}
}

func TestResultWriteSummary(t *testing.T) {
	r := &Result{Took: 90 * time.Second, Out: "/res", StateDir: "/st", Steps: []StepResult{
		{Title: "render", Command: "ain render qlora", Took: time.Second},
		{Title: "train", Command: "ain train qlora", Code: 5, Took: 2 * time.Second},
		{Title: "build", Err: errors.New("no go"), Took: 3 * time.Second},
	}}
	code := func(s StepResult) int {
		if s.Err != nil {
			return 1
		}
		return s.Code
	}
	var b strings.Builder
	r.WriteSummary(&b, code, true, func(c next.Command) string { return "ain " + string(c) })
	out := b.String()
	for _, want := range []string{
		"\n━━ summary (1m30s, simulated nodes and fabric)\n",
		"PASS", "FAIL (exit 5)", "FAIL (exit 1)",
		"1/3 steps passed; results and plots in /res\n",
		"the sandbox is still running: ain sandbox down --state-dir /st\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("summary lacks %q:\n%s", want, out)
		}
	}
	b.Reset()
	r.WriteSummary(&b, code, false, nil)
	if strings.Contains(b.String(), "still running") {
		t.Errorf("without keep the summary names a running sandbox:\n%s", b.String())
	}
}
