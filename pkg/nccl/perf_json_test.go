package nccl

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ain-hpc/ain/internal/golden"
)

// TestPerfJSONAndPerIter reads nccl-tests' -J file and the -I 1 table. The samples are written
// with the exact printf/JSON formats of nccl-tests@a0b82b2 (2.19.6) src/util.cu and src/common.cu,
// and 2.17.4's (00f5281: JSON version 1, the misspelled "average_bus_bandwidith"); no public
// -J file or -I table was found to cut from.
func TestPerfJSONAndPerIter(t *testing.T) {
	tests := []struct {
		file       string
		source     string
		coll       string
		nranks     int
		rows       int
		avg        string
		oob        int64
		errors     int
		perIter    bool
		samples    int     // JSON: times_us per cell
		firstP99   float64 // the first row's out-of-place p99
		wrongAt1   int64   // the second row's out-of-place #wrong (-1: not checked)
		ncclVer    string
		firstOOPUs float64
	}{
		{"all_reduce-per-iter-I1-2.19.6.txt", "", "all_reduce_perf", 16, 6, "301.557", 0, 0, true, 0, 30.83, 0, "", 17.17},
		{"json/all_reduce-I1-J-2.19.6.json", SourceJSON, "all_reduce_perf", 16, 6, "301.557007", 0, 0, true, 20, 30.83391, 0, "2.27.3", 17.173895},
		// 2.17.4: misspelled average key, NaN time written as "nan", #wrong 512, the min-bw check failed.
		{"json/all_gather-J-failed-2.17.4.json", SourceJSON, "all_gather_perf", 8, 2, "49.852500", 1, 2, false, 0, 0, 512, "2.28.5", 0},
	}
	for _, tc := range tests {
		t.Run(tc.file, func(t *testing.T) {
			runs := parsePerfFile(t, filepath.Join("testdata", "perf", tc.file))
			if len(runs) != 1 {
				t.Fatalf("%d runs", len(runs))
			}
			r := runs[0]
			if r.Source != tc.source || r.Collective != tc.coll || r.NRanks == nil || *r.NRanks != tc.nranks || len(r.Rows) != tc.rows {
				t.Fatalf("source %q coll %q nranks %v rows %d", r.Source, r.Collective, r.NRanks, len(r.Rows))
			}
			if r.AvgBusbw == nil || r.AvgBusbw.String() != tc.avg {
				t.Errorf("avg %v, want %s", r.AvgBusbw, tc.avg)
			}
			if r.OutOfBounds == nil || *r.OutOfBounds != tc.oob || len(r.Errors) != tc.errors {
				t.Errorf("oob %v errors %v", r.OutOfBounds, r.Errors)
			}
			if r.NCCLVersion != tc.ncclVer {
				t.Errorf("nccl version %q, want %q", r.NCCLVersion, tc.ncclVer)
			}
			first := r.Rows[0].OOP
			if first.TimeUs != tc.firstOOPUs {
				t.Errorf("first time %v, want %v", first.TimeUs, tc.firstOOPUs)
			}
			if (first.PerIter != nil) != tc.perIter {
				t.Fatalf("perIter %+v", first.PerIter)
			}
			if tc.perIter {
				if first.PerIter.P99Us != tc.firstP99 || first.PerIter.Samples != tc.samples || first.PerIter.MinUs <= 0 || first.PerIter.MaxUs < first.PerIter.MinUs {
					t.Errorf("perIter %+v", first.PerIter)
				}
				if r.Rows[0].IP == nil || r.Rows[0].IP.PerIter == nil {
					t.Errorf("in-place perIter missing")
				}
			}
			if tc.wrongAt1 >= 0 && (r.Rows[1].OOP.Wrong == nil || *r.Rows[1].OOP.Wrong != tc.wrongAt1) {
				t.Errorf("row 1 wrong %v", r.Rows[1].OOP.Wrong)
			}
			if r.MaxBusbw == nil {
				t.Errorf("no max busbw")
			}
			if _, err := json.Marshal(runs); err != nil {
				t.Fatal(err)
			}
			golden.JSON(t, "perf-"+strings.NewReplacer("/", "-", ".txt", "", ".json", "").Replace(tc.file), r)
		})
	}
}

// TestPerfJSONBad: a file that starts like JSON but is not nccl-tests' is an error naming the
// byte offset, not an empty result; text that merely contains braces is still text.
func TestPerfJSONBad(t *testing.T) {
	for in, want := range map[string]string{
		`{"version":3,"results":[{"size":1`: "near byte",
		`{"hello":"world"}`:                 "not nccl-tests -J output",
	} {
		if _, err := ParsePerf(strings.NewReader(in)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: err %v, want %q", in, err, want)
		}
	}
	runs, err := ParsePerf(strings.NewReader("# {not json}\n     8   2  float  sum  -1  1.0  0.01  0.01  0  1.0  0.01  0.01  0\n"))
	if err != nil || len(runs) != 1 {
		t.Errorf("text with braces: %v %d", err, len(runs))
	}
	// Two documents (two binaries with -J appended to one file) are two runs.
	b, err := os.ReadFile(filepath.Join("testdata", "perf", "json", "all_gather-J-failed-2.17.4.json"))
	if err != nil {
		t.Fatal(err)
	}
	runs, err = ParsePerf(strings.NewReader(string(b) + "\n" + string(b)))
	if err != nil || len(runs) != 2 {
		t.Errorf("concatenated: %v %d", err, len(runs))
	}
}

// FuzzParsePerfJSON: any JSON-looking input either parses into runs that marshal, each row with
// its first half, or is an error; it never panics.
func FuzzParsePerfJSON(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join("testdata", "perf", "json", "*.json"))
	for _, p := range files {
		if b, err := os.ReadFile(p); err == nil {
			f.Add(b)
		}
	}
	f.Add([]byte(`{"version":1,"results":[{"size":-1,"count":2},{"size":8,"count":2,"out_of_place":null,"in_place":{"time":"inf","nwrong":1e300}}],"average_bus_bandwidith":{"bandwidith":"nan","okay":"false"}}`))
	f.Fuzz(func(t *testing.T, in []byte) {
		runs, err := ParsePerf(strings.NewReader(string(in)))
		if err != nil {
			return
		}
		checkPerfRuns(t, runs)
	})
}
