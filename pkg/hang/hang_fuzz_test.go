package hang

import (
	"encoding/json"
	"slices"
	"testing"

	"github.com/ain-hpc/ain/internal/golden"
)

func checkReport(t *testing.T, r *Report) {
	t.Helper()
	if r.MissingRanks == nil || r.StuckRanks == nil || r.AheadRanks == nil || r.Evidence == nil {
		t.Fatalf("nil list in %+v", r)
	}
	for _, l := range [][]int{r.MissingRanks, r.StuckRanks, r.AheadRanks} {
		if !slices.IsSorted(l) {
			t.Fatalf("unsorted ranks %v", l)
		}
	}
	for _, k := range r.StuckRanks {
		if slices.Contains(r.AheadRanks, k) {
			t.Fatalf("rank %d both stuck and ahead", k)
		}
	}
	if r.OK() != (r.Fix == "") {
		t.Fatalf("fix %q for %s", r.Fix, r.Status)
	}
	if _, err := json.Marshal(r); err != nil {
		t.Fatal(err)
	}
}

// FuzzRAS: ncclras output of any shape (text or JSON) never panics and gives a consistent report.
func FuzzRAS(f *testing.F) {
	golden.Seeds(f, "ras/*")
	f.Add([]byte("#0-0 (x) MISMATCH\n  Rank 9999999999999999999 -- \n  3 ranks have launched up to operation -5\n  Rank 1 has launched up to operation\nStatus  Errors\n"))
	f.Fuzz(func(t *testing.T, in []byte) {
		if d := Detect(in); d != FormatRASText && d != FormatRASJSON {
			return
		}
		r, err := Analyze([]Input{{Name: "q", Data: in}})
		if err != nil {
			return // malformed JSON is an error, not a panic
		}
		checkReport(t, r)
	})
}

// FuzzFlightRecorder: dumps of any shape, pickle or JSON, never panic; a dump either reads or is
// an error naming it.
func FuzzFlightRecorder(f *testing.F) {
	golden.Seeds(f, "fr/tutorial-crash/*", "fr/straggler-json/nccl_trace_rank_5.json", "fr/in-collective-missing/*")
	f.Add([]byte("\x80\x02]q\x00h\x00a."))
	f.Add([]byte(`{"rank": 3, "pg_config": {"0": {"ranks": "[0, 9999999999]"}}, "entries": [{"process_group": ["0"], "collective_seq_id": 1e300}]}`))
	f.Fuzz(func(t *testing.T, in []byte) {
		_, _ = unpickle(in)
		r, err := Analyze([]Input{{Name: "trace_1", Data: in}, {Name: "trace_0", Data: in}})
		if err != nil {
			return
		}
		checkReport(t, r)
	})
}
