package cli

import (
	"fmt"
	"strings"

	"github.com/ain-hpc/ain/pkg/bench"
	"github.com/ain-hpc/ain/pkg/jobs"
)

// trainJobJSON is `ain train -o json`'s summary: the job's summary and, when the counters were
// read, what crossed each HCA of its nodes.
type trainJobJSON struct {
	jobs.Summary
	Wire *bench.Wire `json:"wire,omitempty"`
}

// wireRows are the per-HCA rows of a wire check: node, port, bytes sent and received, and a note
// (NCCL's port, or why a node has no reading); bench and train print them.

// printJobWire prints the bytes that crossed each HCA of the job's nodes.
func (a *App) printJobWire(wr *bench.Wire) {
	if wr == nil {
		return
	}
	w := a.Streams.Out
	fmt.Fprintln(w, "\nbytes that crossed each HCA (RDMA port counters before the job was submitted and after it ended):")
	if rows := wr.Rows(); len(rows) > 0 {
		a.table([]string{"NODE", "PORT", "SENT", "RECEIVED", "NOTE"}, rows)
	}
	if wr.Note != "" {
		fmt.Fprintf(w, "  %s\n", wr.Note)
	}
	if wr.FloorBytes > 0 && len(wr.Findings) == 0 && wr.Note == "" { // a note: some node has no delta
		fmt.Fprintf(w, "  every node's RDMA ports moved (%s: the floor for a training job is more than nothing; ain cannot know its bytes)\n", orDash(strings.Join(wr.Devices, ",")))
	}
}
