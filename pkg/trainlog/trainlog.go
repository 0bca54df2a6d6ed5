// Package trainlog reads what Hugging Face Trainer and TRL record about a training run (the
// metric dicts printed every logging_steps, JSON log lines, or trainer_state.json's log_history)
// and compares two runs: loss and learning rate side by side, a loss-vs-step plot, and a verdict
// on divergence.
//
// # Inputs
//
//	{'loss': 1.6462, 'grad_norm': 17.549, 'learning_rate': 4.17e-05, 'epoch': 0.5}       Trainer/TRL console (Python repr)
//	{'eval_loss': 0.1377, 'eval_runtime': 30.73, ..., 'epoch': 0.01}                    evaluation
//	{'train_runtime': 812.3, 'train_samples_per_second': 9.85, ..., 'train_loss': 1.02}   the end of train()
//	{"loss": 1.6462, "learning_rate": 4.17e-05, "epoch": 0.5, "step": 20}               JSON lines
//	{"log_history": [{"loss": ..., "step": 10}, ...], "global_step": ...}               trainer_state.json
//
// The console dicts carry no step. The step is then taken from the tqdm progress bar printed
// just before ("  20/125 [01:02<05:10, 2.95s/it]"), else from the entry's position times
// logging_steps when given, else the position itself (and the comparison says so).
package trainlog

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"sort"
	"strings"

	"github.com/ain-hpc/ain/pkg/input"
	"github.com/ain-hpc/ain/pkg/lazyre"
)

// Step sources.
const (
	StepLogged      = "logged"       // the entry has "step" (JSON logs, trainer_state.json)
	StepProgressBar = "progress-bar" // from the tqdm bar printed before the entry
	StepLogging     = "logging-steps"
	StepOrdinal     = "ordinal" // the entry's position: 1, 2, 3 ...
)

// Entry is one training log record.
type Entry struct {
	Step     float64 `json:"step"`
	Epoch    *Num    `json:"epoch,omitempty"`
	Loss     *Num    `json:"loss,omitempty"`
	LR       *Num    `json:"learningRate,omitempty"`
	GradNorm *Num    `json:"gradNorm,omitempty"`
	Line     int     `json:"line,omitempty"`
}

// Eval is one evaluation record.
type Eval struct {
	Step     float64 `json:"step"`
	Epoch    *Num    `json:"epoch,omitempty"`
	EvalLoss *Num    `json:"evalLoss,omitempty"`
	Line     int     `json:"line,omitempty"`
}

// Run is everything read from one run's log or state file.
type Run struct {
	Name       string   `json:"name"`
	Format     string   `json:"format"` // console, jsonl or trainer_state
	StepSource string   `json:"stepSource"`
	Entries    []Entry  `json:"entries"`
	Evals      []Eval   `json:"evals,omitempty"`
	Summary    *Summary `json:"summary,omitempty"`
	GlobalStep *Num     `json:"globalStep,omitempty"`
}

// Summary is the record train() prints when it ends.
type Summary struct {
	Runtime          *Num `json:"trainRuntime,omitempty"`
	SamplesPerSecond *Num `json:"trainSamplesPerSecond,omitempty"`
	StepsPerSecond   *Num `json:"trainStepsPerSecond,omitempty"`
	TrainLoss        *Num `json:"trainLoss,omitempty"`
	Epoch            *Num `json:"epoch,omitempty"`
}

var progressRe = lazyre.New(`(\d+)/(\d+) \[`)

// ParseOptions: LoggingSteps turns the position of console entries into steps when no progress
// bar gives them (0: unknown).
type ParseOptions struct {
	LoggingSteps int
}

// maxLine bounds one log line (a trainer_state.json may be a single long line).
const maxLine = 64 << 20

// Parse reads one run: a log (console dicts or JSON lines, with anything else around them) or a
// trainer_state.json.
func Parse(r io.Reader, name string, o ParseOptions) (*Run, error) {
	br := bufio.NewReader(r)
	head, _ := br.Peek(4096)
	if t := strings.TrimSpace(string(head)); strings.HasPrefix(t, "{") && strings.Contains(string(head), "\"log_history\"") || looksLikeState(t) {
		b, err := input.ReadAll(br, name, maxLine)
		if err != nil {
			return nil, err
		}
		return parseState(string(b), name)
	}
	run := &Run{Name: name, Format: "console", Entries: []Entry{}}
	sc := bufio.NewScanner(br)
	sc.Buffer(make([]byte, 64*1024), maxLine)
	var (
		lastBar  = -1.0
		barTotal float64
		ordinal  int
		lineNo   int
	)
	for sc.Scan() {
		lineNo++
		// tqdm redraws with \r: every segment is a state of the bar; the last one is current.
		for _, seg := range strings.Split(sc.Text(), "\r") {
			// The training bar is the one with the largest total (max_steps); evaluation and
			// checkpoint-loading bars count something else.
			for _, m := range progressRe().FindAllStringSubmatch(seg, -1) {
				var n, total float64
				fmt.Sscan(m[1], &n)
				fmt.Sscan(m[2], &total)
				if total >= barTotal {
					lastBar, barTotal = n, total
				}
			}
			i := strings.Index(seg, "{")
			j := strings.LastIndex(seg, "}")
			if i < 0 || j < i {
				continue
			}
			v, err := parseLiteral(seg[i : j+1])
			if err != nil {
				continue // a brace in some other message
			}
			m, ok := v.(map[string]any)
			if !ok {
				continue
			}
			if strings.HasPrefix(strings.TrimSpace(seg[i:]), "{\"") {
				run.Format = "jsonl"
			}
			kind := classify(m)
			if kind == "" {
				continue
			}
			step, hasStep := num(m, "step")
			src := StepLogged
			if !hasStep {
				switch {
				case lastBar >= 0:
					step, src = lastBar, StepProgressBar
				case kind == "train" && o.LoggingSteps > 0:
					step, src = float64((ordinal+1)*o.LoggingSteps), StepLogging
				case kind == "train":
					step, src = float64(ordinal+1), StepOrdinal
				case len(run.Entries) > 0: // an evaluation: at the last training entry's step
					step = run.Entries[len(run.Entries)-1].Step
				}
			}
			switch kind {
			case "train":
				ordinal++
				e := Entry{Step: step, Line: lineNo}
				e.Epoch, e.Loss, e.LR, e.GradNorm = ptr(m, "epoch"), ptr(m, "loss"), ptr(m, "learning_rate"), ptr(m, "grad_norm")
				run.Entries = append(run.Entries, e)
				run.StepSource = mergeSource(run.StepSource, src)
			case "eval":
				run.Evals = append(run.Evals, Eval{Step: step, Epoch: ptr(m, "epoch"), EvalLoss: ptr(m, "eval_loss"), Line: lineNo})
			case "summary":
				run.Summary = summaryOf(m)
			}
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", name, input.ScanError(err, lineNo+1, maxLine))
	}
	return run, nil
}

func looksLikeState(t string) bool {
	return strings.HasPrefix(t, "{") && strings.Contains(t, "\"global_step\"")
}

func mergeSource(cur, src string) string {
	if cur == "" || cur == src {
		return src
	}
	return cur + "+" + src
}

// classify tells a training record (loss), an evaluation (eval_loss) and the end-of-training
// summary (train_runtime) apart; "" for anything else.
func classify(m map[string]any) string {
	switch {
	case has(m, "train_runtime") || has(m, "train_loss"):
		return "summary"
	case has(m, "eval_loss"):
		return "eval"
	case has(m, "loss"):
		return "train"
	}
	return ""
}

func has(m map[string]any, k string) bool { _, ok := m[k]; return ok }

func num(m map[string]any, k string) (float64, bool) {
	switch v := m[k].(type) {
	case float64:
		return v, true
	case json.Number:
		f, err := v.Float64()
		return f, err == nil
	}
	return 0, false
}

func ptr(m map[string]any, k string) *Num {
	if v, ok := num(m, k); ok {
		n := Num(v)
		return &n
	}
	return nil
}

func summaryOf(m map[string]any) *Summary {
	return &Summary{Runtime: ptr(m, "train_runtime"), SamplesPerSecond: ptr(m, "train_samples_per_second"),
		StepsPerSecond: ptr(m, "train_steps_per_second"), TrainLoss: ptr(m, "train_loss"), Epoch: ptr(m, "epoch")}
}

// parseState reads trainer_state.json: log_history holds the training records (with "step"),
// the evaluations and, last, the summary.
func parseState(s, name string) (*Run, error) {
	v, err := parseLiteral(strings.TrimSpace(s))
	if err != nil {
		return nil, fmt.Errorf("%s: trainer_state.json: %w", name, err)
	}
	top, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("%s: trainer_state.json is not an object", name)
	}
	hist, ok := top["log_history"].([]any)
	if !ok {
		return nil, fmt.Errorf("%s: trainer_state.json has no log_history list", name)
	}
	run := &Run{Name: name, Format: "trainer_state", StepSource: StepLogged, Entries: []Entry{}, GlobalStep: ptr(top, "global_step")}
	for i, h := range hist {
		m, ok := h.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("%s: log_history[%d] is not an object", name, i)
		}
		step, hasStep := num(m, "step")
		if !hasStep {
			return nil, fmt.Errorf("%s: log_history[%d] has no step", name, i)
		}
		switch classify(m) {
		case "train":
			run.Entries = append(run.Entries, Entry{Step: step, Epoch: ptr(m, "epoch"), Loss: ptr(m, "loss"), LR: ptr(m, "learning_rate"), GradNorm: ptr(m, "grad_norm")})
		case "eval":
			run.Evals = append(run.Evals, Eval{Step: step, Epoch: ptr(m, "epoch"), EvalLoss: ptr(m, "eval_loss")})
		case "summary":
			run.Summary = summaryOf(m)
		}
	}
	return run, nil
}

// Verdicts.
const (
	VerdictMatches      = "matches"
	VerdictBetter       = "better"
	VerdictDiverged     = "diverged"
	VerdictInconclusive = "inconclusive"
)

// Point is one step where both runs have a loss.
type Point struct {
	Step       float64 `json:"step"`
	RunLoss    float64 `json:"runLoss"`
	ArchLoss   float64 `json:"archiveLoss"`
	RelDiff    float64 `json:"relDiff"` // (run - archive) / archive
	RunLR      *Num    `json:"runLearningRate,omitempty"`
	ArchLR     *Num    `json:"archiveLearningRate,omitempty"`
	Interpoled bool    `json:"interpolated,omitempty"` // the archive's loss interpolated between its two nearest steps
}

// Comparison is the verdict and what it rests on.
type Comparison struct {
	Run       *Run     `json:"run"`
	Archive   *Run     `json:"archive"`
	Axis      string   `json:"axis"` // step, or entry when a run has no step information
	Points    []Point  `json:"points"`
	Window    int      `json:"window"` // the last N common points the verdict averages
	RunFinal  *float64 `json:"runFinalLoss"`
	ArchFinal *float64 `json:"archiveFinalLoss"`
	RelFinal  *float64 `json:"relFinalDiff"`
	MaxRel    *float64 `json:"maxRelDiff"`
	Tolerance float64  `json:"tolerance"`
	Verdict   string   `json:"verdict"`
	Reasons   []string `json:"reasons"`
	Notes     []string `json:"notes"`
}

// Rule (also in `ain train compare --help`): over the steps both runs logged (the archive's loss
// interpolated linearly where its steps differ), average the loss of the last window =
// max(3, 10% of the common points) steps in each run. diverged: the run's loss is NaN/Inf, or its
// final average exceeds the archive's by more than the tolerance (relative), or it rose over the
// run (last window above the first); better: below the archive's by more than the tolerance;
// matches: within it; inconclusive: fewer than 3 common steps.
func Compare(run, archive *Run, tolerance float64) *Comparison {
	c := &Comparison{Run: run, Archive: archive, Axis: "step", Points: []Point{}, Tolerance: tolerance, Reasons: []string{}, Notes: []string{}}
	if run.StepSource == StepOrdinal || archive.StepSource == StepOrdinal {
		c.Axis = "entry"
		c.Notes = append(c.Notes, "a run has no step information (no 'step' key, no progress bar): entries are compared by position; pass --logging-steps to turn positions into steps")
	}
	for _, e := range run.Entries {
		if e.Loss != nil && !e.Loss.finite() {
			c.Verdict = VerdictDiverged
			c.Reasons = append(c.Reasons, fmt.Sprintf("the run's loss is %v at %s %g", float64(*e.Loss), c.Axis, e.Step))
			return c
		}
	}
	arch := lossSeries(archive)
	for _, e := range run.Entries {
		if e.Loss == nil || len(arch) == 0 {
			continue
		}
		a, lr, interp, ok := at(arch, e.Step)
		if !ok || a == 0 || math.IsNaN(a) || math.IsInf(a, 0) {
			continue
		}
		c.Points = append(c.Points, Point{Step: e.Step, RunLoss: float64(*e.Loss), ArchLoss: a, RelDiff: (float64(*e.Loss) - a) / a, RunLR: e.LR, ArchLR: lr, Interpoled: interp})
	}
	if n := len(arch); n > 0 && len(run.Entries) > 0 {
		last := run.Entries[len(run.Entries)-1].Step
		if last < arch[n-1].step {
			c.Notes = append(c.Notes, fmt.Sprintf("the run ends at %s %g, the archive at %g: compared up to %g", c.Axis, last, arch[n-1].step, last))
		}
	}
	if len(c.Points) < 3 {
		c.Verdict = VerdictInconclusive
		c.Reasons = append(c.Reasons, fmt.Sprintf("%d common %ss with a loss (need 3): the runs do not overlap", len(c.Points), c.Axis))
		return c
	}
	w := len(c.Points) / 10
	if w < 3 {
		w = 3
	}
	c.Window = w
	tail := c.Points[len(c.Points)-w:]
	head := c.Points[:w]
	var rf, af, rh float64
	for i := range tail {
		rf += tail[i].RunLoss
		af += tail[i].ArchLoss
		rh += head[i].RunLoss
	}
	rf, af, rh = rf/float64(w), af/float64(w), rh/float64(w)
	rel := (rf - af) / af
	c.RunFinal, c.ArchFinal, c.RelFinal = &rf, &af, &rel
	maxRel := 0.0
	for _, p := range c.Points {
		if math.Abs(p.RelDiff) > math.Abs(maxRel) {
			maxRel = p.RelDiff
		}
	}
	c.MaxRel = &maxRel
	switch {
	case rel > tolerance:
		c.Verdict = VerdictDiverged
		c.Reasons = append(c.Reasons, fmt.Sprintf("over the last %d common steps the run's loss averages %.4g, %.1f%% above the archive's %.4g (tolerance %.0f%%)", w, rf, 100*rel, af, 100*tolerance))
	case rel < -tolerance:
		c.Verdict = VerdictBetter
		c.Reasons = append(c.Reasons, fmt.Sprintf("over the last %d common steps the run's loss averages %.4g, %.1f%% below the archive's %.4g: check both used the same data and settings", w, rf, -100*rel, af))
	default:
		c.Verdict = VerdictMatches
		c.Reasons = append(c.Reasons, fmt.Sprintf("over the last %d common steps the run's loss averages %.4g vs the archive's %.4g (%+.1f%%, within %.0f%%)", w, rf, af, 100*rel, 100*tolerance))
	}
	if rf > rh && len(c.Points) >= 2*w {
		c.Verdict = VerdictDiverged
		c.Reasons = append(c.Reasons, fmt.Sprintf("the run's loss rose: its last %d steps average %.4g, its first %d %.4g", w, rf, w, rh))
	}
	differ := 0
	for _, p := range c.Points {
		if p.RunLR != nil && p.ArchLR != nil && *p.ArchLR != 0 && math.Abs(float64(*p.RunLR-*p.ArchLR))/math.Abs(float64(*p.ArchLR)) > 0.01 {
			differ++
		}
	}
	if differ*2 > len(c.Points) {
		c.Notes = append(c.Notes, fmt.Sprintf("the learning rates differ by more than 1%% at %d of %d common steps: the runs used different schedules, so their losses are not expected to match", differ, len(c.Points)))
	}
	return c
}

type lossPoint struct {
	step float64
	loss float64
	lr   *Num
}

func lossSeries(r *Run) []lossPoint {
	var out []lossPoint
	for _, e := range r.Entries {
		if e.Loss != nil {
			out = append(out, lossPoint{e.Step, float64(*e.Loss), e.LR})
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].step < out[j].step })
	return out
}

// at is the archive's loss at step x: exact, or linear between the two nearest steps; not
// outside the archive's range.
func at(s []lossPoint, x float64) (loss float64, lr *Num, interpolated, ok bool) {
	i := sort.Search(len(s), func(i int) bool { return s[i].step >= x })
	if i < len(s) && s[i].step == x {
		return s[i].loss, s[i].lr, false, true
	}
	if i == 0 || i == len(s) {
		return 0, nil, false, false
	}
	a, b := s[i-1], s[i]
	f := (x - a.step) / (b.step - a.step)
	return a.loss + f*(b.loss-a.loss), nil, true, true
}

// Num is a logged number; NaN and infinities (a diverged loss) are written to JSON as the strings
// "NaN", "Infinity" and "-Infinity", which encoding/json cannot write as numbers.
type Num float64

func (n Num) finite() bool { return !math.IsNaN(float64(n)) && !math.IsInf(float64(n), 0) }

// MarshalJSON writes finite values as numbers, the others as strings.
func (n Num) MarshalJSON() ([]byte, error) {
	f := float64(n)
	switch {
	case math.IsNaN(f):
		return []byte(`"NaN"`), nil
	case math.IsInf(f, 1):
		return []byte(`"Infinity"`), nil
	case math.IsInf(f, -1):
		return []byte(`"-Infinity"`), nil
	}
	return json.Marshal(f)
}
