package answers

import (
	"bytes"
	"context"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/ain-hpc/ain/pkg/openaiclient"
	"github.com/ain-hpc/ain/pkg/openaiclient/clienttest"
	"github.com/ain-hpc/ain/pkg/vllm/vllmsim"
)

func courseQA(t *testing.T) string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "recipes", "qa", "course-qa.yaml")
}

func TestCourseQAAgainstSimulation(t *testing.T) {
	s, err := LoadQA(courseQA(t))
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Cases) < 8 {
		t.Fatalf("%d cases", len(s.Cases))
	}
	srv, url := clienttest.Start(t, vllmsim.Options{})
	c := clienttest.NewClient(t, openaiclient.Options{Endpoint: url})
	var seen int
	rep, err := Run(context.Background(), c, s, "test-model", 0.9, nil, func(QAResult) { seen++ })
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rep.Results {
		if !r.Pass {
			t.Errorf("%s: %v (answer %q)", r.Name, r.Failures, r.Answer)
		}
	}
	if !rep.OK || rep.PassRate != 1 || seen != len(s.Cases) {
		t.Fatalf("report = %+v", rep)
	}
	for _, b := range srv.Bodies() {
		if !bytes.Contains(b, []byte(`"temperature":0`)) || !bytes.Contains(b, []byte(`"seed":0`)) {
			t.Fatalf("answer checks must sample deterministically; wire body %s", b)
		}
	}
}

func TestQAFailuresAndMinPass(t *testing.T) {
	rep, _ := runSuite(t, `
cases:
  - name: good
    question: capital of France?
    exact: Paris.
  - name: bad
    question: capital of France?
    contains: [Lyon, [Marseille, Nice]]
    notContains: [paris]
  - name: cut
    question: What is RoCEv2?
    maxTokens: 2
    regex: ['layer\s+3']
`)
	if rep.Passed != 1 || rep.OK {
		t.Fatalf("report = %+v", rep)
	}
	bad := strings.Join(rep.Results[1].Failures, "; ")
	want := `does not state "Lyon"; does not state any of "Marseille", "Nice"; states forbidden "paris": paris.`
	if bad != want {
		t.Fatalf("failures = %s\nwant %s", bad, want)
	}
	cut := strings.Join(rep.Results[2].Failures, "; ")
	if !strings.Contains(cut, `does not match /layer\s+3/`) || !strings.Contains(cut, "cut at maxTokens 2") || rep.Results[2].Answer != "RoCEv2 (RDMA" {
		t.Fatalf("cut case = %+v", rep.Results[2])
	}
}

func TestQACheck(t *testing.T) {
	s, err := ParseQA("qa.json", []byte(`{"cases": [
	  {"name": "a", "question": "q", "contains": ["4791", ["PFC", "priority flow control"]], "regex": ["port\\s+\\d+"]},
	  {"name": "b", "question": "q", "exact": ["Paris", "Paris."], "caseSensitive": true},
	  {"name": "c", "question": "q", "contains": [4791]}
	]}`))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		c      int
		answer string
		pass   bool
	}{
		{0, "UDP port 4791 with Priority Flow Control", true},
		{0, "UDP PORT 4791, pfc", true},
		{0, "UDP port 4791", false},
		{0, "port 4792 with PFC", false},
		{1, "  Paris.\n", true},
		{1, "paris", false},
		{2, "it is 4791", true},
	} {
		got := failures(s.Cases[tc.c].Check(tc.answer))
		if (len(got) == 0) != tc.pass {
			t.Errorf("case %d on %q: failures %v, want pass=%v", tc.c, tc.answer, got, tc.pass)
		}
	}
}

func TestQAStrictErrors(t *testing.T) {
	_, err := ParseQA("bad.yaml", []byte(`kind: AnswerChecks
maxTokens: lots
cases:
  - name: a
    question: q
    contians: [x]
  - name: a
    question: ""
    regex: ['(']
    contains: [{x: 1}]
  - name: c
    question: q
`))
	if err == nil {
		t.Fatal("no error")
	}
	msg := err.Error()
	for _, want := range []string{
		`bad.yaml:2: maxTokens: expected an integer, got "lots"`,
		`bad.yaml:6: cases[0].contians: unknown field "contians"`,
		`bad.yaml:7: cases[1].name: duplicate name "a" (also cases[0])`,
		`bad.yaml:8: cases[1].question: required`,
		`bad.yaml:9: cases[1].regex[0]: bad regular expression "("`,
		`bad.yaml:10: cases[1].contains[0]: want a string or a list of strings`,
		`bad.yaml:11: cases[2]: case "c" expects nothing`,
	} {
		if !strings.Contains(msg, want) {
			t.Errorf("missing %q in:\n%s", want, msg)
		}
	}
}

// TestQAStopsOnFatalErrors: a wrong key fails every case the same way: the run stops with
// the explained error instead of reporting N identical failures.
func TestQAStopsOnFatalErrors(t *testing.T) {
	s, err := ParseQA("qa.yaml", []byte("cases:\n- question: q\n  contains: [x]\n- question: r\n  contains: [y]\n"))
	if err != nil {
		t.Fatal(err)
	}
	_, url := clienttest.Start(t, vllmsim.Options{APIKey: "k"})
	c := clienttest.NewClient(t, openaiclient.Options{Endpoint: url, APIKey: "bad"})
	if _, err := Run(context.Background(), c, s, "test-model", 1, nil, nil); openaiclient.ReasonOf(err) != openaiclient.ReasonUnauthorized {
		t.Fatalf("err = %v", err)
	}
	if s.Cases[1].Name != "case-2" {
		t.Errorf("unnamed case named %q", s.Cases[1].Name)
	}
}

// Semantic checks: by embeddings (the server's /v1/embeddings; vllmsim's are bag-of-words
// vectors) and by a judge model with the fixed rubric; several samples with a pass threshold.
func TestQASemanticAndSamples(t *testing.T) {
	rep, srv := runSuite(t, `
samples: 3
temperature: 0.7
passThreshold: 0.6
semantic: {mode: embeddings, model: test-model, threshold: 0.5}
cases:
  - name: port
    question: Which UDP port does RoCEv2 use?
    reference: RoCEv2 carries InfiniBand transport in UDP/IP with destination UDP port 4791.
  - name: unrelated
    question: capital of France?
    reference: RoCEv2 carries InfiniBand transport in UDP/IP with destination UDP port 4791.
`)
	if !rep.Results[0].Pass || rep.Results[1].Pass || len(rep.Results[0].Samples) != 3 || rep.Results[0].Passed != 3 {
		t.Fatalf("embeddings: %+v", rep.Results)
	}
	ev := rep.Results[0].Samples[0].Checks[0].Evidence
	if !strings.Contains(ev, "cosine similarity") {
		t.Fatalf("evidence %q", ev)
	}
	// Samples use seeds 0, 1, 2 and the file's temperature.
	bodies := srv.Bodies()
	if !bytes.Contains(bodies[0], []byte(`"temperature":0.7`)) || !bytes.Contains(bodies[1], []byte(`"seed":1`)) {
		t.Fatalf("sampling on the wire: %s / %s", bodies[0], bodies[1])
	}

	judge, err := ParseQA("qa.yaml", []byte(`
semantic: {mode: judge, model: judge}
cases:
  - name: port
    question: Which UDP port does RoCEv2 use?
    reference: UDP port 4791.
`))
	if err != nil {
		t.Fatal(err)
	}
	for verdict, pass := range map[string]bool{"(C)\nIt states port 4791.": true, "(A) A subset.": true, "The answer is (E).": true,
		"(D)\nWrong port.": false, `{"category": "D", "reason": "wrong port"}`: false, "Maybe.": false} {
		_, url := clienttest.Start(t, vllmsim.Options{Models: []string{"test-model", "judge"}, Judges: []string{},
			Answers: append([]vllmsim.Answer{{Match: "[submission]", Reply: verdict}}, vllmsim.DefaultAnswers()...)})
		rep, err := Run(context.Background(), clienttest.NewClient(t, openaiclient.Options{Endpoint: url}), judge, "test-model", 1, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		if rep.Results[0].Pass != pass || !strings.Contains(rep.Results[0].Samples[0].Checks[0].Evidence, "judge judge: ") {
			t.Errorf("judge %q: %+v", verdict, rep.Results[0])
		}
	}
	// Samples at temperature 0 are copies of one answer: refused.
	if _, err := ParseQA("qa.yaml", []byte("samples: 3\ncases:\n- question: q\n  required: [x]\n")); err == nil || !strings.Contains(err.Error(), "set temperature") {
		t.Fatalf("samples at temperature 0: %v", err)
	}
}

// runSuite parses suite (qa.yaml's content) and runs it against a fresh simulated server, half
// of the cases to pass.
func runSuite(t *testing.T, suite string) (*QAReport, *vllmsim.Server) {
	t.Helper()
	s, err := ParseQA("qa.yaml", []byte(suite))
	if err != nil {
		t.Fatal(err)
	}
	srv, url := clienttest.Start(t, vllmsim.Options{})
	rep, err := Run(context.Background(), clienttest.NewClient(t, openaiclient.Options{Endpoint: url}), s, "test-model", 0.5, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	return rep, srv
}
