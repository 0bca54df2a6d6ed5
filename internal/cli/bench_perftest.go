package cli

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strconv"

	"github.com/ain-hpc/ain/internal/ainerr"
	"github.com/ain-hpc/ain/pkg/perftest"
)

// maxParseInput bounds what `bench parse` reads into memory to tell perftest from nccl-tests.
const maxParseInput = 256 << 20

// runPerftestParse is `bench parse` on perftest output (ib_write_bw, ib_read_lat, ...).
func (a *App) runPerftestParse(o *benchParseOptions, data []byte) error {
	runs, err := perftest.Parse(bytes.NewReader(data))
	if err != nil {
		return ainerr.New(ainerr.Failure, fmt.Errorf("%s: %w", o.File, err), "")
	}
	if len(runs) == 0 {
		return ainerr.New(ainerr.Failure, fmt.Errorf("no perftest results in %s", o.File),
			"the input should hold the table a perftest binary prints (#bytes #iterations BW peak... or t_min...)")
	}
	return reportRuns(a, o.Output, runs, writePerftestCSV, a.printPerftest, func(r *perftest.Run) bool { return len(r.Errors) == 0 && len(r.Rows) > 0 })
}

// reportRuns is `bench parse`'s output for either parser's runs: JSON (one run or the list),
// CSV or the text table, then exit 5 when a run is not ok.
func reportRuns[T any](a *App, format string, runs []T, writeCSV func(io.Writer, []T) error, text func([]T), ok func(T) bool) error {
	return a.verdict(format, oneOrAll(runs), func() error {
		if format == "csv" {
			return writeCSV(a.Streams.Out, runs)
		}
		text(runs)
		return nil
	}, !slices.ContainsFunc(runs, func(r T) bool { return !ok(r) }))
}

// perftestCSVColumns: every row field, in the JSON keys' order.
var perftestCSVColumns = []string{"bytes", "sl", "iterations", "bwPeak", "bwAverage", "msgRate", "bwPort1", "msgRatePort1",
	"bwPort2", "msgRatePort2", "tMin", "tMax", "tTypical", "tAvg", "tStdev", "p99", "p999", "tpsAverage", "cpuUtil"}

func writePerftestCSV(w io.Writer, runs []*perftest.Run) error {
	cw := csv.NewWriter(w)
	_ = cw.Write(append([]string{"run", "test", "device", "units"}, perftestCSVColumns...))
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
			for _, c := range perftestCSVColumns {
				rec = append(rec, string(m[c]))
			}
			_ = cw.Write(rec)
		}
	}
	cw.Flush()
	return cw.Error()
}

func (a *App) printPerftest(runs []*perftest.Run) {
	w := a.Streams.Out
	for i, r := range runs {
		if i > 0 {
			fmt.Fprintln(w)
		}
		test := "perftest"
		if r.Test != nil {
			test = *r.Test
		}
		status := "OK"
		if len(r.Errors) > 0 || len(r.Rows) == 0 {
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
				fmt.Fprintf(w, "best average: %s %s at %s (%.1f Gb/s)\n", best.BwAverage, r.Units, humanBytes(best.Bytes), g)
			}
		}
		for _, e := range r.Errors {
			fmt.Fprintf(w, "  problem: %s\n", e)
		}
		for _, e := range r.Warnings {
			fmt.Fprintf(w, "  warning: %s\n", e)
		}
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
		a.table(head, rows)
	}
}

func numText(n *json.Number) string {
	if n == nil {
		return "-"
	}
	return n.String()
}

// oneOrAll is what -o json prints for parsed runs: the run itself when there is one, else the array.
func oneOrAll[T any](runs []T) any {
	if len(runs) == 1 {
		return runs[0]
	}
	return runs
}
