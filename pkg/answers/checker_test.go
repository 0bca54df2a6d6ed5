package answers

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ain-hpc/ain/pkg/openaiclient"
	"github.com/ain-hpc/ain/pkg/openaiclient/clienttest"
	"github.com/ain-hpc/ain/pkg/vllm/vllmsim"
)

// A run saves its answers; a later run against a server whose answers changed reports each
// change and fails with an AnswersChangedError even where the pass rate is allowed to fall.
func TestCheckerSaveThenCompare(t *testing.T) {
	dir := t.TempDir()
	archive := filepath.Join(dir, "answers.json")
	now := func() time.Time { return time.Date(2026, 12, 5, 12, 0, 0, 0, time.UTC) }
	_, url := clienttest.Start(t, vllmsim.Options{})
	c := clienttest.NewClient(t, openaiclient.Options{Endpoint: url})
	var seen int
	k, err := NewChecker(CheckOptions{Golden: courseQA(t), MinPass: 1, Save: archive, Now: now, Progress: func(QAResult) { seen++ }})
	if err != nil {
		t.Fatal(err)
	}
	out, err := k.Run(context.Background(), c)
	if err != nil || out.Err() != nil || seen != out.Total || out.Saved != archive {
		t.Fatalf("first run: %+v %v %v", out, err, out.Err())
	}
	if _, err := os.Stat(archive); err != nil {
		t.Fatal(err)
	}
	var text bytes.Buffer
	out.WriteText(&text)
	if !strings.Contains(text.String(), "--min-pass 100%: OK  [model test-model, temperature 0, seed 0") || !strings.Contains(text.String(), "answers archived in "+archive) {
		t.Errorf("summary %q", text.String())
	}

	_, url2 := clienttest.Start(t, vllmsim.Options{Answers: []vllmsim.Answer{}, Fallback: "I do not know."})
	c2 := clienttest.NewClient(t, openaiclient.Options{Endpoint: url2})
	k, err = NewChecker(CheckOptions{Golden: courseQA(t), MinPass: 0, Compare: archive, Now: now})
	if err != nil {
		t.Fatal(err)
	}
	out, err = k.Run(context.Background(), c2)
	if err != nil {
		t.Fatal(err)
	}
	var changed *AnswersChangedError
	if err := out.Err(); !errors.As(err, &changed) || changed.Changed == 0 || changed.Archive != archive {
		t.Fatalf("verdict %v, comparison %+v", err, out.Comparison)
	}
	text.Reset()
	out.Comparison.WriteText(&text)
	if !strings.Contains(text.String(), "compared with "+archive) || !strings.Contains(text.String(), "now:    I do not know.") {
		t.Errorf("comparison %q", text.String())
	}
	k.MinPass = 1
	out, _ = k.Run(context.Background(), c2)
	var failed *ChecksFailedError
	if err := out.Err(); !errors.As(err, &failed) || failed.MinPass != 1 {
		t.Errorf("verdict %v", err)
	}
}

// Bad options are input errors naming the flag, found before any server is asked.
func TestCheckerOptions(t *testing.T) {
	plain := filepath.Join(t.TempDir(), "plain.yaml")
	if err := os.WriteFile(plain, []byte("apiVersion: ain.dev/v1alpha1\nkind: AnswerChecks\ncases:\n  - {name: a, question: q, exact: x}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		o    CheckOptions
		want string
	}{
		{CheckOptions{Golden: plain, MinPass: 2}, "--min-pass 2: want a fraction between 0 and 1"},
		{CheckOptions{Golden: plain, JudgeEndpoint: true}, "--judge-model, --judge-endpoint and --embeddings-model need reference answers"},
		{CheckOptions{Golden: filepath.Join(t.TempDir(), "none.yaml")}, "none.yaml"},
		{CheckOptions{Golden: plain, Compare: filepath.Join(t.TempDir(), "none.json")}, "none.json"},
	} {
		_, err := NewChecker(tc.o)
		var ie *InputError
		if !errors.As(err, &ie) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want an InputError saying %q", tc.o, err, tc.want)
		}
	}
}
