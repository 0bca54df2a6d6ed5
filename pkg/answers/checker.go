package answers

import (
	"context"
	"fmt"
	"time"

	"github.com/ain-hpc/ain/pkg/openaiclient"
)

// CheckOptions are one run of an answer-check file (`ain chat test`).
type CheckOptions struct {
	// Golden is the answer-check file.
	Golden string
	// Model is the model under test ("": the file's, else the only one served).
	Model   string
	MinPass float64
	// JudgeModel and EmbeddingsModel override the file's semantic.model for its mode;
	// JudgeEndpoint says the judge has its own server (SetJudge), which needs a semantic mode.
	JudgeModel, EmbeddingsModel string
	JudgeEndpoint               bool
	// Save archives the answers in this file; Compare compares them with those archived in it.
	Save, Compare string
	Now           func() time.Time
	// Progress, when set, receives each case's result as it is checked.
	Progress func(QAResult)
}

// Checker is an answer-check file ready to run: loaded, with the archive to compare with.
type Checker struct {
	CheckOptions
	Suite   *QASuite
	archive *QAArchive
}

// NewChecker loads o.Golden (and o.Compare's archive) and applies the options to it. Bad
// options or files are an InputError.
func NewChecker(o CheckOptions) (*Checker, error) {
	if o.MinPass < 0 || o.MinPass > 1 {
		return nil, inputErrorf("--min-pass %g: want a fraction between 0 and 1", o.MinPass)
	}
	suite, err := LoadQA(o.Golden)
	if err != nil {
		return nil, &InputError{Err: err}
	}
	k := &Checker{CheckOptions: o, Suite: suite}
	if o.Save != "" || o.Compare != "" {
		if err := suite.Archivable(); err != nil {
			return nil, err
		}
	}
	if o.Compare != "" {
		if k.archive, err = LoadQAArchive(o.Compare); err != nil {
			return nil, &InputError{Err: err}
		}
	}
	if sm := suite.Semantic; sm != nil {
		if sm.Mode == SemanticJudge && o.JudgeModel != "" {
			sm.Model = o.JudgeModel
		}
		if sm.Mode == SemanticEmbeddings && o.EmbeddingsModel != "" {
			sm.Model = o.EmbeddingsModel
		}
	} else if o.JudgeModel != "" || o.EmbeddingsModel != "" || o.JudgeEndpoint {
		return nil, inputErrorf("--judge-model, --judge-endpoint and --embeddings-model need reference answers and the file's semantic: {mode: judge|embeddings}")
	}
	return k, nil
}

// CheckOutcome is a run's report, its comparison with the archive, and where the answers went.
type CheckOutcome struct {
	*QAReport
	Comparison *QAComparison `json:"comparison,omitempty"`
	// Saved is the archive written ("" for none); Compared the one compared with.
	Saved    string `json:"-"`
	Compared string `json:"-"`
}

// Run asks the questions of the file on c, compares the answers with the archive and saves
// them. The verdict is the outcome's Err.
func (k *Checker) Run(ctx context.Context, c *openaiclient.Client) (*CheckOutcome, error) {
	want := k.Model
	if want == "" {
		want = k.Suite.Model
	}
	model, err := c.ResolveModel(ctx, want)
	if err != nil {
		return nil, err
	}
	rep, err := Run(ctx, c, k.Suite, model, k.MinPass, k.Now, k.Progress)
	if err != nil {
		return nil, err
	}
	out := &CheckOutcome{QAReport: rep, Compared: k.Compare}
	if k.archive != nil {
		if out.Comparison, err = Compare(ctx, c, k.Suite, rep, k.archive, k.Compare, k.Now); err != nil {
			return nil, err
		}
	}
	if k.Save != "" {
		if err := NewQAArchive(k.Suite, rep, k.Golden, k.Now()).Save(k.Save); err != nil {
			return nil, err
		}
		out.Saved = k.Save
	}
	return out, nil
}

// ChecksFailedError says the pass rate is below the lowest that succeeds.
type ChecksFailedError struct{ PassRate, MinPass float64 }

func (e *ChecksFailedError) Error() string {
	return fmt.Sprintf("answer checks: pass rate %.0f%% is below --min-pass %.0f%%", e.PassRate*100, e.MinPass*100)
}

// AnswersChangedError says answers changed since the archive.
type AnswersChangedError struct {
	Changed int
	Archive string
}

func (e *AnswersChangedError) Error() string {
	return fmt.Sprintf("answer checks: %d answers changed since the archive %s", e.Changed, e.Archive)
}

// Err is the run's verdict: a ChecksFailedError, an AnswersChangedError, or nil.
func (o *CheckOutcome) Err() error {
	if !o.OK {
		return &ChecksFailedError{PassRate: o.PassRate, MinPass: o.MinPass}
	}
	if o.Comparison != nil && o.Comparison.Regressions > 0 {
		return &AnswersChangedError{Changed: o.Comparison.Regressions, Archive: o.Compared}
	}
	return nil
}
