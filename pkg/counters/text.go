package counters

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/ain-hpc/ain/pkg/next"
	"github.com/ain-hpc/ain/pkg/textout"
)

// TextOptions shape a counters report's text.
type TextOptions struct {
	TTY    bool // bordered tables
	Deltas bool // two snapshots were compared (else one snapshot's totals)
	All    bool // every counter that moved, not only those with a meaning
	// Fix words a finding's fix with its suggested commands.
	Fix func(string, []next.Command) string
}

// WriteText writes the verdict, the bytes per RDMA port, the counter deltas and the findings.
func (r *Report) WriteText(w io.Writer, o TextOptions) {
	deltas, all := o.Deltas, o.All
	problems, backwards := 0, 0
	for _, f := range r.Findings {
		switch {
		case f.Severity == "problem":
			problems++
		case f.Code == "counter-went-backwards":
			backwards = len(f.Ports)
		}
	}
	switch {
	case !deltas:
		fmt.Fprintf(w, "OK: one snapshot of %d port(s) (%s); values since the last counter reset\n", len(r.Ports), strings.Join(r.Formats, ", "))
	case problems > 0:
		fmt.Fprintf(w, "PROBLEM: %d problem(s) in the counter deltas of %d port(s)\n", problems, len(r.Ports))
	case backwards > 0:
		fmt.Fprintf(w, "INCONCLUSIVE: %d counter(s) went backwards between the snapshots: their deltas are unknown (BEFORE must come first)\n", backwards)
	default:
		fmt.Fprintf(w, "OK: no loss or error counter moved on %d port(s)\n", len(r.Ports))
	}
	if len(r.Bytes) > 0 {
		fmt.Fprintln(w)
		rows := make([][]string, 0, len(r.Bytes))
		for _, p := range slices.Sorted(maps.Keys(r.Bytes)) {
			t := r.Bytes[p]
			if t.Unknown {
				rows = append(rows, []string{p, "unknown (went backwards)", "unknown (went backwards)"})
				continue
			}
			rows = append(rows, []string{p, HumanBytes(t.XmitBytes), HumanBytes(t.RcvBytes)})
		}
		textout.Table(w, o.TTY, []string{"RDMA PORT", "SENT (4 x port_xmit_data)", "RECEIVED (4 x port_rcv_data)"}, rows)
	}
	if deltas && len(r.Deltas) > 0 {
		fmt.Fprintln(w)
		var rows [][]string
		for _, p := range slices.Sorted(maps.Keys(r.Deltas)) {
			for _, d := range r.Deltas[p] {
				if d.Meaning == "" && !all {
					continue
				}
				delta := "went backwards"
				if d.Delta != nil {
					delta = "+" + strconv.FormatUint(*d.Delta, 10)
				}
				rows = append(rows, []string{p, d.Counter, delta, textout.OrDash(d.Class), textout.OrDash(d.Meaning)})
			}
		}
		textout.Table(w, o.TTY, []string{"PORT", "COUNTER", "DELTA", "CLASS", "MEANING"}, rows)
	}
	for _, f := range r.Findings {
		fmt.Fprintf(w, "\n%s [%s]: %s\n", f.Severity, f.Code, f.Message)
		if f.Fix != "" {
			fmt.Fprintf(w, "  fix: %s\n", o.Fix(f.Fix, f.Next))
		}
	}
}
