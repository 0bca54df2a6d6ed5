package vllm

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"strings"
	"time"
)

// JudgeRubric is the fixed instruction of the judge mode. It is part of the check's
// definition: changing it changes what a pass means, so it is a constant, not a setting.
const JudgeRubric = `You grade an answer to a technical question against a reference answer.
The answer PASSES when it states the facts of the reference answer, in any wording, and
states nothing that contradicts them. It FAILS when a fact of the reference is missing or
wrong, or when it contradicts the reference. Extra correct detail does not matter.
Reply with one word on the first line, PASS or FAIL, then one sentence saying why.`

// semanticCheck compares answer with the case's reference answer as the suite says.
func (c *Client) semanticCheck(ctx context.Context, sm *QASemantic, model string, qc *QACase, answer string, now func() time.Time) (QACheck, error) {
	ck := QACheck{Kind: "semantic", Expect: fmt.Sprintf("%s like %q", sm.Mode, qc.Reference)}
	judge := sm.Model
	if judge == "" {
		judge = model
	}
	switch sm.Mode {
	case SemanticEmbeddings:
		vs, err := c.Embeddings(ctx, judge, []string{qc.Reference, answer})
		if err != nil {
			ck.Evidence = "embeddings failed: " + err.Error()
			return ck, err
		}
		sim := cosine(vs[0], vs[1])
		ck.Pass = sim >= sm.Threshold
		ck.Evidence = fmt.Sprintf("cosine similarity %.3f (threshold %.2f, model %s)", sim, sm.Threshold, judge)
		return ck, nil
	default:
		zero, seed := 0.0, QASeed
		prompt := fmt.Sprintf("Question:\n%s\n\nReference answer:\n%s\n\nAnswer to grade:\n%s", qc.Question, qc.Reference, answer)
		res, err := c.Chat(ctx, ChatRequest{Model: judge, MaxTokens: 64, Temperature: &zero, Seed: &seed, Extra: map[string]any{"top_p": 1, "top_k": -1},
			Messages: []Message{{Role: "system", Content: JudgeRubric}, {Role: "user", Content: prompt}}}, now)
		if err != nil {
			ck.Evidence = "the judge failed: " + err.Error()
			return ck, err
		}
		verdict := strings.TrimSpace(res.Text)
		first := strings.ToUpper(strings.Trim(strings.SplitN(strings.TrimSpace(verdict), "\n", 2)[0], " .:*"))
		first = strings.Fields(first + " ?")[0]
		ck.Pass = first == "PASS"
		if first != "PASS" && first != "FAIL" {
			verdict = "no PASS/FAIL verdict: " + verdict
		}
		ck.Evidence = fmt.Sprintf("judge %s: %s", judge, oneLineText(verdict, 200))
		return ck, nil
	}
}

// Embeddings returns the embedding of each input from POST /v1/embeddings.
func (c *Client) Embeddings(ctx context.Context, model string, inputs []string) ([][]float64, error) {
	const op = "POST /v1/embeddings"
	b, _ := json.Marshal(map[string]any{"model": model, "input": inputs})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.base.String()+"/embeddings", bytes.NewReader(b))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	c.authorize(req)
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, c.explain(err, op)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, c.explain(statusError(resp), op)
	}
	var out struct {
		Data []struct {
			Index     int       `json:"index"`
			Embedding []float64 `json:"embedding"`
		} `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		return nil, fmt.Errorf("%s: %w", op, err)
	}
	vs := make([][]float64, len(inputs))
	for _, d := range out.Data {
		if d.Index >= 0 && d.Index < len(vs) {
			vs[d.Index] = d.Embedding
		}
	}
	for i, v := range vs {
		if len(v) == 0 {
			return nil, fmt.Errorf("%s: no embedding for input %d", op, i)
		}
	}
	return vs, nil
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
