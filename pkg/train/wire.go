package train

import (
	"fmt"
	"io"
	"strings"

	"github.com/ain-hpc/ain/pkg/bench"
	"github.com/ain-hpc/ain/pkg/jobs"
	"github.com/ain-hpc/ain/pkg/textout"
)

// SummaryJSON is `train -o json`'s summary: the job's summary and, when the counters were
// read, what crossed each HCA of its nodes.
type SummaryJSON struct {
	jobs.Summary
	Wire *bench.Wire `json:"wire,omitempty"`
}

// WriteWireText writes the bytes that crossed each HCA of the job's nodes (nothing when wr is
// nil: no wire check ran); tty draws a bordered table.
func WriteWireText(w io.Writer, wr *bench.Wire, tty bool) {
	if wr == nil {
		return
	}
	fmt.Fprintln(w, "\nbytes that crossed each HCA (RDMA port counters before the job was submitted and after it ended):")
	if rows := wr.Rows(); len(rows) > 0 {
		textout.Table(w, tty, []string{"NODE", "PORT", "SENT", "RECEIVED", "NOTE"}, rows)
	}
	if wr.Note != "" {
		fmt.Fprintf(w, "  %s\n", wr.Note)
	}
	if wr.FloorBytes > 0 && len(wr.Findings) == 0 && wr.Note == "" { // a note: some node has no delta
		fmt.Fprintf(w, "  every node's RDMA ports moved (%s: the floor for a training job is more than nothing; ain cannot know its bytes)\n", textout.OrDash(strings.Join(wr.Devices, ",")))
	}
}
