package cli

import (
	"bytes"
	"fmt"
	"io"
	"slices"

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
	return reportRuns(a, o.Output, runs, perftest.WriteCSV, perftest.WriteText, (*perftest.Run).OK)
}

// reportRuns is `bench parse`'s output for either parser's runs: JSON (one run or the list),
// CSV or the text report, then exit 5 when a run is not ok.
func reportRuns[T any](a *App, format string, runs []T, writeCSV func(io.Writer, []T) error, text func(io.Writer, []T, bool) error, ok func(T) bool) error {
	return a.verdict(format, oneOrAll(runs), func() error {
		if format == "csv" {
			return writeCSV(a.Streams.Out, runs)
		}
		return text(a.Streams.Out, runs, a.Streams.IsTTY)
	}, !slices.ContainsFunc(runs, func(r T) bool { return !ok(r) }))
}

// oneOrAll is what -o json prints for parsed runs: the run itself when there is one, else the array.
func oneOrAll[T any](runs []T) any {
	if len(runs) == 1 {
		return runs[0]
	}
	return runs
}
