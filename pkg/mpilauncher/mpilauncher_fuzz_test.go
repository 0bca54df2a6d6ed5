package mpilauncher

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzAnalyze: no input may panic, the verdict is one of the three and evidence stays bounded.
func FuzzAnalyze(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join("testdata", "*.log"))
	for _, p := range files {
		if b, err := os.ReadFile(p); err == nil {
			f.Add(b)
		}
	}
	f.Add([]byte("ssh: Could not resolve hostname "))
	f.Fuzz(func(t *testing.T, in []byte) {
		r, err := Analyze(strings.NewReader(string(in)))
		if err != nil {
			t.Fatal(err)
		}
		switch r.Verdict {
		case VerdictHealthy, VerdictOther, VerdictLauncherBeforeWorkers:
		default:
			t.Fatalf("verdict %q", r.Verdict)
		}
		if len(r.Evidence) > maxEvidence || len(r.Hosts) > maxHostsKept {
			t.Fatalf("unbounded: %d evidence", len(r.Evidence))
		}
		if _, err := json.Marshal(r); err != nil {
			t.Fatal(err)
		}
	})
}
