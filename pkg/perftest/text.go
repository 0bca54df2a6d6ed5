package perftest

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"strconv"

	"github.com/ain-hpc/ain/pkg/textout"
)

// OK reports whether r parsed without errors and holds at least one row.
func (r *Run) OK() bool { return len(r.Errors) == 0 && len(r.Rows) > 0 }

// csvColumns: every row field, in the JSON keys' order.
var csvColumns = []string{"bytes", "sl", "iterations", "bwPeak", "bwAverage", "msgRate", "bwPort1", "msgRatePort1",
	"bwPort2", "msgRatePort2", "tMin", "tMax", "tTypical", "tAvg", "tStdev", "p99", "p999", "tpsAverage", "cpuUtil"}

// WriteCSV writes one row per message size of every run, each value as perftest printed it.
func WriteCSV(w io.Writer, runs []*Run) error {
	cw := csv.NewWriter(w)
	_ = cw.Write(append([]string{"run", "test", "device", "units"}, csvColumns...))
	for i, r := range runs {
		test := ""
		if r.Test != nil {
			test = *r.Test
		}
		for _, row := range r.Rows {
			b, err := json.Marshal(row)
			if err != nil {
				return err
			}
			var m map[string]json.RawMessage
			if err := json.Unmarshal(b, &m); err != nil {
				return err
			}
			rec := []string{strconv.Itoa(i + 1), test, r.Device, r.Units}
			for _, c := range csvColumns {
				rec = append(rec, string(m[c]))
			}
			_ = cw.Write(rec)
		}
	}
	cw.Flush()
	return cw.Error()
}

// WriteText writes the text report of parsed runs: per run a status line with its settings,
// the best average bandwidth, its problems and its table (bordered when tty).
func WriteText(w io.Writer, runs []*Run, tty bool) error {
	for i, r := range runs {
		if i > 0 {
			fmt.Fprintln(w)
		}
		writeHead(w, r)
		if len(r.Rows) == 0 {
			continue
		}
		var head []string
		rows := make([][]string, 0, len(r.Rows))
		if r.Kind == "bw" {
			head = []string{"BYTES", "ITERATIONS", "BW PEAK[" + r.Units + "]", "BW AVERAGE[" + r.Units + "]", "MSGRATE[Mpps]"}
			for _, row := range r.Rows {
				rows = append(rows, []string{strconv.FormatInt(row.Bytes, 10), strconv.FormatInt(row.Iterations, 10), numText(row.BwPeak), numText(row.BwAverage), numText(row.MsgRate)})
			}
		} else {
			head = []string{"BYTES", "ITERATIONS", "T_MIN", "T_MAX", "T_TYPICAL", "T_AVG", "T_STDEV", "P99", "P99.9", "TPS"}
			for _, row := range r.Rows {
				rows = append(rows, []string{strconv.FormatInt(row.Bytes, 10), strconv.FormatInt(row.Iterations, 10), numText(row.TMin), numText(row.TMax),
					numText(row.TTypical), numText(row.TAvg), numText(row.TStdev), numText(row.P99), numText(row.P999), numText(row.TpsAverage)})
			}
			fmt.Fprintln(w, "(latencies in usec)")
		}
		textout.Table(w, tty, head, rows)
	}
	return nil
}

// writeHead writes a run's status line, its RoCE GIDs, best average, errors and warnings.
func writeHead(w io.Writer, r *Run) {
	test := "perftest"
	if r.Test != nil {
		test = *r.Test
	}
	status := "OK"
	if !r.OK() {
		status = "PROBLEM"
	}
	fmt.Fprintf(w, "%s: %s", status, test)
	if r.Device != "" {
		fmt.Fprintf(w, " on %s", r.Device)
	}
	if r.LinkType != "" {
		fmt.Fprintf(w, " (link %s", r.LinkType)
		if r.GIDIndex != nil {
			fmt.Fprintf(w, ", GID index %d", *r.GIDIndex)
		}
		fmt.Fprint(w, ")")
	}
	if r.QPs != nil {
		fmt.Fprintf(w, ", %d QP(s)", *r.QPs)
	}
	if r.Connection != "" {
		fmt.Fprintf(w, " %s", r.Connection)
	}
	fmt.Fprintf(w, ", %d size(s)\n", len(r.Rows))
	if len(r.Local) > 0 && r.Local[0].IPv4 != "" {
		remote := "-"
		if len(r.Remote) > 0 && r.Remote[0].IPv4 != "" {
			remote = r.Remote[0].IPv4
		}
		fmt.Fprintf(w, "RoCE v2 GIDs: local %s, remote %s\n", r.Local[0].IPv4, remote)
	}
	if best := r.Best(); best != nil && r.Kind == "bw" {
		if g, ok := r.Gbps(best.BwAverage); ok {
			fmt.Fprintf(w, "best average: %s %s at %s (%.1f Gb/s)\n", best.BwAverage, r.Units, textout.Size(best.Bytes), g)
		}
	}
	for _, e := range r.Errors {
		fmt.Fprintf(w, "  problem: %s\n", e)
	}
	for _, e := range r.Warnings {
		fmt.Fprintf(w, "  warning: %s\n", e)
	}
}

func numText(n *json.Number) string {
	if n == nil {
		return "-"
	}
	return n.String()
}
