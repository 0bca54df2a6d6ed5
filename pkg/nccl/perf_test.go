package nccl

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ain-hpc/ain/internal/golden"
)

func parsePerfFile(t *testing.T, path string) []*PerfRun {
	t.Helper()
	return golden.Parse(t, path, ParsePerf)
}

// TestPerfFormats covers the nccl-tests formats: new and old columns, N/A, wrong values,
// rank lists, srun labels with interleaved NCCL lines, concatenated runs, inference without
// a banner and test failures. Samples are written from nccl-tests' documented output.
func TestPerfFormats(t *testing.T) {
	type want struct {
		coll     string
		inferred bool
		nranks   int // 0: null
		inferN   int // 0: null
		rows     int
		avg      string // "" : null
		max      float64
		oob      int64 // -1: null
		errors   int
	}
	tests := []struct {
		file string
		runs []want
	}{
		{"all_gather-16ranks-g8.txt", []want{{coll: "all_gather_perf", nranks: 16, inferN: 16, rows: 6, avg: "117.65", max: 187.07, oob: 0}}},
		{"broadcast-old-error-column.txt", []want{{coll: "broadcast_perf", inferred: true, nranks: 4, rows: 6, avg: "1.68917", max: 7.83, oob: 0}}},
		{"all_reduce-nocheck-NA.txt", []want{{coll: "all_reduce_perf", inferred: true, nranks: 2, rows: 5, avg: "0.002", max: 0.01, oob: 0}}},
		{"all_reduce-wrong-failed.txt", []want{{coll: "all_reduce_perf", inferN: 16, rows: 3, avg: "39.7617", max: 49.09, oob: 2}}},
		{"concatenated-sendrecv-alltoall.txt", []want{
			{coll: "sendrecv_perf", rows: 3, avg: "45.2283", max: 54.83, oob: 0},
			{coll: "alltoall_perf", inferN: 16, rows: 3, avg: "22.2117", max: 28.03, oob: 0},
		}},
		{"reduce_scatter-nobanner.txt", []want{{coll: "reduce_scatter_perf", inferred: true, inferN: 16, rows: 3, max: 124.73, oob: -1}}},
		{"test-failure.txt", []want{{coll: "all_reduce_perf", inferred: true, rows: 1, max: 0, oob: -1, errors: 2}}},
	}
	for _, tc := range tests {
		t.Run(tc.file, func(t *testing.T) {
			runs := parsePerfFile(t, filepath.Join("testdata", "perf", tc.file))
			if len(runs) != len(tc.runs) {
				t.Fatalf("got %d runs, want %d", len(runs), len(tc.runs))
			}
			for i, w := range tc.runs {
				r := runs[i]
				if r.Collective != w.coll || r.CollectiveInferred != w.inferred {
					t.Errorf("run %d: collective %q inferred %v, want %q %v", i, r.Collective, r.CollectiveInferred, w.coll, w.inferred)
				}
				if (w.nranks == 0) != (r.NRanks == nil) || (r.NRanks != nil && *r.NRanks != w.nranks) {
					t.Errorf("run %d: nranks %s, want %d", i, ptrStr(r.NRanks), w.nranks)
				}
				if (w.inferN == 0) != (r.NRanksInferred == nil) || (r.NRanksInferred != nil && *r.NRanksInferred != w.inferN) {
					t.Errorf("run %d: nranksInferred %s, want %d", i, ptrStr(r.NRanksInferred), w.inferN)
				}
				if len(r.Rows) != w.rows {
					t.Errorf("run %d: %d rows, want %d", i, len(r.Rows), w.rows)
				}
				if got := ptrStr(r.AvgBusbw); (w.avg == "" && got != "null") || (w.avg != "" && got != w.avg) {
					t.Errorf("run %d: avgBusbw %s, want %q", i, got, w.avg)
				}
				if r.MaxBusbw == nil || *r.MaxBusbw != w.max {
					t.Errorf("run %d: maxBusbw %s, want %v", i, ptrStr(r.MaxBusbw), w.max)
				}
				if (w.oob < 0) != (r.OutOfBounds == nil) || (r.OutOfBounds != nil && *r.OutOfBounds != w.oob) {
					t.Errorf("run %d: outOfBounds %s, want %d", i, ptrStr(r.OutOfBounds), w.oob)
				}
				if len(r.Errors) != w.errors {
					t.Errorf("run %d: errors %q, want %d", i, r.Errors, w.errors)
				}
			}
			golden.JSON(t, "perf-"+strings.TrimSuffix(tc.file, ".txt"), runs)
		})
	}
}

// TestPerfCells checks the per-cell details: N/A, the old error column, wrong counts, root.
func TestPerfCells(t *testing.T) {
	runs := parsePerfFile(t, filepath.Join("testdata", "perf", "all_reduce-nocheck-NA.txt"))
	row := runs[0].Rows[0]
	if row.Size != 8 || row.Count != 2 || row.Type != "float" || row.Redop != "sum" || row.Root == nil || *row.Root != -1 {
		t.Errorf("row = %+v", row)
	}
	if row.OOP.Wrong != nil || row.IP.Wrong != nil || row.OOP.TimeUs != 18.36 || row.IP.TimeUs != 18.01 {
		t.Errorf("N/A row: oop %+v ip %+v", row.OOP, row.IP)
	}
	old := parsePerfFile(t, filepath.Join("testdata", "perf", "broadcast-old-error-column.txt"))[0].Rows[5]
	if old.Redop != "" || old.Root == nil || *old.Root != 0 || old.OOP.Error == nil || *old.OOP.Error != 0 || old.OOP.Wrong != nil || old.IP.Busbw != 7.83 {
		t.Errorf("old row = %+v oop %+v", old, old.OOP)
	}
	bad := parsePerfFile(t, filepath.Join("testdata", "perf", "all_reduce-wrong-failed.txt"))[0]
	if w := bad.Rows[1].OOP.Wrong; w == nil || *w != 512 {
		t.Errorf("wrong = %s", ptrStr(w))
	}
}

// TestPerfNoHeader parses rows without any header (a paste of the table body only).
func TestPerfNoHeader(t *testing.T) {
	in := "   1048576   262144  float  sum  -1  66.10  15.86  29.74  0  65.80  15.94  29.88  0\n" +
		"   2097152   524288  half   sum  -1  97.35  21.54  40.39  0  97.02  21.62  40.53  0\n"
	runs, err := ParsePerf(strings.NewReader(in))
	if err != nil || len(runs) != 1 || len(runs[0].Rows) != 2 {
		t.Fatalf("runs %v err %v", runs, err)
	}
	if r := runs[0].Rows[1]; r.Type != "half" || r.IP.Busbw != 40.53 || r.OOP.Wrong == nil {
		t.Errorf("row %+v", r)
	}
}

func TestPerfCSV(t *testing.T) {
	runs := parsePerfFile(t, filepath.Join("testdata", "perf", "concatenated-sendrecv-alltoall.txt"))
	var b bytes.Buffer
	if err := WritePerfCSV(&b, runs); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	if len(lines) != 7 {
		t.Fatalf("%d CSV lines:\n%s", len(lines), b.String())
	}
	if lines[0] != "collective,size,count,type,redop,root,oop_time_us,oop_algbw,oop_busbw,oop_wrong,ip_time_us,ip_algbw,ip_busbw,ip_wrong" {
		t.Errorf("header %q", lines[0])
	}
	if lines[4] != "alltoall_perf,1048576,16384,float,none,-1,60.44,17.35,16.26,0,59.91,17.5,16.41," {
		t.Errorf("row %q", lines[4])
	}
}

// TestPerfCPUTimeAndMinBW covers -C 1 (the header says cputime) and NCCL_TESTS_MIN_BW, which
// appends OK/FAILED to the average line.
func TestPerfCPUTimeAndMinBW(t *testing.T) {
	in := "#       size         count      type   redop    root  cputime   algbw   busbw #wrong  cputime   algbw   busbw #wrong\n" +
		"     1048576        262144     float     sum      -1    66.10   15.86   29.74      0    65.80   15.94   29.88      0\n" +
		"# Out of bounds values : 0 OK\n" +
		"# Avg bus bandwidth    : 29.81 FAILED\n"
	runs, err := ParsePerf(strings.NewReader(in))
	if err != nil || len(runs) != 1 {
		t.Fatalf("%v %v", runs, err)
	}
	r := runs[0]
	if r.cols == nil || len(r.cols.half) != 4 || r.Rows[0].IP.Busbw != 29.88 {
		t.Errorf("cols %+v row %+v", r.cols, r.Rows[0])
	}
	if r.AvgBusbw == nil || r.AvgBusbw.String() != "29.81" || len(r.Errors) != 1 {
		t.Errorf("avg %v errors %q", ptrStr(r.AvgBusbw), r.Errors)
	}
}

// TestPerfPerIterationColumns covers nccl-tests 2.19's per-iteration columns (i_min i_max i_p99
// i_cv% in each half), a trailing timestamp, and #wrong printed with %g.
func TestPerfPerIterationColumns(t *testing.T) {
	in := "#       size         count      type   redop    root     time   algbw   busbw  #wrong    i_min    i_max    i_p99    i_cv%     time   algbw   busbw  #wrong    i_min    i_max    i_p99    i_cv%  timestamp\n" +
		"#        (B)    (elements)                               (us)  (GB/s)  (GB/s)             (us)     (us)     (us)      (%)     (us)  (GB/s)  (GB/s)             (us)     (us)     (us)      (%)  \n" +
		"     1048576        262144     float     sum      -1    66.10   15.86   29.74       0    64.20    70.10    69.90     2.10    65.80   15.94   29.88   1e+06    64.00    69.00    68.80     1.90  2026-01-02 03:04:05\n" +
		"# Out of bounds values : 1 FAILED\n# Avg bus bandwidth    : 29.81 \n"
	runs, err := ParsePerf(strings.NewReader(in))
	if err != nil || len(runs) != 1 || len(runs[0].Rows) != 1 {
		t.Fatalf("%v %v", runs, err)
	}
	row := runs[0].Rows[0]
	if row.OOP.TimeUs != 66.10 || row.OOP.Busbw != 29.74 || row.IP.TimeUs != 65.80 || row.IP.Busbw != 29.88 {
		t.Errorf("row %+v %+v", row.OOP, row.IP)
	}
	if row.IP.Wrong == nil || *row.IP.Wrong != 1000000 || row.IP.Error != nil {
		t.Errorf("wrong %s error %v", ptrStr(row.IP.Wrong), row.IP.Error)
	}
}
