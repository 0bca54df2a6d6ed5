package trainlog

import (
	"bytes"
	"math"
	"strings"
	"testing"

	"github.com/ain-hpc/ain/internal/golden"
	"github.com/ain-hpc/ain/pkg/figure"
)

func parseFile(t *testing.T, name string, o ParseOptions) *Run {
	t.Helper()
	r, err := Parse(golden.Open(t, name), name, o)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestParse: per format, the number of training entries, their steps and where the steps came
// from, evaluations and the summary.
func TestParse(t *testing.T) {
	tests := []struct {
		file, format, source string
		entries, evals       int
		firstStep, lastStep  float64
		firstLoss            float64
		summaryLoss          float64
	}{
		{"archive-full-trainer_state.json", "trainer_state", StepLogged, 25, 5, 5, 125, 1.95, 1.2178},
		{"run-qlora-console.log", "console", StepProgressBar, 12, 5, 10, 120, 1.7813, 1.2311},
		{"run-diverged-lr10x.jsonl", "jsonl", StepLogged, 12, 0, 10, 120, 1.7815, 1.6021},
		{"run-nan-loss.log", "console", StepOrdinal, 6, 0, 1, 6, 1.7815, -1},
	}
	for _, tc := range tests {
		t.Run(tc.file, func(t *testing.T) {
			r := parseFile(t, tc.file, ParseOptions{})
			if r.Format != tc.format || r.StepSource != tc.source || len(r.Entries) != tc.entries || len(r.Evals) != tc.evals {
				t.Fatalf("format %s source %s, %d entries %d evals", r.Format, r.StepSource, len(r.Entries), len(r.Evals))
			}
			first, last := r.Entries[0], r.Entries[len(r.Entries)-1]
			if first.Step != tc.firstStep || last.Step != tc.lastStep || first.Loss == nil || math.Abs(float64(*first.Loss)-tc.firstLoss) > 0.05 {
				t.Errorf("steps %g..%g, first loss %v", first.Step, last.Step, first.Loss)
			}
			if tc.summaryLoss < 0 != (r.Summary == nil) || (r.Summary != nil && float64(*r.Summary.TrainLoss) != tc.summaryLoss) {
				t.Errorf("summary %+v", r.Summary)
			}
			if first.LR == nil || first.Epoch == nil {
				t.Errorf("first entry lacks lr or epoch: %+v", first)
			}
		})
	}
	// The evaluations of the console log sit at the training bar's step, not the eval bar's.
	r := parseFile(t, "run-qlora-console.log", ParseOptions{})
	if r.Evals[0].Step != 25 || r.Evals[4].Step != 125 {
		t.Errorf("eval steps %g, %g", r.Evals[0].Step, r.Evals[4].Step)
	}
	// --logging-steps turns positions into steps.
	r = parseFile(t, "run-nan-loss.log", ParseOptions{LoggingSteps: 10})
	if r.StepSource != StepLogging || r.Entries[5].Step != 60 {
		t.Errorf("logging steps: %s %g", r.StepSource, r.Entries[5].Step)
	}
}

// TestCompare: the verdict rule on the three run/archive pairs, with golden reports.
func TestCompare(t *testing.T) {
	arch := parseFile(t, "archive-full-trainer_state.json", ParseOptions{})
	tests := []struct {
		run, verdict string
		reason, note string
	}{
		{"run-qlora-console.log", VerdictMatches, "within 10%", ""},
		{"run-diverged-lr10x.jsonl", VerdictDiverged, "above the archive's", "learning rates differ by more than 1% at 12 of 12"},
		{"run-nan-loss.log", VerdictDiverged, "the run's loss is NaN at entry 4", "no step information"},
	}
	for _, tc := range tests {
		t.Run(tc.run, func(t *testing.T) {
			c := Compare(parseFile(t, tc.run, ParseOptions{}), arch, 0.10)
			if c.Verdict != tc.verdict {
				t.Fatalf("verdict %s, want %s: %q", c.Verdict, tc.verdict, c.Reasons)
			}
			if !strings.Contains(strings.Join(c.Reasons, "; "), tc.reason) {
				t.Errorf("reasons %q lack %q", c.Reasons, tc.reason)
			}
			if tc.note != "" && !strings.Contains(strings.Join(c.Notes, "; "), tc.note) {
				t.Errorf("notes %q lack %q", c.Notes, tc.note)
			}
			golden.JSON(t, "compare-"+strings.Split(tc.run, ".")[0], c)
		})
	}
	// The rule's edges: within tolerance, beyond it either way, too few points, a rising loss.
	mk := func(losses ...float64) *Run {
		r := &Run{Name: "x", StepSource: StepLogged}
		for i, f := range losses {
			l := Num(f)
			r.Entries = append(r.Entries, Entry{Step: float64(10 * (i + 1)), Loss: &l})
		}
		return r
	}
	base := mk(2, 1.8, 1.6, 1.4, 1.2, 1.0)
	for _, tc := range []struct {
		run     *Run
		verdict string
	}{
		{mk(2, 1.8, 1.6, 1.45, 1.25, 1.05), VerdictMatches},
		{mk(2, 1.8, 1.6, 1.6, 1.5, 1.4), VerdictDiverged},
		{mk(2, 1.7, 1.4, 1.1, 0.9, 0.8), VerdictBetter},
		{mk(2, 1.8), VerdictInconclusive},
		{mk(1.0, 1.1, 1.2, 1.4, 1.6, 1.8), VerdictDiverged},
	} {
		if c := Compare(tc.run, base, 0.10); c.Verdict != tc.verdict {
			t.Errorf("%v: %s, want %s (%q)", tc.run.Entries, c.Verdict, tc.verdict, c.Reasons)
		}
	}
}

// TestPlot: a PNG and an SVG come out and start like one.
func TestPlot(t *testing.T) {
	c := Compare(parseFile(t, "run-qlora-console.log", ParseOptions{}), parseFile(t, "archive-full-trainer_state.json", ParseOptions{}), 0.1)
	for _, f := range []string{"png", "svg"} {
		var buf bytes.Buffer
		if err := Plot(&buf, c, figure.Options{Format: f, Width: 600, Height: 400}); err != nil {
			t.Fatal(err)
		}
		if (f == "png" && !bytes.HasPrefix(buf.Bytes(), []byte("\x89PNG"))) || (f == "svg" && !bytes.Contains(buf.Bytes()[:200], []byte("<svg"))) {
			t.Errorf("%s output starts %q", f, buf.Bytes()[:16])
		}
	}
	if err := Plot(&bytes.Buffer{}, &Comparison{Run: &Run{}, Archive: &Run{}}, figure.Options{Format: "png"}); err == nil {
		t.Error("empty runs plotted")
	}
}

// TestLiteral: the Python repr forms training logs print.
func TestLiteral(t *testing.T) {
	v, err := parseLiteral(`{'loss': np.float64(1.5), 'x': tensor(2.5, device='cuda:0'), 'n': nan, 'b': True, 's': "a'b", 'l': [1, (2, 3)]}`)
	if err != nil {
		t.Fatal(err)
	}
	m := v.(map[string]any)
	if m["loss"] != 1.5 || m["x"] != 2.5 || !math.IsNaN(m["n"].(float64)) || m["b"] != true || m["s"] != "a'b" {
		t.Errorf("%v", m)
	}
	for _, bad := range []string{`{'a': }`, `{'a' 1}`, `{'a': 1`, `{1: 2}`, `{'a': 1} x`} {
		if _, err := parseLiteral(bad); err == nil {
			t.Errorf("%s parsed", bad)
		}
	}
}
