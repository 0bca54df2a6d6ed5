package servebench

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ain-hpc/ain/pkg/openaiclient"
	"github.com/ain-hpc/ain/pkg/openaiclient/clienttest"
	"github.com/ain-hpc/ain/pkg/vllm/vllmsim"
)

func planOptions() Options {
	return Options{Requests: 4, RequestRate: "inf", Burstiness: 1, InputLen: 8, OutputLen: 8, Dataset: "random",
		API: APIChat, Percentiles: "99", Output: "table"}
}

// A bad setting is refused before any load, naming the flag that set it.
func TestPlanRefusesNamingTheFlag(t *testing.T) {
	for _, tc := range []struct {
		set  func(*Options)
		flag string
		want string
	}{
		{func(o *Options) { o.Requests = 0 }, "requests", "--requests must be >= 1"},
		{func(o *Options) { o.RequestRate = "1,x" }, "request-rate", `--request-rate "1,x": want requests per second > 0, or inf`},
		{func(o *Options) { o.Concurrency = "1.5" }, "concurrency", `--concurrency "1.5": want whole numbers`},
		{func(o *Options) { o.Plot = "a.png" }, "plot", "--plot draws a sweep"},
		{func(o *Options) { o.RequestRate = "1,2"; o.Plot = "a.pdf" }, "plot", "--plot a.pdf: name a .png or .svg file"},
		{func(o *Options) { o.RequestRate = "1,2"; o.Concurrency = "1,2" }, "", "sweep either --request-rate or --concurrency, not both"},
		{func(o *Options) { o.Dataset = "sharegpt" }, "dataset-name", "--dataset-name sharegpt needs --dataset-path FILE"},
	} {
		o := planOptions()
		tc.set(&o)
		_, err := o.Plan()
		var oe *OptionError
		if !errors.As(err, &oe) || oe.Flag != tc.flag || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v (%T), want an OptionError for %q saying %q", err, err, tc.flag, tc.want)
		}
	}
	o := planOptions()
	o.Goodput = "ttft"
	if _, err := o.Plan(); err == nil || !strings.Contains(err.(*OptionError).Hint, "--goodput ttft:500") {
		t.Errorf("bad goodput: %v", err)
	}
}

// A rate sweep runs each setting, writes one vLLM result file per point (-N before the
// extension), plots it, and fails a point whose every request failed.
func TestPlanRunSweep(t *testing.T) {
	_, url := clienttest.Start(t, vllmsim.Options{})
	c := clienttest.NewClient(t, openaiclient.Options{Endpoint: url})
	dir := t.TempDir()
	o := planOptions()
	o.RequestRate, o.Concurrency = "50,inf", "2"
	o.SaveResult, o.Plot, o.Label = filepath.Join(dir, "r.json"), filepath.Join(dir, "p.svg"), "lbl"
	plan, err := o.Plan()
	if err != nil {
		t.Fatal(err)
	}
	if !plan.Sweeping() || plan.ConcurrencySweep() || plan.Conns() != 2 || len(plan.Notes) != 1 {
		t.Fatalf("plan %+v", plan)
	}
	var wrote []string
	var done int
	ro := RunOptions{Via: "ingress", Wrote: func(f, _ string) { wrote = append(wrote, filepath.Base(f)) },
		Progress: func(label string, d, _, total int) {
			if !strings.HasPrefix(label, "rate ") || total != 4 {
				t.Errorf("progress %q of %d", label, total)
			}
			done++
		}}
	points, err := plan.Run(context.Background(), c, "test-model", ro)
	if err != nil || len(points) != 2 || done != 8 {
		t.Fatalf("%d points, %d progress calls, %v", len(points), done, err)
	}
	if points[0].X != 50 || points[1].X != 0 || points[1].Label != "rate inf, concurrency 2" || points[0].Result.Config.Path != "ingress" {
		t.Errorf("points %+v %+v", points[0], points[1])
	}
	if err := plan.Finish(points, ro); err != nil {
		t.Fatal(err)
	}
	if strings.Join(wrote, " ") != "r-1.json r-2.json p.svg" {
		t.Errorf("wrote %q", wrote)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "r-2.json")); err != nil || !strings.Contains(string(b), `"label": "lbl"`) {
		t.Errorf("result file: %s %v", b, err)
	}
	plan.Options.Output = "vllm-json"
	if all, ok := plan.Output(points).([]map[string]any); !ok || len(all) != 2 {
		t.Errorf("vllm-json output %T", plan.Output(points))
	}
	if plan.Options.Output = "json"; plan.Output(points).([]SweepPoint)[1].Label != points[1].Label {
		t.Errorf("json output")
	}
	var out bytes.Buffer
	var rows [][]string
	WriteSweep(&out, points, func(_ []string, r [][]string) { rows = r })
	if len(rows) != 2 || rows[1][0] != "inf" || rows[1][1] != "2" {
		t.Errorf("sweep rows %q", rows)
	}
	points[1].Result.Completed, points[1].Result.Failed = 0, 4
	plan.Plot = ""
	var af *AllFailedError
	if err := plan.Finish(points, ro); !errors.As(err, &af) || err.Error() != "rate inf, concurrency 2: all 4 requests failed" {
		t.Errorf("all failed: %v", err)
	}
}

// On a terminal a point's progress rewrites one line, ended when the last request ends.
func TestTerminalProgress(t *testing.T) {
	var w bytes.Buffer
	p := TerminalProgress(&w)
	p("rate inf", 1, 0, 2)
	p("rate inf", 2, 1, 2)
	if got := w.String(); got != "\rrate inf: 1/2 requests done, 0 failed\rrate inf: 2/2 requests done, 1 failed\n" {
		t.Errorf("%q", got)
	}
}
