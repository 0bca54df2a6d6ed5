package answers

import (
	"context"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/ain-hpc/ain/pkg/lazyre"
	"github.com/ain-hpc/ain/pkg/openaiclient"
)

// FactualityRubric is the judge's instruction: OpenAI evals' fact-comparison template
// (evals/registry/modelgraded/fact.yaml), which promptfoo's `factuality` assertion uses too.
// It is part of the check's definition: changing it changes what a pass means, so it is a
// constant, not a setting. The judge classifies the submission against the expert answer;
// (D), a disagreement, fails, every other class passes.
const FactualityRubric = `You are comparing a submitted answer to an expert answer on a given question. Here is the data:
[BEGIN DATA]
************
[Question]: %s
************
[Expert]: %s
************
[Submission]: %s
************
[END DATA]

Compare the factual content of the submitted answer with the expert answer. Ignore any differences in style, grammar, or punctuation.
The submitted answer may either be a subset or superset of the expert answer, or it may conflict with it. Determine which case applies. Answer the question by selecting one of the following options:
(A) The submitted answer is a subset of the expert answer and is fully consistent with it.
(B) The submitted answer is a superset of the expert answer and is fully consistent with it.
(C) The submitted answer contains all the same details as the expert answer.
(D) There is a disagreement between the submitted answer and the expert answer.
(E) The answers differ, but these differences don't matter from the perspective of factuality.
Reply with the letter of your choice in parentheses on the first line, e.g. (C), then one sentence saying why.`

// factualityClasses are the rubric's options, for reading the judge's letter.
var factualityClasses = []string{"subset", "superset", "same", "disagrees", "differs, not in facts"}

// Verdict is a judge's classification of an answer against a reference answer.
type Verdict struct {
	Class  string // A..E; "" when the judge gave none
	Reason string // the judge's reply on one line
}

// Pass is the rubric's verdict: every class but (D) disagreement passes; no class fails.
func (v Verdict) Pass() bool { return v.Class != "" && v.Class != "D" }

func (v Verdict) String() string {
	if v.Class == "" {
		return "no verdict (A-E): " + v.Reason
	}
	return fmt.Sprintf("(%s) %s: %s", v.Class, factualityClasses[v.Class[0]-'A'], v.Reason)
}

var judgeCategory = lazyre.New(`"category"\s*:\s*"([A-E])"`)

// Judge asks model (greedily) to classify answer against reference by the fact-comparison
// rubric.
func Judge(ctx context.Context, c *openaiclient.Client, model, question, reference, answer string, now func() time.Time) (Verdict, error) {
	zero, seed := 0.0, QASeed
	prompt := fmt.Sprintf(FactualityRubric, question, reference, answer)
	res, err := c.Chat(ctx, openaiclient.ChatRequest{Model: model, MaxTokens: 128, Temperature: &zero, Seed: &seed, Extra: map[string]any{"top_p": 1, "top_k": -1},
		Messages: []openaiclient.Message{{Role: "user", Content: prompt}}}, now)
	if err != nil {
		return Verdict{}, err
	}
	text := strings.TrimSpace(res.Text)
	v := Verdict{Reason: oneLineText(text, 200)}
	if m := judgeCategory().FindStringSubmatch(text); m != nil {
		v.Class = m[1]
	} else {
		v.Class, _ = ExtractChoice(text, factualityClasses)
	}
	return v, nil
}

// semanticCheck compares answer with the reference answer as the suite says; c is the
// judge's (or embedding model's) server.
func semanticCheck(ctx context.Context, c *openaiclient.Client, sm *QASemantic, question, reference, answer string, now func() time.Time) (QACheck, error) {
	ck := QACheck{Kind: "semantic", Expect: fmt.Sprintf("%s like %q", sm.Mode, oneLineText(reference, 80))}
	switch sm.Mode {
	case SemanticEmbeddings:
		vs, err := c.Embeddings(ctx, sm.Model, []string{reference, answer})
		if err != nil {
			ck.Evidence = "embeddings failed: " + err.Error()
			return ck, err
		}
		sim := cosine(vs[0], vs[1])
		ck.Pass = sim >= sm.Threshold
		ck.Evidence = fmt.Sprintf("cosine similarity %.3f (threshold %.2f, model %s)", sim, sm.Threshold, sm.Model)
		return ck, nil
	default:
		ck.Expect = fmt.Sprintf("judged against %q", oneLineText(reference, 80))
		v, err := Judge(ctx, c, sm.Model, question, reference, answer, now)
		if err != nil {
			ck.Evidence = "the judge failed: " + err.Error()
			return ck, err
		}
		ck.Pass = v.Pass()
		ck.Evidence = fmt.Sprintf("judge %s: %s", sm.Model, v)
		return ck, nil
	}
}

func cosine(a, b []float64) float64 {
	if len(a) != len(b) {
		return 0
	}
	var dot, na, nb float64
	for i := range a {
		dot += a[i] * b[i]
		na += a[i] * a[i]
		nb += b[i] * b[i]
	}
	if na == 0 || nb == 0 {
		return 0
	}
	return dot / math.Sqrt(na*nb)
}

func oneLineText(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > n {
		return string(r[:n]) + "…"
	}
	return s
}
