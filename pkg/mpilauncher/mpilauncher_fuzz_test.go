package mpilauncher

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/ain-hpc/ain/internal/golden"
)

// FuzzAnalyze: no input may panic, the verdict is a documented one with a fix unless healthy, and
// evidence stays bounded.
func FuzzAnalyze(f *testing.F) {
	golden.Seeds(f, "*.log")
	f.Add([]byte("ssh: Could not resolve hostname "))
	f.Fuzz(func(t *testing.T, in []byte) {
		r, err := Analyze(strings.NewReader(string(in)))
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Contains(Verdicts, r.Verdict) {
			t.Fatalf("verdict %q", r.Verdict)
		}
		if (r.Verdict == VerdictHealthy) != (r.Fix == "") {
			t.Fatalf("fix %q for verdict %s", r.Fix, r.Verdict)
		}
		if len(r.Evidence) > maxEvidence || len(r.Hosts) > maxHostsKept {
			t.Fatalf("unbounded: %d evidence", len(r.Evidence))
		}
		if _, err := json.Marshal(r); err != nil {
			t.Fatal(err)
		}
	})
}
