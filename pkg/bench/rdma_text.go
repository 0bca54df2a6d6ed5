package bench

import (
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/ain-hpc/ain/pkg/textout"
)

// WriteText writes the course table (10.6.1: line rate, two-node RDMA, the TCP baseline and
// NCCL's busbw, each as a share of the link) and the verdict; tty: a bordered table.
func (r *RDMAResult) WriteText(w io.Writer, tty bool) {
	fmt.Fprintf(w, "%s: %s (server) <- %s (client), device %s, %d QP(s), RoCE GID index %s, server address %s (%s)\n",
		r.Test, r.Server, r.Client, textout.OrDash(r.Device), r.QPs, GIDText(r.GIDIndex, r.Fabric), textout.OrDash(r.ServerIP), textout.OrDash(r.IPSource))
	if r.GIDIndexSource != "" {
		fmt.Fprintf(w, "GID index: %s\n", r.GIDIndexSource)
	}
	fmt.Fprintln(w)
	gb := func(g float64) (string, string) {
		return strconv.FormatFloat(round2(g), 'f', -1, 64), strconv.FormatFloat(round2(g/8), 'f', -1, 64)
	}
	pct := func(v float64, of float64) string {
		if of <= 0 {
			return "-"
		}
		return fmt.Sprintf("%.1f%%", v/of*100)
	}
	var rows [][]string
	g, b := gb(r.ProfileGbps)
	rows = append(rows, []string{"line rate (profile)", "spec.lineRate " + r.ProfileLineRate, g, b, "-"})
	if r.ProbedGbps > 0 {
		var ev []string
		for _, p := range r.Ports {
			if p.Active && (r.Device == "" || strings.HasPrefix(p.Port, r.Device+":")) {
				ev = append(ev, p.Node+" "+p.Port+" "+p.Rate)
			}
		}
		g, b := gb(r.ProbedGbps)
		rows = append(rows, []string{"line rate (ports)", strings.Join(ev, "; "), g, b, pct(r.ProbedGbps, r.ExpectedGbps)})
	} else {
		rows = append(rows, []string{"line rate (ports)", "not probed", "-", "-", "-"})
	}
	switch {
	case r.RDMAGbps != nil:
		g, b := gb(*r.RDMAGbps)
		rows = append(rows, []string{"two-node RDMA (this run)", fmt.Sprintf("%s best at %s, %d QP(s)", r.Test, SizeLabel(r.RDMABytes), r.QPs), g, b, pct(*r.RDMAGbps, r.ExpectedGbps)})
	case r.TypicalUs != nil:
		rows = append(rows, []string{"two-node RDMA (this run)", fmt.Sprintf("%s: %.2f us typical at %d B", r.Test, *r.TypicalUs, r.RDMABytes), "-", "-", "-"})
	default:
		rows = append(rows, []string{"two-node RDMA (this run)", "no result", "-", "-", "-"})
	}
	switch t := r.TCP; {
	case t != nil:
		g, b := gb(t.Gbps)
		src := fmt.Sprintf("iperf3, %d TCP streams, %d s", t.Streams, t.Seconds)
		if t.Retransmits != nil {
			src += fmt.Sprintf(", %d retransmits", *t.Retransmits)
		}
		if t.CPUClient != nil && t.CPUServer != nil {
			src += fmt.Sprintf(", CPU %.0f%%/%.0f%% (client/server)", *t.CPUClient, *t.CPUServer)
		}
		rows = append(rows, []string{"TCP baseline (this run)", src, g, b, pct(t.Gbps, r.ExpectedGbps)})
	case r.TCPNote != "":
		rows = append(rows, []string{"TCP baseline", r.TCPNote, "-", "-", "-"})
	}
	if n := r.NCCL; n != nil {
		g, b := gb(n.BusbwGbps)
		of := r.ExpectedGbps * float64(max(n.NICsPerNode, 1))
		src := fmt.Sprintf("all_reduce_perf %s peak at %s, %d ranks (%s)", n.Variant, SizeLabel(n.Size), n.Ranks, n.Path)
		if !n.Valid {
			src += ", INVALID result"
		}
		rows = append(rows, []string{fmt.Sprintf("%d-node NCCL busbw", n.Nodes), src, g, b, pct(n.BusbwGbps, of)})
	} else {
		rows = append(rows, []string{"NCCL busbw", r.NCCLNote, "-", "-", "-"})
	}
	textout.Table(w, tty, []string{"COURSE 10.6.1", "SOURCE", "Gb/s", "GB/s", "% OF LINK"}, rows)
	fmt.Fprintf(w, "\n%% of link: of %s Gb/s, the rate the link should run at (%s)", strconv.FormatFloat(round2(r.ExpectedGbps), 'f', -1, 64), r.ExpectedSource)
	if r.NCCL != nil && r.NCCL.NICsPerNode > 1 {
		fmt.Fprintf(w, "; NCCL busbw is spread over %d NICs per node", r.NCCL.NICsPerNode)
	}
	fmt.Fprintln(w)
	if r.LineRateNote != "" {
		fmt.Fprintf(w, "%s\n", r.LineRateNote)
	}
	for _, n := range r.Notes {
		fmt.Fprintf(w, "note: %s\n", n)
	}
	fmt.Fprintf(w, "\n%s\n", r.Verdict)
}

func round2(v float64) float64 { return float64(int64(v*100+0.5)) / 100 }
