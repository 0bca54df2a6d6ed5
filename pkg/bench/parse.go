package bench

import (
	"bytes"
	"fmt"
	"io"
	"slices"

	"github.com/ain-hpc/ain/pkg/nccl"
	"github.com/ain-hpc/ain/pkg/next"
	"github.com/ain-hpc/ain/pkg/perftest"
)

// Output is what a benchmark tool printed, parsed (`ain bench parse`): nccl-tests' runs, or
// perftest's when its header is found (perftest.Detect).
type Output struct {
	NCCL     []*nccl.PerfRun
	Perftest []*perftest.Run
}

// NoRunsError says the input (Name) holds no result table; Perftest: it looked like perftest's.
type NoRunsError struct {
	Name     string
	Perftest bool
}

func (e *NoRunsError) Error() string {
	if e.Perftest {
		return "no perftest results in " + e.Name
	}
	return "no nccl-tests or perftest results in " + e.Name
}

// Hint says what the input should hold.
func (e *NoRunsError) Hint(func(next.Command) string) string {
	if e.Perftest {
		return "the input should hold the table a perftest binary prints (#bytes #iterations BW peak... or t_min...)"
	}
	return "the input should hold the table printed by an nccl-tests *_perf binary (size count type ... busbw #wrong) or by perftest's ib_*_bw/ib_*_lat (#bytes #iterations ...)"
}

// ParseOutput parses data, the output of nccl-tests or perftest; name names the input in its
// errors (a parse error, or a *NoRunsError).
func ParseOutput(data []byte, name string) (*Output, error) {
	if perftest.Detect(string(data)) {
		runs, err := perftest.Parse(bytes.NewReader(data))
		if err == nil && len(runs) == 0 {
			err = &NoRunsError{Name: name, Perftest: true}
		}
		return &Output{Perftest: runs}, named(name, err)
	}
	runs, err := nccl.ParsePerf(bytes.NewReader(data))
	if err == nil && len(runs) == 0 {
		err = &NoRunsError{Name: name}
	}
	return &Output{NCCL: runs}, named(name, err)
}

// named puts the input's name before a parser's error, which names the byte, not the file.
func named(name string, err error) error {
	if _, ok := err.(*NoRunsError); ok || err == nil {
		return err
	}
	return fmt.Errorf("%s: %w", name, err)
}

// JSON is what -o json prints: the run itself when there is one, else the list.
func (o *Output) JSON() any {
	if o.Perftest != nil {
		return oneOrAll(o.Perftest)
	}
	return oneOrAll(o.NCCL)
}

func oneOrAll[T any](runs []T) any {
	if len(runs) == 1 {
		return runs[0]
	}
	return runs
}

// WriteCSV writes one row per message size.
func (o *Output) WriteCSV(w io.Writer) error {
	if o.Perftest != nil {
		return perftest.WriteCSV(w, o.Perftest)
	}
	return nccl.WritePerfCSV(w, o.NCCL)
}

// WriteText writes the text report (colour on a terminal: tty).
func (o *Output) WriteText(w io.Writer, tty bool) error {
	if o.Perftest != nil {
		return perftest.WriteText(w, o.Perftest, tty)
	}
	return nccl.WritePerfText(w, o.NCCL, tty)
}

// OK reports whether every run is ok (no wrong values, no test failure).
func (o *Output) OK() bool {
	return !slices.ContainsFunc(o.Perftest, func(r *perftest.Run) bool { return !r.OK() }) &&
		!slices.ContainsFunc(o.NCCL, func(r *nccl.PerfRun) bool { return !r.OK() })
}
