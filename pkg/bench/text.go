package bench

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/ain-hpc/ain/pkg/counters"
	"github.com/ain-hpc/ain/pkg/next"
	"github.com/ain-hpc/ain/pkg/textout"
)

// TextOptions shape a result's text report.
type TextOptions struct {
	// TTY: a terminal: bordered tables, the compact per-size table and a chart.
	TTY bool
	// Next words a variant's suggested commands (the caller knows its command names).
	Next func([]next.Command) string
	// Saved are the files the result was saved to.
	Saved []string
}

// WriteText writes the result: the variants, the per-size table (compact on a terminal, with a
// chart; every number otherwise), the bytes on each HCA, peaks, the model, the crossover and the
// verdict.
func (res *Result) WriteText(w io.Writer, o TextOptions) {
	fmt.Fprintf(w, "\nall_reduce_perf on %d node(s) x %d GPU = %d ranks, fabric %s, line rate %s = %.4g GB/s per NIC, %d NIC(s) per node: busbw limit %.4g GB/s\n",
		res.Nodes, res.GPUsPerNode, res.Ranks, res.Fabric, res.LineRate, res.LineRateGBps, res.NICsPerNode, res.LimitGBps)
	if res.LineRateNote != "" {
		fmt.Fprintln(w, res.LineRateNote)
	}
	if res.NICsNote != "" {
		fmt.Fprintln(w, res.NICsNote)
	}
	same := "on the same nodes"
	if !res.SameNodes {
		same = "NOT all on the same nodes"
	}
	fmt.Fprintf(w, "%d variant(s), one after another %s, %s in all\n\n", len(res.Variants), same, secs(res.Seconds))
	rows := [][]string{}
	for _, v := range res.Variants {
		valid := "yes"
		if !v.Valid {
			valid = "INVALID"
		}
		rows = append(rows, []string{v.Name, textout.OrDash(v.EnvText()), v.Job, v.Phase, secs(v.Seconds), textout.OrDash(strings.Join(v.Nodes, ",")), textout.OrDash(v.Transport), v.OutOfBoundsText(), valid})
	}
	textout.Table(w, o.TTY, []string{"VARIANT", "NCCL ENV", "JOB", "PHASE", "TIME", "NODES", "TRANSPORT", "OUT OF BOUNDS", "VALID"}, rows)
	for _, v := range res.Variants {
		for _, p := range v.Problems {
			fmt.Fprintf(w, "  PROBLEM %s: %s\n", v.Name, p)
		}
		for _, p := range v.Warnings {
			fmt.Fprintf(w, "  warning %s: %s\n", v.Name, p)
		}
		if len(v.Next) > 0 {
			fmt.Fprintf(w, "  next %s: %s\n", v.Name, o.Next(v.Next))
		}
	}
	res.writeWire(w, o.TTY)
	if len(res.Sizes) > 0 {
		fmt.Fprintln(w)
		res.writeSizes(w, o.TTY)
	}
	if o.TTY {
		if chart := Chart(SeriesOf([]*Result{res}, nil), res.LimitGBps, 12); chart != "" {
			fmt.Fprintf(w, "\n%s", chart)
		}
	}
	fmt.Fprintln(w)
	for _, p := range res.Peaks {
		pct := ""
		if p.PctLineRate != nil {
			pct = fmt.Sprintf(" = %.0f%% of line rate", *p.PctLineRate)
		}
		ref := ""
		if p.AtRef != nil && p.Size != RefBytes {
			ref = fmt.Sprintf("; %.2f GB/s at 1 GiB (%.0f%%)", *p.AtRef, *p.AtRefPct)
		}
		fmt.Fprintf(w, "peak %-12s %.2f GB/s at %s%s%s\n", p.Variant+":", p.Busbw, SizeLabel(p.Size), pct, ref)
	}
	if m := res.Model; m != nil {
		fmt.Fprintf(w, "cost model (Simple protocol, %.4g GB/s per node): ring %.1f us + bytes/%.2f GB/s, tree %.1f us + bytes/%.2f GB/s\n",
			m.NodeBusBwGBps, m.Ring.LatencyUs, m.Ring.AlgBwGBps, m.Tree.LatencyUs, m.Tree.AlgBwGBps)
	}
	if d := res.Deviation; d != nil {
		fmt.Fprintf(w, "largest deviation from the model (sizes >= 1 MiB): %+.1f%% (%s at %s: %.2f measured, %.2f predicted GB/s)\n",
			d.Deviation*100, d.Variant, SizeLabel(d.Size), d.Measured, d.Predicted)
	}
	if c := res.Crossover; c != nil {
		meas, pred := c.Describe()
		fmt.Fprintf(w, "ring/tree crossover (%s vs %s): measured %s; predicted %s\n", c.Ring, c.Tree, meas, pred)
	}
	fmt.Fprintf(w, "\nverdict: %s\n", res.Verdict)
	if len(o.Saved) > 0 {
		fmt.Fprintf(w, "\nsaved: %s\n", strings.Join(o.Saved, ", "))
	}
}

// writeSizes writes the per-size table: on a terminal busbw and % of line rate per variant plus
// NCCL's choice; otherwise time, algbw, busbw, % of line rate and the model per variant.
func (res *Result) writeSizes(w io.Writer, tty bool) {
	header := []string{"SIZE"}
	for _, v := range res.Variants {
		if tty {
			header = append(header, v.Name+" BUSBW", "%LINE")
		} else {
			header = append(header, v.Name+" TIME(us)", v.Name+" ALGBW", v.Name+" BUSBW", v.Name+" %LINE", v.Name+" MODEL", v.Name+" NCCL")
		}
	}
	if tty {
		header = append(header, "NCCL CHOICE ("+res.Variants[0].Name+")")
	}
	rows := [][]string{}
	for _, row := range res.Sizes {
		rec := []string{SizeLabel(row.Size)}
		for _, c := range row.Cells {
			if c == nil {
				if tty {
					rec = append(rec, "-", "-")
				} else {
					rec = append(rec, "-", "-", "-", "-", "-", "-")
				}
				continue
			}
			pct := "-"
			if c.PctLineRate != nil {
				pct = fmt.Sprintf("%.0f%%", *c.PctLineRate)
			}
			if tty {
				rec = append(rec, textout.G(c.Busbw), pct)
				continue
			}
			model := "-"
			if c.ModelBusbw != nil {
				model = fmt.Sprintf("%.2f", *c.ModelBusbw)
			}
			rec = append(rec, textout.G(c.TimeUs), textout.G(c.Algbw), textout.G(c.Busbw), pct, model, choice(c))
		}
		if tty {
			rec = append(rec, choice(row.Cells[0]))
		}
		rows = append(rows, rec)
	}
	textout.Table(w, tty, header, rows)
	fmt.Fprintln(w, "(out-of-place; GB/s; %LINE = busbw / the busbw limit (NICs per node x line rate / 8); MODEL = the cost model's busbw; NCCL = algorithm/protocol from TUNING lines)")
}

func choice(c *Cell) string {
	if c == nil || c.Algo == "" {
		return "-"
	}
	return c.Algo + "/" + c.Proto
}

func secs(s float64) string {
	return time.Duration(s * float64(time.Second)).Round(time.Second).String()
}

// writeWire writes what each HCA of the variants' nodes carried (counter deltas) against what
// the collective had to send.
func (res *Result) writeWire(w io.Writer, tty bool) {
	var rows [][]string
	var notes []string
	for _, v := range res.Variants {
		if v.Wire == nil {
			continue
		}
		wr := v.Wire
		for _, r := range wr.Rows() {
			rows = append(rows, append([]string{v.Name}, r...))
		}
		if wr.FloorBytes > 0 {
			notes = append(notes, fmt.Sprintf("%s: each node had to send at least %s over the fabric (ring allreduce: %s; %d iterations, out-of-place and in-place); NCCL says it used %s",
				v.Name, counters.HumanBytes(wr.FloorBytes), counters.HumanBytes(wr.RingBytes), wr.Iters, textout.OrDash(strings.Join(wr.Devices, ","))))
		}
		if wr.Note != "" {
			notes = append(notes, v.Name+": "+wr.Note)
		}
	}
	if len(rows) == 0 && len(notes) == 0 {
		return
	}
	fmt.Fprintln(w, "\nbytes that crossed each HCA (RDMA port counters before and after each variant):")
	if len(rows) > 0 {
		textout.Table(w, tty, []string{"VARIANT", "NODE", "PORT", "SENT", "RECEIVED", "NOTE"}, rows)
	}
	for _, n := range notes {
		fmt.Fprintf(w, "  %s\n", n)
	}
}

// Rows are the wire check's table rows: per node and port the bytes sent and received, the ports
// NCCL's log names marked; a node without a delta says why.
func (wr *Wire) Rows() [][]string {
	var rows [][]string
	for _, n := range wr.Nodes {
		if n.Err != "" {
			rows = append(rows, []string{n.Node, "-", "unknown", "unknown", n.Err})
			continue
		}
		for _, port := range slices.Sorted(maps.Keys(n.Ports)) {
			t := n.Ports[port]
			used := ""
			if slices.Contains(wr.Devices, port) {
				used = "NCCL's"
			}
			rows = append(rows, []string{n.Node, port, counters.HumanBytes(t.XmitBytes), counters.HumanBytes(t.RcvBytes), textout.OrDash(used)})
		}
	}
	return rows
}
