package nccl

import (
	"encoding/json"
	"io"
	"strings"
	"testing"

	"github.com/ain-hpc/ain/internal/golden"
)

// FuzzParsePerf: no input may panic, every run marshals to JSON (no NaN/Inf) and every row has
// its out-of-place half.
func FuzzParsePerf(f *testing.F) {
	f.Add([]byte("8 2 float sum -1 inf nan 1e400 0 1 2 3 N/A\n# Avg bus bandwidth : 1e999\n"))
	f.Add([]byte("size count type time\n1 1 x 1 2 3\n"))
	// Only JSON input (it starts with '{') may be rejected: text is read line by line.
	jsonOnly := func(t *testing.T, in []byte, err error) {
		if trimmed := strings.TrimLeft(string(in), " \t\r\n\ufeff"); !strings.HasPrefix(trimmed, "{") || !strings.Contains(err.Error(), "JSON") {
			t.Fatal(err)
		}
	}
	golden.FuzzParser(f, []string{"perf/*.txt"}, ParsePerf, jsonOnly, func(t *testing.T, runs []*PerfRun) {
		checkPerfRuns(t, runs)
		if err := WritePerfCSV(io.Discard, runs); err != nil {
			t.Fatal(err)
		}
	})
}

// checkPerfRuns holds for whatever the perf parsers return: the runs encode as JSON and every row
// has its out-of-place half.
func checkPerfRuns(t *testing.T, runs []*PerfRun) {
	t.Helper()
	if _, err := json.Marshal(runs); err != nil {
		t.Fatal(err)
	}
	for _, r := range runs {
		for _, row := range r.Rows {
			if row.OOP == nil {
				t.Fatalf("row without out-of-place half: %+v", row)
			}
		}
	}
}
