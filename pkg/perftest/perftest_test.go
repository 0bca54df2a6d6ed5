package perftest

import (
	"encoding/json"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/ain-hpc/ain/internal/golden"
)

func parseFile(t *testing.T, name string) []*Run {
	t.Helper()
	return golden.Parse(t, filepath.Join("testdata", name), Parse)
}

func num(n *json.Number) string {
	if n == nil {
		return "-"
	}
	return n.String()
}

// TestParse checks per sample the test, units, settings read, row count and chosen rows with
// their values exactly as printed.
func TestParse(t *testing.T) {
	tests := []struct {
		file                            string
		runs                            int
		test, kind, units, device, link string
		qps, gid, rows                  int
		first, last                     string // bytes iterations and the kind's values
		localIPv4                       string
		errors                          int
	}{
		{"ib_write_bw-roce-server-duration.txt", 1, "ib_write_bw", "bw", "MB/sec", "mlx5_0", "Ethernet", 1, 3, 1,
			"65536 1774012 0.00 11087.52 0.177400", "", "10.10.1.5", 0},
		{"ib_write_bw-ib-ndr-all-gbits.txt", 1, "ib_write_bw", "bw", "Gb/sec", "mlx5_2", "IB", 1, -1, 23,
			"2 5000", "8388608 5000 393.57 392.00 0.005841", "", 0},
		{"ib_read_bw-roce-qps4-prefixed.txt", 1, "ib_read_bw", "bw", "Gb/sec", "mlx5_1", "Ethernet", 4, 3, 1,
			"65536 20000 183.41 182.97 0.349001", "", "192.168.50.21", 0},
		{"ib_write_lat-ib-all-percentiles.txt", 1, "ib_write_lat", "lat", "usec", "mlx5_0", "IB", 1, -1, 13,
			"2 1000 0.88 6.84 0.98 1.03 0.20 1.21 5.42", "8192 1000 3.79 37330.73 3.92 52.05 1179.56 1216.65 37330.73", "", 0},
		{"ib_send_lat-roce-duration.txt", 1, "ib_send_lat", "lat", "usec", "mlx5_0", "Ethernet", 1, 3, 1,
			"2 4131822 2.42 413182.20", "", "10.0.13.1", 0},
		{"ib_send_bw-ib-failed-then-cpu-util.txt", 2, "ib_send_bw", "bw", "MB/sec", "mlx5_3", "IB", 1, -1, 1,
			"65536 1000 11781.34 11780.53 0.188489 52.17", "", "", 0},
	}
	for _, tc := range tests {
		t.Run(tc.file, func(t *testing.T) {
			runs := parseFile(t, tc.file)
			if len(runs) != tc.runs {
				t.Fatalf("%d runs, want %d", len(runs), tc.runs)
			}
			r := runs[len(runs)-1]
			test := "<nil>"
			if r.Test != nil {
				test = *r.Test
			}
			if test != tc.test || r.Kind != tc.kind || r.Units != tc.units || r.Device != tc.device || r.LinkType != tc.link || r.Tool != "perftest" {
				t.Errorf("test %s kind %s units %s device %s link %s", test, r.Kind, r.Units, r.Device, r.LinkType)
			}
			if r.QPs == nil || *r.QPs != tc.qps || (tc.gid < 0) != (r.GIDIndex == nil) || (r.GIDIndex != nil && *r.GIDIndex != tc.gid) {
				t.Errorf("qps %v gid %v, want %d %d", r.QPs, r.GIDIndex, tc.qps, tc.gid)
			}
			if len(r.Rows) != tc.rows {
				t.Fatalf("%d rows, want %d", len(r.Rows), tc.rows)
			}
			if got := rowText(r, r.Rows[0]); !strings.HasPrefix(got, tc.first) {
				t.Errorf("first row %q, want %q", got, tc.first)
			}
			if tc.last != "" {
				if got := rowText(r, r.Rows[len(r.Rows)-1]); got != tc.last {
					t.Errorf("last row %q, want %q", got, tc.last)
				}
			}
			if tc.localIPv4 != "" && (len(r.Local) == 0 || r.Local[0].IPv4 != tc.localIPv4) {
				t.Errorf("local %+v, want IPv4 %s", r.Local, tc.localIPv4)
			}
			if len(r.Local) != tc.qps || len(r.Remote) != tc.qps {
				t.Errorf("%d local, %d remote addresses, want %d", len(r.Local), len(r.Remote), tc.qps)
			}
			golden.JSON(t, strings.TrimSuffix(tc.file, ".txt"), runs)
		})
	}
}

func rowText(r *Run, row Row) string {
	parts := []string{itoa(row.Bytes), itoa(row.Iterations)}
	if r.Kind == "bw" {
		parts = append(parts, num(row.BwPeak), num(row.BwAverage), num(row.MsgRate))
		if row.CPUUtil != nil {
			parts = append(parts, num(row.CPUUtil))
		}
	} else if row.TMin != nil {
		parts = append(parts, num(row.TMin), num(row.TMax), num(row.TTypical), num(row.TAvg), num(row.TStdev), num(row.P99), num(row.P999))
	} else {
		parts = append(parts, num(row.TAvg), num(row.TpsAverage))
	}
	return strings.Join(parts, " ")
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// TestErrorsAndWarnings: the failed connection is reported with its line; the CPU frequency line
// inside a table is a warning, not a row.
func TestErrorsAndWarnings(t *testing.T) {
	runs := parseFile(t, "ib_send_bw-ib-failed-then-cpu-util.txt")
	if r := runs[0]; r.Test == nil || *r.Test != "ib_send_bw" || len(r.Rows) != 0 || len(r.Errors) != 2 || r.Errors[0] != "line 2: Couldn't connect to 10.0.3.7:18515" {
		t.Errorf("failed attempt: %+v", r)
	}
	runs = parseFile(t, "ib_send_lat-roce-duration.txt")
	if len(runs[0].Warnings) != 1 || !strings.Contains(runs[0].Warnings[0], "line 23: Conflicting CPU frequency") {
		t.Errorf("warnings %q", runs[0].Warnings)
	}
	// A run that printed its settings and then failed keeps the error lines.
	text := "                    RDMA_Write BW Test\n Dual-port       : OFF\t\tDevice         : mlx5_0\n" +
		" Failed to modify QP 0x0108 to RTR\n Unable to Connect the HCA's through the link\n"
	runs, err := Parse(strings.NewReader(text))
	if err != nil {
		t.Fatal(err)
	}
	if len(runs) != 1 || len(runs[0].Rows) != 0 || len(runs[0].Errors) != 2 || !strings.HasPrefix(runs[0].Errors[0], "line 3: Failed to modify QP") {
		t.Fatalf("runs %+v", runs)
	}
}

// TestParseErrors: a cut row and an unknown column are errors naming the line.
func TestParseErrors(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{" #bytes     #iterations    BW peak[MB/sec]    BW average[MB/sec]   MsgRate[Mpps]\n 65536 1000 11781.34\n", "line 2: result row has 3 values, the header has 5 columns"},
		{" #bytes     #iterations    BW peak[MB/sec]    BW median[MB/sec]\n", "line 1: perftest result header has an unknown column \"BW median\""},
		{" #bytes #iterations    t_min[usec]    t_max[usec]  t_typical[usec]\n 2 1000 0.88 x 0.98\n", "line 2: column tMax: \"x\" is not a number"},
	} {
		_, err := Parse(strings.NewReader(tc.in))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Parse(%q) = %v, want %q", tc.in, err, tc.want)
		}
	}
}

// TestGbps: perftest's MB/sec is MiB/s (format_factor 0x100000).
func TestGbps(t *testing.T) {
	r := &Run{Units: "MB/sec"}
	n := json.Number("11780.53")
	if g, _ := r.Gbps(&n); g < 98.82 || g > 98.83 {
		t.Errorf("11780.53 MB/sec = %v Gb/s, want 98.82", g)
	}
	r.Units = "Gb/sec"
	if g, _ := r.Gbps(&n); g != 11780.53 {
		t.Errorf("Gb/sec changed: %v", g)
	}
	if !Detect(" #bytes #iterations    t_min[usec]") || Detect("#  size  count  type  redop") {
		t.Error("Detect")
	}
}
