package mpilauncher

import (
	"slices"
	"testing"

	"github.com/ain-hpc/ain/internal/golden"
)

// FuzzAnalyze: no input may panic, the verdict is a documented one with a fix unless healthy, and
// evidence stays bounded.
func FuzzAnalyze(f *testing.F) {
	f.Add([]byte("ssh: Could not resolve hostname "))
	golden.FuzzParser(f, []string{"*.log"}, Analyze, golden.Strict, func(t *testing.T, r *Report) {
		if !slices.Contains(Verdicts, r.Verdict) {
			t.Fatalf("verdict %q", r.Verdict)
		}
		if (r.Verdict == VerdictHealthy) != (r.Fix == "") {
			t.Fatalf("fix %q for verdict %s", r.Fix, r.Verdict)
		}
		if len(r.Evidence) > maxEvidence || len(r.Hosts) > maxHostsKept {
			t.Fatalf("unbounded: %d evidence", len(r.Evidence))
		}
	})
}
