package trainlog

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/ain-hpc/ain/internal/golden"
)

// FuzzParseCompare: no input may panic; a run compared with itself never diverges unless its loss
// is not finite, and everything marshals to JSON.
func FuzzParseCompare(f *testing.F) {
	golden.Seeds(f, "*.log", "*.jsonl", "*.json")
	f.Add([]byte("{'loss': tensor(1.5, device='cuda:0'), 'x': [1, (2,)], 'epoch': np.float64(0.1)}\n"))
	f.Fuzz(func(t *testing.T, in []byte) {
		r, err := Parse(strings.NewReader(string(in)), "fuzz", ParseOptions{})
		if err != nil {
			return
		}
		c := Compare(r, r, 0.1)
		switch c.Verdict {
		case VerdictMatches, VerdictDiverged, VerdictInconclusive, VerdictBetter:
		default:
			t.Fatalf("verdict %q", c.Verdict)
		}
		// With distinct steps, a run against itself differs by nothing.
		steps := map[float64]bool{}
		unique := true
		for _, e := range r.Entries {
			unique = unique && !steps[e.Step]
			steps[e.Step] = true
		}
		if unique && c.RelFinal != nil && *c.RelFinal != 0 {
			t.Fatalf("a run differs from itself by %v", *c.RelFinal)
		}
		if _, err := json.Marshal(c); err != nil {
			t.Fatal(err)
		}
	})
}
