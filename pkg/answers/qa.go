// Package answers checks a model's answers against a QA file (keywords, numbers, multiple
// choice, a judge model or embeddings) and archives them, to compare a later run with.
package answers

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/ain-hpc/ain/pkg/openaiclient"
	"github.com/ain-hpc/ain/pkg/strict"
)

// Answer checks (`ain chat test`, course 12.3.4): a file of questions with expectations, asked
// with explicit per-request sampling (greedy unless the file asks for samples at a
// temperature), and a pass rate compared with --min-pass. A case is checked one of three
// ways, as evaluation harnesses check answers:
//   - multiple choice (choices, answer): the letter the model picks (choice.go);
//   - a reference answer graded by a judge model that is not the model under test, with the
//     fact-comparison rubric (semantic.go), or compared by embeddings;
//   - keywords (required, forbidden, numbers, regex, exact) on token boundaries after Unicode
//     normalisation (match.go): they cannot tell "uses UDP" from "does not use UDP", so they
//     are a smoke test and reported as one.
// Answers can be archived and a later run compared with them answer by answer (archive.go).

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
	MaxTokens int `yaml:"maxTokens,omitempty" json:"maxTokens,omitempty"`
	// Samples is how many answers each question gets (default 1); a case passes when at least
	// PassThreshold of them pass. Samples after the first use seeds 1, 2, ...
	Samples int `yaml:"samples,omitempty" json:"samples,omitempty"`
	// PassThreshold is the fraction of a case's samples that must pass (default 1: all).
	PassThreshold float64 `yaml:"passThreshold,omitempty" json:"passThreshold,omitempty"`
	// Temperature is sent with every question (default 0: greedy; with samples > 1 a
	// temperature > 0 makes them differ).
	Temperature *float64 `yaml:"temperature,omitempty" json:"temperature,omitempty"`
	// Semantic configures the semantic check of cases that give a reference answer.
	Semantic *QASemantic `yaml:"semantic,omitempty" json:"semantic,omitempty"`
	Cases    []QACase    `yaml:"cases" json:"cases"`

	judge *openaiclient.Client // where semantic checks go; nil: the server under test
}

// Semantic check modes.
const (
	// SemanticEmbeddings compares the answer with the reference by the cosine similarity of
	// their embeddings from the server's /v1/embeddings (an embedding model must be served).
	SemanticEmbeddings = "embeddings"
	// SemanticJudge asks a judge model, greedily and with the fact-comparison rubric
	// (FactualityRubric), how the answer's facts compare with the reference's.
	SemanticJudge = "judge"
)

// QASemantic is how reference answers are compared.
type QASemantic struct {
	Mode string `yaml:"mode" json:"mode"`
	// Model is the embedding model (embeddings) or the judge model (judge). It must be named
	// (here or by --judge-model/--embeddings-model), and a judge must not be the model under test.
	Model string `yaml:"model,omitempty" json:"model,omitempty"`
	// Threshold is the lowest cosine similarity that passes (embeddings; default 0.8).
	Threshold float64 `yaml:"threshold,omitempty" json:"threshold,omitempty"`
}

// QACase is one question and what its answer must (not) say. Every listed expectation must
// hold. Text expectations match whole tokens after normalisation (NFKC, any dash or minus
// sign as '-', case folded unless caseSensitive): "IP" does not match "multiple".
type QACase struct {
	Name      string `yaml:"name" json:"name"`
	Question  string `yaml:"question" json:"question"`
	System    string `yaml:"system,omitempty" json:"system,omitempty"`
	MaxTokens int    `yaml:"maxTokens,omitempty" json:"maxTokens,omitempty"`
	// Required facts: every item must be stated; an item that is a list is met by any one
	// of its phrasings ("4791" and [PFC, "priority flow control"]). Contains is a synonym.
	Required []any `yaml:"required,omitempty" json:"required,omitempty"`
	Contains []any `yaml:"contains,omitempty" json:"contains,omitempty"`
	// Forbidden facts: none may be stated (plausible wrong answers). NotContains is a synonym.
	Forbidden   []string `yaml:"forbidden,omitempty" json:"forbidden,omitempty"`
	NotContains []string `yaml:"notContains,omitempty" json:"notContains,omitempty"`
	// Numbers: for each, some number in the answer must be within its tolerance.
	Numbers []QANumber `yaml:"numbers,omitempty" json:"numbers,omitempty"`
	// Regex: every item (a Go regular expression, or a list of alternatives) must match the
	// normalised answer.
	Regex []any `yaml:"regex,omitempty" json:"regex,omitempty"`
	// Exact: the trimmed, normalised answer must equal this string, or one of these strings.
	Exact any `yaml:"exact,omitempty" json:"exact,omitempty"`
	// Reference is a correct answer for the semantic check (file's semantic.mode).
	Reference string `yaml:"reference,omitempty" json:"reference,omitempty"`
	// Choices make a multiple-choice case: they are sent lettered A, B, C, ... after the
	// question, and the case passes when the answer picks the letter Answer.
	Choices       []string `yaml:"choices,omitempty" json:"choices,omitempty"`
	Answer        string   `yaml:"answer,omitempty" json:"answer,omitempty"`
	CaseSensitive bool     `yaml:"caseSensitive,omitempty" json:"caseSensitive,omitempty"`

	required [][]string
	forbid   []string
	regex    [][]*regexp.Regexp
	exact    []string
}

// QANumber is a number the answer must state: Value within Tolerance (absolute) or
// RelTolerance (a fraction of Value); with neither, exactly.
type QANumber struct {
	Value        float64 `yaml:"value" json:"value"`
	Tolerance    float64 `yaml:"tolerance,omitempty" json:"tolerance,omitempty"`
	RelTolerance float64 `yaml:"relTolerance,omitempty" json:"relTolerance,omitempty"`
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
	s.checkFields(doc, &ps)
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
		c.prepare(doc, &s, p, &ps)
	}
	if len(ps) > 0 {
		return nil, ps
	}
	return &s, nil
}

// checkFields checks the suite's own fields and fills in their defaults.
func (s *QASuite) checkFields(doc *strict.Doc, ps *strict.Problems) {
	if s.Kind != "" && s.Kind != QAKind {
		*ps = append(*ps, doc.Problemf("kind", "kind %q is not %s", s.Kind, QAKind))
	}
	if s.MaxTokens < 0 {
		*ps = append(*ps, doc.Problemf("maxTokens", "must be >= 1"))
	}
	if s.MaxTokens == 0 {
		s.MaxTokens = 256
	}
	if s.Samples < 0 {
		*ps = append(*ps, doc.Problemf("samples", "must be >= 1"))
	}
	if s.Samples == 0 {
		s.Samples = 1
	}
	if s.PassThreshold < 0 || s.PassThreshold > 1 {
		*ps = append(*ps, doc.Problemf("passThreshold", "want a fraction between 0 and 1, got %g", s.PassThreshold))
	}
	if s.PassThreshold == 0 {
		s.PassThreshold = 1
	}
	if s.Temperature != nil && (*s.Temperature < 0 || *s.Temperature > 2) {
		*ps = append(*ps, doc.Problemf("temperature", "want 0..2, got %g", *s.Temperature))
	}
	if s.Samples > 1 && (s.Temperature == nil || *s.Temperature == 0) {
		*ps = append(*ps, doc.Problemf("samples", "%d samples at temperature 0 are %d copies of one greedy answer: set temperature (e.g. 0.7)", s.Samples, s.Samples))
	}
	if sm := s.Semantic; sm != nil {
		if sm.Mode != SemanticEmbeddings && sm.Mode != SemanticJudge {
			*ps = append(*ps, doc.Problemf("semantic.mode", "%q: want embeddings or judge", sm.Mode))
		}
		if sm.Threshold < 0 || sm.Threshold > 1 {
			*ps = append(*ps, doc.Problemf("semantic.threshold", "want a cosine similarity between 0 and 1, got %g", sm.Threshold))
		}
		if sm.Threshold == 0 {
			sm.Threshold = 0.8
		}
	}
}

// prepare checks the case at path p of suite s, fills in its defaults from the suite and
// builds its checks (required and forbidden strings, compiled regular expressions, exact answers).
func (c *QACase) prepare(doc *strict.Doc, s *QASuite, p string, ps *strict.Problems) {
	if strings.TrimSpace(c.Question) == "" {
		*ps = append(*ps, doc.Problemf(p+".question", "required"))
	}
	if c.MaxTokens < 0 {
		*ps = append(*ps, doc.Problemf(p+".maxTokens", "must be >= 1"))
	}
	if c.MaxTokens == 0 {
		c.MaxTokens = s.MaxTokens
	}
	if c.System == "" {
		c.System = s.System
	}
	c.required = append(alternatives(doc, p+".required", c.Required, ps), alternatives(doc, p+".contains", c.Contains, ps)...)
	c.forbid = append(append([]string(nil), c.Forbidden...), c.NotContains...)
	if c.Reference != "" && s.Semantic == nil {
		*ps = append(*ps, doc.Problemf(p+".reference", "a reference answer needs the file's semantic: {mode: embeddings|judge}"))
	}
	if len(c.Choices) > 0 || c.Answer != "" {
		c.checkChoices(doc, p, ps)
	}
	for j, n := range c.Numbers {
		if n.Tolerance < 0 || n.RelTolerance < 0 {
			*ps = append(*ps, doc.Problemf(fmt.Sprintf("%s.numbers[%d]", p, j), "tolerances must not be negative"))
		}
	}
	c.compileRegex(doc, p, ps)
	if c.Exact != nil {
		for _, alts := range alternatives(doc, p+".exact", []any{c.Exact}, ps) {
			c.exact = alts
		}
	}
	if len(c.required) == 0 && len(c.regex) == 0 && len(c.exact) == 0 && len(c.forbid) == 0 && len(c.Numbers) == 0 && c.Reference == "" && len(c.Choices) == 0 {
		*ps = append(*ps, doc.Problemf(p, "case %q expects nothing: give choices and answer, reference, or required, forbidden, numbers, regex, exact", c.Name))
	}
}

// checkChoices checks a multiple-choice case: its options, its answer letter, and no reference.
func (c *QACase) checkChoices(doc *strict.Doc, p string, ps *strict.Problems) {
	switch {
	case len(c.Choices) < 2 || len(c.Choices) > len(choiceLetters):
		*ps = append(*ps, doc.Problemf(p+".choices", "want 2 to %d options, got %d", len(choiceLetters), len(c.Choices)))
	case len(c.Answer) != 1 || !strings.Contains(choiceLetters[:len(c.Choices)], strings.ToUpper(c.Answer)):
		*ps = append(*ps, doc.Problemf(p+".answer", "want the letter of the right option, A to %c, got %q", choiceLetters[len(c.Choices)-1], c.Answer))
	}
	if c.Reference != "" {
		*ps = append(*ps, doc.Problemf(p+".reference", "a multiple-choice case is scored by its answer letter; give choices or reference, not both"))
	}
}

// compileRegex compiles the case's regex alternatives, case-insensitive unless the case says otherwise.
func (c *QACase) compileRegex(doc *strict.Doc, p string, ps *strict.Problems) {
	for j, alts := range alternatives(doc, p+".regex", c.Regex, ps) {
		var res []*regexp.Regexp
		for _, a := range alts {
			expr := a
			if !c.CaseSensitive {
				expr = "(?i)" + expr
			}
			re, err := regexp.Compile(expr)
			if err != nil {
				*ps = append(*ps, doc.Problemf(fmt.Sprintf("%s.regex[%d]", p, j), "bad regular expression %q: %v", a, err))
				continue
			}
			res = append(res, re)
		}
		c.regex = append(c.regex, res)
	}
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

// QACheck is one expectation's outcome on one answer, with the evidence: the excerpt that
// matched (or, for a forbidden fact, that should not have), or what was looked for.
type QACheck struct {
	Kind     string `json:"kind"` // choice, semantic, required, forbidden, number, regex, exact
	Expect   string `json:"expect"`
	Pass     bool   `json:"pass"`
	Evidence string `json:"evidence,omitempty"`
}

// QASample is one answer to a case.
type QASample struct {
	Answer   string    `json:"answer"`
	Pass     bool      `json:"pass"`
	Checks   []QACheck `json:"checks,omitempty"`
	Error    string    `json:"error,omitempty"`
	Cut      bool      `json:"cut,omitempty"` // finish_reason length
	Seconds  float64   `json:"seconds"`
	Failures []string  `json:"failures,omitempty"`
}

// QAResult is one case's outcome over its samples.
type QAResult struct {
	Name     string `json:"name"`
	Question string `json:"question"`
	// Method is how the case is checked: choice, judge, embeddings, or keywords (a smoke test).
	Method  string     `json:"method"`
	Hash    string     `json:"questionHash"`
	Pass    bool       `json:"pass"`
	Passed  int        `json:"passedSamples"`
	Samples []QASample `json:"samples"`
	// Answer and Failures are the first failing sample's (else the first's), for reports.
	Answer   string   `json:"answer"`
	Failures []string `json:"failures,omitempty"`
	Error    string   `json:"error,omitempty"`
	Seconds  float64  `json:"seconds"`
}

// QAReport is a whole run.
type QAReport struct {
	Model         string     `json:"model"`
	Samples       int        `json:"samples"`
	PassThreshold float64    `json:"passThreshold"`
	Temperature   float64    `json:"temperature"`
	Semantic      string     `json:"semantic,omitempty"`
	Judge         string     `json:"judge,omitempty"`
	Passed        int        `json:"passed"`
	Total         int        `json:"total"`
	PassRate      float64    `json:"passRate"`
	MinPass       float64    `json:"minPass"`
	OK            bool       `json:"ok"`
	Results       []QAResult `json:"results"`
}

// Check checks one answer against the case's text, number, regex and exact expectations
// (not the semantic one, which needs the server) and returns each check with its evidence.
func (c *QACase) Check(answer string) []QACheck {
	norm := normalize(answer, c.CaseSensitive)
	toks := tokenize(norm)
	var out []QACheck
	if len(c.Choices) > 0 {
		out = append(out, c.checkChoice(answer))
	}
	for _, alts := range c.required {
		ck := QACheck{Kind: "required", Expect: describeAlts(alts)}
		for _, a := range alts {
			if s, e := findPhrase(toks, tokenize(normalize(a, c.CaseSensitive))); s >= 0 {
				ck.Pass, ck.Evidence = true, evidence(norm, s, e)
				break
			}
		}
		out = append(out, ck)
	}
	for _, f := range c.forbid {
		ck := QACheck{Kind: "forbidden", Expect: fmt.Sprintf("%q", f), Pass: true}
		if s, e := findPhrase(toks, tokenize(normalize(f, c.CaseSensitive))); s >= 0 {
			ck.Pass, ck.Evidence = false, evidence(norm, s, e)
		}
		out = append(out, ck)
	}
	if len(c.Numbers) > 0 {
		found := numbers(norm)
		for _, n := range c.Numbers {
			ck := QACheck{Kind: "number", Expect: describeNumber(n)}
			var seen []string
			for _, f := range found {
				if within(f.value, n.Value, n.Tolerance, n.RelTolerance) {
					ck.Pass, ck.Evidence = true, evidence(norm, f.start, f.end)
					break
				}
				seen = append(seen, strconv.FormatFloat(f.value, 'g', -1, 64))
			}
			if !ck.Pass {
				ck.Evidence = "numbers in the answer: " + orNone(seen)
			}
			out = append(out, ck)
		}
	}
	for _, res := range c.regex {
		var exprs []string
		ck := QACheck{Kind: "regex"}
		for _, re := range res {
			exprs = append(exprs, "/"+strings.TrimPrefix(re.String(), "(?i)")+"/")
			if loc := re.FindStringIndex(norm); loc != nil && !ck.Pass {
				ck.Pass, ck.Evidence = true, evidence(norm, loc[0], loc[1])
			}
		}
		ck.Expect = strings.Join(exprs, " or ")
		out = append(out, ck)
	}
	if len(c.exact) > 0 {
		ck := QACheck{Kind: "exact", Expect: describeAlts(c.exact)}
		got := strings.Join(strings.Fields(norm), " ")
		for _, s := range c.exact {
			if got == strings.Join(strings.Fields(normalize(s, c.CaseSensitive)), " ") {
				ck.Pass, ck.Evidence = true, got
			}
		}
		out = append(out, ck)
	}
	return out
}

// Prompt is what the model is asked: the question, with its lettered options for a
// multiple-choice case.
func (c *QACase) Prompt() string {
	if len(c.Choices) > 0 {
		return ChoicePrompt(c.Question, c.Choices)
	}
	return c.Question
}

// Method is how the case is checked: choice, judge or embeddings (a reference answer), or
// keywords (a smoke test only: keywords cannot tell a statement from its negation).
func (c *QACase) Method(s *QASuite) string {
	switch {
	case len(c.Choices) > 0:
		return "choice"
	case c.Reference != "" && s.Semantic != nil:
		return s.Semantic.Mode
	}
	return "keywords"
}

// Hash identifies what the model is asked (system prompt, question with options, answer
// bound): an archived answer is compared only with an answer to the same request.
func (c *QACase) Hash() string {
	h := sha256.Sum256([]byte(fmt.Sprintf("system %q\nprompt %q\nmaxTokens %d", c.System, c.Prompt(), c.MaxTokens)))
	return "sha256:" + hex.EncodeToString(h[:8])
}

// SetJudge sends the semantic checks (judge or embeddings) to c instead of the server under
// test; model, when set, names the judge or embedding model instead of the file's.
func (s *QASuite) SetJudge(c *openaiclient.Client, model string) {
	if s.Semantic == nil {
		return
	}
	s.judge = c
	if model != "" {
		s.Semantic.Model = model
	}
}

// checkJudge refuses a semantic check that names no model, or a judge that is the model
// under test (a model grading its own answers agrees with itself).
func (s *QASuite) checkJudge(model string) error {
	sm := s.Semantic
	if sm == nil {
		return nil
	}
	if sm.Model == "" {
		what, flag := "judge", "--judge-model"
		if sm.Mode == SemanticEmbeddings {
			what, flag = "embedding", "--embeddings-model"
		}
		return inputErrorf("semantic.mode %s needs the %s model named: set semantic.model in the file or pass %s", sm.Mode, what, flag)
	}
	if sm.Mode == SemanticJudge && sm.Model == model {
		return inputErrorf("the judge %q is the model under test: a model grading its own answers agrees with itself; name another judge (semantic.model or --judge-model, and --judge-endpoint where it is served)", model)
	}
	return nil
}

// failures lists the checks that failed, as lines for a report.
func failures(checks []QACheck) []string {
	var out []string
	for _, ck := range checks {
		if ck.Pass {
			continue
		}
		switch ck.Kind {
		case "required":
			out = append(out, "does not state "+ck.Expect)
		case "forbidden":
			out = append(out, fmt.Sprintf("states forbidden %s: %s", ck.Expect, ck.Evidence))
		case "number":
			out = append(out, fmt.Sprintf("no number %s (%s)", ck.Expect, ck.Evidence))
		case "regex":
			out = append(out, "does not match "+ck.Expect)
		case "exact":
			out = append(out, "is not exactly "+ck.Expect)
		case "semantic":
			out = append(out, "semantic check failed: "+ck.Evidence)
		case "choice":
			out = append(out, fmt.Sprintf("wants %s, %s", ck.Expect, ck.Evidence))
		}
	}
	return out
}

func describeNumber(n QANumber) string {
	v := strconv.FormatFloat(n.Value, 'g', -1, 64)
	switch {
	case n.Tolerance > 0 && n.RelTolerance > 0:
		return fmt.Sprintf("%s ± max(%g, %g%%)", v, n.Tolerance, n.RelTolerance*100)
	case n.Tolerance > 0:
		return fmt.Sprintf("%s ± %g", v, n.Tolerance)
	case n.RelTolerance > 0:
		return fmt.Sprintf("%s ± %g%%", v, n.RelTolerance*100)
	}
	return v
}

func orNone(xs []string) string {
	if len(xs) == 0 {
		return "none"
	}
	return strings.Join(xs, ", ")
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

// QASeed is the seed of the first sample; sample k uses QASeed+k.
const QASeed = 0

// Run asks every case Samples times and checks the answers. Sampling is sent per request
// (temperature, top_p 1, top_k -1, seed), so the server's own defaults
// (--generation-config auto) do not change what is checked. A case whose request fails
// counts as failed with its error; an error that would fail every case (unreachable,
// unauthorized) stops the run and is returned.
func Run(ctx context.Context, c *openaiclient.Client, s *QASuite, model string, minPass float64, now func() time.Time, progress func(QAResult)) (*QAReport, error) {
	if now == nil {
		now = time.Now
	}
	samples, threshold := max(s.Samples, 1), s.PassThreshold
	if threshold == 0 {
		threshold = 1
	}
	temp := 0.0
	if s.Temperature != nil {
		temp = *s.Temperature
	}
	rep := &QAReport{Model: model, MinPass: minPass, Total: len(s.Cases), Samples: samples, PassThreshold: threshold, Temperature: temp}
	if s.Semantic != nil {
		rep.Semantic = s.Semantic.Mode
		rep.Judge = s.Semantic.Model
	}
	if err := s.checkJudge(model); err != nil {
		return nil, err
	}
	judge := s.judge
	if judge == nil {
		judge = c
	}
	for i := range s.Cases {
		qc := &s.Cases[i]
		var msgs []openaiclient.Message
		if qc.System != "" {
			msgs = append(msgs, openaiclient.Message{Role: "system", Content: qc.System})
		}
		msgs = append(msgs, openaiclient.Message{Role: "user", Content: qc.Prompt()})
		r := QAResult{Name: qc.Name, Question: qc.Question, Method: qc.Method(s), Hash: qc.Hash()}
		for k := 0; k < samples; k++ {
			seed := QASeed + k
			t0 := now()
			res, err := c.Chat(ctx, openaiclient.ChatRequest{Model: model, Messages: msgs, MaxTokens: qc.MaxTokens, Temperature: &temp, Seed: &seed,
				Extra: map[string]any{"top_p": 1, "top_k": -1}}, now)
			smp := QASample{Seconds: now().Sub(t0).Seconds()}
			if err != nil {
				if openaiclient.Fatal(err) {
					return nil, err
				}
				smp.Error = err.Error()
				smp.Failures = []string{"request failed: " + err.Error()}
			} else {
				smp.Answer = strings.TrimSpace(res.Text)
				smp.Checks = qc.Check(res.Text)
				if qc.Reference != "" && s.Semantic != nil {
					ck, err := semanticCheck(ctx, judge, s.Semantic, qc.Question, qc.Reference, smp.Answer, now)
					if err != nil && openaiclient.Fatal(err) {
						return nil, err
					}
					smp.Checks = append(smp.Checks, ck)
				}
				smp.Failures = failures(smp.Checks)
				smp.Pass = len(smp.Failures) == 0
				smp.Cut = res.FinishReason == "length"
				if !smp.Pass && smp.Cut {
					smp.Failures = append(smp.Failures, fmt.Sprintf("(the answer was cut at maxTokens %d)", qc.MaxTokens))
				}
			}
			if smp.Pass {
				r.Passed++
			}
			r.Seconds += smp.Seconds
			r.Samples = append(r.Samples, smp)
		}
		r.Pass = float64(r.Passed) >= threshold*float64(samples)-1e-9
		shown := r.Samples[0]
		for _, smp := range r.Samples {
			if !smp.Pass {
				shown = smp
				break
			}
		}
		r.Answer, r.Failures, r.Error = shown.Answer, shown.Failures, shown.Error
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

// InputError is input that cannot be used as it is (a QA file's settings, a judge that is the
// model under test).
type InputError struct{ Err error }

func (e *InputError) Error() string { return e.Err.Error() }
func (e *InputError) Unwrap() error { return e.Err }

func inputErrorf(format string, args ...any) error {
	return &InputError{Err: fmt.Errorf(format, args...)}
}
