package demo

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/ain-hpc/ain/pkg/next"
)

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
		"\n━━ summary (1m30s, simulated workloads)\n",
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
