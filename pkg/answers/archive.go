package answers

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/ain-hpc/ain/pkg/openaiclient"
)

// Archived answers (course 12.3.4, "checking against archived Q&A results"): `chat test
// --save FILE` records each answer with the model, the date, the sampling (temperature 0,
// seed 0) and a hash of what was asked; a later run with `--compare FILE` asks the same
// questions the same way and reports, answer by answer, what changed. A multiple-choice
// answer changed when it picks another letter; a free-form answer that reads differently is
// judged against the archived one when the file names a judge (a rewording passes, a
// disagreement does not), and counts as changed when there is no judge to tell.

// QAArchiveKind is the kind of an archive file.
const QAArchiveKind = "AnswerArchive"

// QAArchive is the answers of one run.
type QAArchive struct {
	Kind string `json:"kind"`
	QARun
	Answers []QAArchived `json:"answers"`
}

// QARun is how an archive's answers were taken (its fields are the archive's own in JSON).
type QARun struct {
	Model string    `json:"model"`
	Date  time.Time `json:"date"`
	// Temperature and Seed are the sampling the answers were taken with (0 and 0: a compare
	// is meaningful only when both runs answer deterministically).
	Temperature float64 `json:"temperature"`
	Seed        int     `json:"seed"`
	// Golden is the golden file the questions came from.
	Golden string `json:"golden,omitempty"`
}

// QAArchived is one archived answer.
type QAArchived struct {
	Name         string `json:"name"`
	QuestionHash string `json:"questionHash"`
	Question     string `json:"question"`
	Answer       string `json:"answer"`
	Choice       string `json:"choice,omitempty"` // the letter picked, multiple choice only
	Pass         bool   `json:"pass"`
	Error        string `json:"error,omitempty"`
}

// Archivable refuses sampling that makes answers differ from run to run: an archive holds
// the greedy answer to each question.
func (s *QASuite) Archivable() error {
	if t := s.Temperature; s.Samples > 1 || (t != nil && *t != 0) {
		return inputErrorf("archived answers are compared at temperature 0 with one sample each; this file asks for %d samples at another temperature", s.Samples)
	}
	return nil
}

// NewQAArchive records a run's answers.
func NewQAArchive(s *QASuite, rep *QAReport, golden string, date time.Time) *QAArchive {
	a := &QAArchive{Kind: QAArchiveKind, QARun: QARun{Model: rep.Model, Date: date.UTC().Truncate(time.Second), Temperature: rep.Temperature, Seed: QASeed, Golden: golden}}
	for _, r := range rep.Results {
		a.Answers = append(a.Answers, QAArchived{Name: r.Name, QuestionHash: r.Hash, Question: r.Question, Answer: r.Answer, Choice: choiceOf(s, r), Pass: r.Pass, Error: r.Error})
	}
	return a
}

func choiceOf(s *QASuite, r QAResult) string {
	if qc := s.caseNamed(r.Name); qc != nil && len(qc.Choices) > 0 {
		l, _ := ExtractChoice(r.Answer, qc.Choices)
		return l
	}
	return ""
}

func (s *QASuite) caseNamed(name string) *QACase {
	for i := range s.Cases {
		if s.Cases[i].Name == name {
			return &s.Cases[i]
		}
	}
	return nil
}

// Save writes the archive as JSON.
func (a *QAArchive) Save(path string) error {
	b, err := json.MarshalIndent(a, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}

// LoadQAArchive reads an archive written by Save.
func LoadQAArchive(path string) (*QAArchive, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var a QAArchive
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&a); err != nil {
		return nil, fmt.Errorf("%s: not an answer archive: %w", path, err)
	}
	if a.Kind != QAArchiveKind {
		return nil, fmt.Errorf("%s: kind %q is not %s (write one with chat test --save)", path, a.Kind, QAArchiveKind)
	}
	return &a, nil
}

// Change statuses of QAChange.
const (
	ChangeSame       = "same"           // the same text
	ChangeSameChoice = "same choice"    // other words, the same letter
	ChangeReworded   = "reworded"       // other words, the judge finds no disagreement
	ChangeChoice     = "changed choice" // another letter

	// A change that fails the comparison, or one nobody judged.
	ChangeMeaning         = "changed meaning"  // the judge finds a disagreement
	ChangeNotJudged       = "changed"          // other words, no judge to tell
	ChangeQuestion        = "question changed" // the request differs from the archived one
	ChangeNew             = "new case"
	ChangeNotAskedAnymore = "not in the file"
)

// QAChange is one case's answer compared with its archived answer.
type QAChange struct {
	Name   string `json:"name"`
	Status string `json:"status"` // one of the Change* words
	// Before and After are the archived and the new answer.
	Before string `json:"before,omitempty"`
	After  string `json:"after,omitempty"`
	// Verdict is the judge's, when one compared the two; Regression marks a change that fails.
	Verdict    string `json:"verdict,omitempty"`
	Regression bool   `json:"regression"`
}

// QAComparison is a run compared with an archive.
type QAComparison struct {
	Archive     string     `json:"archive"`
	ArchiveDate time.Time  `json:"archiveDate"`
	ModelBefore string     `json:"modelBefore"`
	ModelAfter  string     `json:"modelAfter"`
	Changed     int        `json:"changed"`
	Regressions int        `json:"regressions"`
	Changes     []QAChange `json:"changes"`
}

// Compare compares a run's answers with archived ones, answer by answer; a changed
// free-form answer is judged against the archived one when the suite names a judge.
func Compare(ctx context.Context, c *openaiclient.Client, s *QASuite, rep *QAReport, a *QAArchive, path string, now func() time.Time) (*QAComparison, error) {
	cmp := &QAComparison{Archive: path, ArchiveDate: a.Date, ModelBefore: a.Model, ModelAfter: rep.Model}
	judge := s.judge
	if judge == nil {
		judge = c
	}
	judged := s.Semantic != nil && s.Semantic.Mode == SemanticJudge && s.Semantic.Model != ""
	old := map[string]QAArchived{}
	for _, x := range a.Answers {
		old[x.Name] = x
	}
	for _, r := range rep.Results {
		ch := QAChange{Name: r.Name, After: r.Answer}
		x, ok := old[r.Name]
		delete(old, r.Name)
		switch {
		case !ok:
			ch.Status = ChangeNew
		case x.QuestionHash != r.Hash:
			ch.Status, ch.Before = ChangeQuestion, x.Answer
		case strings.Join(strings.Fields(x.Answer), " ") == strings.Join(strings.Fields(r.Answer), " "):
			ch.Status, ch.After = ChangeSame, ""
		default:
			ch.Before = x.Answer
			qc := s.caseNamed(r.Name)
			switch {
			case qc != nil && len(qc.Choices) > 0:
				now := choiceOf(s, r)
				if now == x.Choice {
					ch.Status = ChangeSameChoice
				} else {
					ch.Status, ch.Regression = ChangeChoice, true
					ch.Verdict = fmt.Sprintf("picked %s, archived %s", orDash(now), orDash(x.Choice))
				}
			case judged && x.Answer != "" && r.Answer != "":
				v, err := Judge(ctx, judge, s.Semantic.Model, r.Question, x.Answer, r.Answer, now)
				if err != nil {
					if openaiclient.Fatal(err) {
						return nil, err
					}
					ch.Status, ch.Regression, ch.Verdict = ChangeNotJudged, true, "the judge failed: "+err.Error()
					break
				}
				ch.Verdict = fmt.Sprintf("judge %s: %s", s.Semantic.Model, v)
				if v.Pass() {
					ch.Status = ChangeReworded
				} else {
					ch.Status, ch.Regression = ChangeMeaning, true
				}
			default:
				ch.Status, ch.Regression = ChangeNotJudged, true
				ch.Verdict = "not judged: name a judge (semantic: {mode: judge, model: ...}) to tell a rewording from a changed meaning"
			}
		}
		if ch.Status != ChangeSame {
			cmp.Changed++
		}
		if ch.Regression {
			cmp.Regressions++
		}
		cmp.Changes = append(cmp.Changes, ch)
	}
	for _, x := range a.Answers {
		if _, gone := old[x.Name]; gone {
			cmp.Changes = append(cmp.Changes, QAChange{Name: x.Name, Status: ChangeNotAskedAnymore, Before: x.Answer})
			cmp.Changed++
		}
	}
	return cmp, nil
}

func orDash(s string) string {
	if s == "" {
		return "none"
	}
	return s
}
