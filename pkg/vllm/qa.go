package vllm

import (
	"context"
	"fmt"
	"os"
	"regexp"
	"strings"
	"time"

	"github.com/ain-hpc/ain/pkg/strict"
)

// Answer checks (`ain chat test`, course 12.3.4): a file of questions with expectations, asked
// with deterministic sampling (temperature 0 on the wire, a fixed seed), each answer checked,
// a pass rate compared with --min-pass.

// QAKind is the kind of an answer-check file.
const QAKind = "AnswerChecks"

// QASuite is an answer-check file.
type QASuite struct {
	APIVersion string `yaml:"apiVersion,omitempty" json:"apiVersion,omitempty"`
	Kind       string `yaml:"kind,omitempty" json:"kind,omitempty"`
	// Model is the served model to ask; empty: --model, else the only served one.
	Model string `yaml:"model,omitempty" json:"model,omitempty"`
	// System is the system prompt for every case that has none of its own.
	System string `yaml:"system,omitempty" json:"system,omitempty"`
	// MaxTokens bounds every answer unless a case says otherwise; default 256.
	MaxTokens int      `yaml:"maxTokens,omitempty" json:"maxTokens,omitempty"`
	Cases     []QACase `yaml:"cases" json:"cases"`
}

// QACase is one question and what its answer must (not) say. Matching ignores case unless
// caseSensitive is set. Every listed expectation must hold.
type QACase struct {
	Name      string `yaml:"name" json:"name"`
	Question  string `yaml:"question" json:"question"`
	System    string `yaml:"system,omitempty" json:"system,omitempty"`
	MaxTokens int    `yaml:"maxTokens,omitempty" json:"maxTokens,omitempty"`
	// Contains: every item must appear in the answer; an item that is a list is satisfied by
	// any one of its strings ("4791" and [PFC, "priority flow control"]).
	Contains []any `yaml:"contains,omitempty" json:"contains,omitempty"`
	// NotContains: none of these may appear.
	NotContains []string `yaml:"notContains,omitempty" json:"notContains,omitempty"`
	// Regex: every item (a Go regular expression, or a list of alternatives) must match.
	Regex []any `yaml:"regex,omitempty" json:"regex,omitempty"`
	// Exact: the trimmed answer must equal this string, or one of these strings.
	Exact         any  `yaml:"exact,omitempty" json:"exact,omitempty"`
	CaseSensitive bool `yaml:"caseSensitive,omitempty" json:"caseSensitive,omitempty"`

	contains [][]string
	regex    [][]*regexp.Regexp
	exact    []string
}

// LoadQA reads an answer-check file (YAML, or JSON, which is YAML too) strictly: unknown
// fields, wrong types and bad expectations are reported with file:line, all at once.
func LoadQA(path string) (*QASuite, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return ParseQA(path, data)
}

// ParseQA is LoadQA on data read from source.
func ParseQA(source string, data []byte) (*QASuite, error) {
	doc, err := strict.Parse(source, data)
	if err != nil {
		return nil, err
	}
	var s QASuite
	ps := doc.Decode(&s)
	if s.Kind != "" && s.Kind != QAKind {
		ps = append(ps, doc.Problemf("kind", "kind %q is not %s", s.Kind, QAKind))
	}
	if s.MaxTokens < 0 {
		ps = append(ps, doc.Problemf("maxTokens", "must be >= 1"))
	}
	if s.MaxTokens == 0 {
		s.MaxTokens = 256
	}
	if len(s.Cases) == 0 && len(ps) == 0 {
		ps = append(ps, doc.Problemf("cases", "no cases: list at least one question"))
	}
	names := map[string]int{}
	for i := range s.Cases {
		c := &s.Cases[i]
		p := fmt.Sprintf("cases[%d]", i)
		if c.Name == "" {
			c.Name = fmt.Sprintf("case-%d", i+1)
		} else if j, dup := names[c.Name]; dup {
			ps = append(ps, doc.Problemf(p+".name", "duplicate name %q (also cases[%d])", c.Name, j))
		}
		names[c.Name] = i
		if strings.TrimSpace(c.Question) == "" {
			ps = append(ps, doc.Problemf(p+".question", "required"))
		}
		if c.MaxTokens < 0 {
			ps = append(ps, doc.Problemf(p+".maxTokens", "must be >= 1"))
		}
		if c.MaxTokens == 0 {
			c.MaxTokens = s.MaxTokens
		}
		if c.System == "" {
			c.System = s.System
		}
		c.contains = alternatives(doc, p+".contains", c.Contains, &ps)
		for j, alts := range alternatives(doc, p+".regex", c.Regex, &ps) {
			var res []*regexp.Regexp
			for _, a := range alts {
				expr := a
				if !c.CaseSensitive {
					expr = "(?i)" + expr
				}
				re, err := regexp.Compile(expr)
				if err != nil {
					ps = append(ps, doc.Problemf(fmt.Sprintf("%s.regex[%d]", p, j), "bad regular expression %q: %v", a, err))
					continue
				}
				res = append(res, re)
			}
			c.regex = append(c.regex, res)
		}
		if c.Exact != nil {
			for _, alts := range alternatives(doc, p+".exact", []any{c.Exact}, &ps) {
				c.exact = alts
			}
		}
		if len(c.contains) == 0 && len(c.regex) == 0 && len(c.exact) == 0 && len(c.NotContains) == 0 {
			ps = append(ps, doc.Problemf(p, "case %q expects nothing: give contains, notContains, regex or exact", c.Name))
		}
	}
	if len(ps) > 0 {
		return nil, ps
	}
	return &s, nil
}

// alternatives normalizes a list whose items are strings or lists of strings (any of).
func alternatives(doc *strict.Doc, path string, items []any, ps *strict.Problems) [][]string {
	var out [][]string
	for i, it := range items {
		p := fmt.Sprintf("%s[%d]", path, i)
		switch v := it.(type) {
		case string:
			out = append(out, []string{v})
		case []any:
			var alts []string
			for _, a := range v {
				s, ok := scalarString(a)
				if !ok {
					*ps = append(*ps, doc.Problemf(p, "alternatives must be strings, got %v", a))
					continue
				}
				alts = append(alts, s)
			}
			if len(alts) == 0 {
				*ps = append(*ps, doc.Problemf(p, "an empty list of alternatives"))
				continue
			}
			out = append(out, alts)
		default:
			s, ok := scalarString(v)
			if !ok {
				*ps = append(*ps, doc.Problemf(p, "want a string or a list of strings, got %v", v))
				continue
			}
			out = append(out, []string{s})
		}
	}
	return out
}

// scalarString accepts numbers too: `contains: [4791]` means the text "4791".
func scalarString(v any) (string, bool) {
	switch x := v.(type) {
	case string:
		return x, true
	case int, int64, uint64, float64, bool:
		return fmt.Sprint(x), true
	}
	return "", false
}

// QAResult is one case's outcome.
type QAResult struct {
	Name     string   `json:"name"`
	Question string   `json:"question"`
	Answer   string   `json:"answer"`
	Pass     bool     `json:"pass"`
	Failures []string `json:"failures,omitempty"`
	Error    string   `json:"error,omitempty"`
	Seconds  float64  `json:"seconds"`
}

// QAReport is a whole run.
type QAReport struct {
	Model    string     `json:"model"`
	Passed   int        `json:"passed"`
	Total    int        `json:"total"`
	PassRate float64    `json:"passRate"`
	MinPass  float64    `json:"minPass"`
	OK       bool       `json:"ok"`
	Results  []QAResult `json:"results"`
}

// Check returns what the answer fails of the case's expectations (nil: it passes).
func (c *QACase) Check(answer string) []string {
	var fails []string
	fold := func(s string) string {
		if c.CaseSensitive {
			return s
		}
		return strings.ToLower(s)
	}
	a := fold(answer)
	for _, alts := range c.contains {
		ok := false
		for _, s := range alts {
			ok = ok || strings.Contains(a, fold(s))
		}
		if !ok {
			fails = append(fails, "does not contain "+describeAlts(alts))
		}
	}
	for _, s := range c.NotContains {
		if strings.Contains(a, fold(s)) {
			fails = append(fails, fmt.Sprintf("contains %q", s))
		}
	}
	for _, res := range c.regex {
		ok := false
		var exprs []string
		for _, re := range res {
			ok = ok || re.MatchString(answer)
			exprs = append(exprs, strings.TrimPrefix(re.String(), "(?i)"))
		}
		if !ok && len(res) > 0 {
			fails = append(fails, "does not match /"+strings.Join(exprs, "/ or /")+"/")
		}
	}
	if len(c.exact) > 0 {
		ok := false
		for _, s := range c.exact {
			if c.CaseSensitive {
				ok = ok || strings.TrimSpace(answer) == strings.TrimSpace(s)
			} else {
				ok = ok || strings.EqualFold(strings.TrimSpace(answer), strings.TrimSpace(s))
			}
		}
		if !ok {
			fails = append(fails, "is not exactly "+describeAlts(c.exact))
		}
	}
	return fails
}

func describeAlts(alts []string) string {
	q := make([]string, len(alts))
	for i, s := range alts {
		q[i] = fmt.Sprintf("%q", s)
	}
	if len(q) == 1 {
		return q[0]
	}
	return "any of " + strings.Join(q, ", ")
}

// QASeed is the seed answer checks send, with temperature 0, for reproducible answers.
const QASeed = 0

// RunQA asks every case (one at a time, deterministic sampling) and checks the answers.
// A case whose request fails counts as failed with its error; an error that would fail every
// case (unreachable, unauthorized) stops the run and is returned.
func (c *Client) RunQA(ctx context.Context, s *QASuite, model string, minPass float64, now func() time.Time, progress func(QAResult)) (*QAReport, error) {
	if now == nil {
		now = time.Now
	}
	rep := &QAReport{Model: model, MinPass: minPass, Total: len(s.Cases)}
	zero, seed := 0.0, QASeed
	for i := range s.Cases {
		qc := &s.Cases[i]
		var msgs []Message
		if qc.System != "" {
			msgs = append(msgs, Message{Role: "system", Content: qc.System})
		}
		msgs = append(msgs, Message{Role: "user", Content: qc.Question})
		t0 := now()
		res, err := c.Chat(ctx, ChatRequest{Model: model, Messages: msgs, MaxTokens: qc.MaxTokens, Temperature: &zero, Seed: &seed}, now)
		r := QAResult{Name: qc.Name, Question: qc.Question, Seconds: now().Sub(t0).Seconds()}
		if err != nil {
			if fatal(err) {
				return nil, err
			}
			r.Error = err.Error()
			r.Failures = []string{"request failed: " + err.Error()}
		} else {
			r.Answer = strings.TrimSpace(res.Text)
			r.Failures = qc.Check(res.Text)
			r.Pass = len(r.Failures) == 0
			if !r.Pass && res.FinishReason == "length" {
				r.Failures = append(r.Failures, fmt.Sprintf("(the answer was cut at maxTokens %d)", qc.MaxTokens))
			}
		}
		if r.Pass {
			rep.Passed++
		}
		rep.Results = append(rep.Results, r)
		if progress != nil {
			progress(r)
		}
	}
	if rep.Total > 0 {
		rep.PassRate = float64(rep.Passed) / float64(rep.Total)
	}
	rep.OK = rep.PassRate >= minPass
	return rep, nil
}
