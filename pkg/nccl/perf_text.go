package nccl

import (
	"fmt"
	"io"
	"strconv"

	"github.com/ain-hpc/ain/pkg/textout"
)

// OK reports whether r has no wrong values: no parse errors, no out-of-bounds values and no
// #wrong above 0 in any row.
func (r *PerfRun) OK() bool {
	if len(r.Errors) > 0 || (r.OutOfBounds != nil && *r.OutOfBounds > 0) {
		return false
	}
	for _, row := range r.Rows {
		for _, c := range []*PerfCell{row.OOP, row.IP} {
			if c != nil && c.Wrong != nil && *c.Wrong > 0 {
				return false
			}
		}
	}
	return true
}

// WritePerfText writes the text report of parsed nccl-tests runs: per run a status line, its
// problems and its table (bordered when tty).
func WritePerfText(w io.Writer, runs []*PerfRun, tty bool) error {
	for i, r := range runs {
		if i > 0 {
			fmt.Fprintln(w)
		}
		writePerfHead(w, r)
		perIter := false // nccl-tests -I 1: add the out-of-place p99 and coefficient of variation
		for _, row := range r.Rows {
			perIter = perIter || row.OOP.PerIter != nil
		}
		rows := make([][]string, 0, len(r.Rows))
		for _, row := range r.Rows {
			rec := []string{textout.Size(row.Size), row.Type, textout.OrDash(row.Redop)}
			rec = append(rec, row.OOP.Texts("-", "N/A")...)
			rec = append(rec, row.IP.Texts("-", "N/A")...)
			if perIter {
				p99, cv := "-", "-"
				if pi := row.OOP.PerIter; pi != nil {
					p99, cv = textout.G(pi.P99Us), textout.G(pi.CVPct)
				}
				rec = append(rec, p99, cv)
			}
			rows = append(rows, rec)
		}
		head := []string{"SIZE", "TYPE", "REDOP", "OOP TIME(us)", "OOP ALGBW", "OOP BUSBW", "OOP WRONG", "IP TIME(us)", "IP ALGBW", "IP BUSBW", "IP WRONG"}
		if perIter {
			head = append(head, "OOP P99(us)", "OOP CV%")
		}
		textout.Table(w, tty, head, rows)
	}
	return nil
}

// writePerfHead writes a run's status line and its problems.
func writePerfHead(w io.Writer, r *PerfRun) {
	status := "OK"
	if !r.OK() {
		status = "PROBLEM"
	}
	coll := r.Collective
	if r.CollectiveInferred {
		coll += " (inferred)"
	}
	ranks := "not printed"
	if r.NRanks != nil {
		ranks = strconv.Itoa(*r.NRanks)
	} else if r.NRanksInferred != nil {
		ranks = strconv.Itoa(*r.NRanksInferred) + " (inferred from busbw/algbw)"
	}
	avg, max := "-", "-"
	if r.AvgBusbw != nil {
		avg = r.AvgBusbw.String()
	}
	if r.MaxBusbw != nil {
		max = textout.G(*r.MaxBusbw)
	}
	fmt.Fprintf(w, "%s: %s, ranks %s, %d sizes, max busbw %s GB/s, avg busbw %s GB/s\n", status, coll, ranks, len(r.Rows), max, avg)
	if r.OutOfBounds != nil && *r.OutOfBounds > 0 {
		fmt.Fprintf(w, "  problem: %d out-of-bounds values: the results are wrong, not just slow\n", *r.OutOfBounds)
	}
	for _, e := range r.Errors {
		fmt.Fprintf(w, "  problem: %s\n", e)
	}
	if r.Elided {
		fmt.Fprintln(w, "  note: rows were elided (...) in the input; the printed average covers them, maxBusbw does not")
	}
}

// WriteText writes the model's text report: the parameters, both algorithms' latency and
// bandwidth, the ring/tree crossover and the table of predictions per size (bordered when tty).
func (res *ModelResult) WriteText(w io.Writer, tty bool) error {
	pp := res.Params
	fmt.Fprintf(w, "allreduce model: %d nodes x %d GPUs = %d ranks, %d x %s Gb/s NICs per node = %s GB/s per node (%s intra-node)\n",
		pp.Nodes, pp.GPUsPerNode, res.NRanks, pp.NICsPerNode, textout.G(pp.LinkGbps), textout.G(res.NodeBusBwGBps), pp.Intra)
	fmt.Fprintf(w, "ring: latency %.1f us, algBw %.1f GB/s   tree: latency %.1f us, algBw %.1f GB/s\n",
		res.Ring.LatencyUs, res.Ring.AlgBwGBps, res.Tree.LatencyUs, res.Tree.AlgBwGBps)
	switch {
	case res.CrossoverBytes == nil:
		fmt.Fprintln(w, "crossover: none, tree is faster at every size")
	case *res.CrossoverBytes == 0:
		fmt.Fprintln(w, "crossover: none, ring is faster at every size")
	default:
		fmt.Fprintf(w, "crossover: ring is faster from %d bytes (%.1f MiB) on, tree below\n", *res.CrossoverBytes, float64(*res.CrossoverBytes)/(1<<20))
	}
	fmt.Fprintln(w)
	rows := make([][]string, 0, len(res.Rows))
	for _, r := range res.Rows {
		rec := []string{textout.Size(r.Size)}
		for _, pt := range []*ModelPoint{r.Ring, r.Tree} {
			if pt == nil {
				rec = append(rec, "-", "-", "-")
				continue
			}
			rec = append(rec, fmt.Sprintf("%.1f", pt.TimeUs), fmt.Sprintf("%.2f", pt.Algbw), fmt.Sprintf("%.2f", pt.Busbw))
		}
		rec = append(rec, r.Best)
		rows = append(rows, rec)
	}
	textout.Table(w, tty, []string{"SIZE", "RING TIME(us)", "RING ALGBW", "RING BUSBW", "TREE TIME(us)", "TREE ALGBW", "TREE BUSBW", "BEST"}, rows)
	_, err := fmt.Fprintln(w, "\n(GB/s; Simple protocol only: small-message times are pessimistic)")
	return err
}
