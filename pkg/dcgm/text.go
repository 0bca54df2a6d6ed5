package dcgm

import (
	"fmt"
	"io"
	"strings"

	"github.com/ain-hpc/ain/pkg/next"
	"github.com/ain-hpc/ain/pkg/textout"
)

// WriteText writes the verdict, a row per GPU (tty: a bordered table; - where the page has no
// value) and each problem with its fix (fix words it with its suggested commands).
func (r *Report) WriteText(w io.Writer, tty bool, fix func(string, []next.Command) string) {
	fmt.Fprintf(w, "%s: %s\n\n", map[bool]string{true: "OK", false: "PROBLEM"}[r.OK], r.Summary)
	rows := make([][]string, len(r.GPUs))
	for i := range r.GPUs {
		rows[i] = gpuRow(&r.GPUs[i])
	}
	textout.Table(w, tty, []string{"HOST", "GPU", "POD", "UTIL", "SM", "TENSOR", "FB USED/FREE GiB", "POWER", "TEMP", "CLOCK EVENTS", "XID", "NVLINK TX/RX GB/s", "PCIE TX/RX GB/s"}, rows)
	if len(r.Problems) > 0 {
		fmt.Fprintln(w, "\nproblems:")
	}
	for _, p := range r.Problems {
		fmt.Fprintf(w, "  %s %s: %s\n    fix: %s\n", strings.ToUpper(p.Severity), p.GPU, p.What, fix(p.Fix, p.Next))
	}
}

// gpuRow is a GPU's line in the table; - for what the page does not have.
func gpuRow(g *GPU) []string {
	id := g.GPU
	if g.MIGID != "" {
		id += "/" + g.MIGID
	}
	fb, clocks, xid := "-", "-", "-"
	if g.FBUsedMiB != nil && g.FBFreeMiB != nil {
		fb = fmt.Sprintf("%.1f/%.1f", *g.FBUsedMiB/1024, *g.FBFreeMiB/1024)
	}
	if len(g.ClockReasons) > 0 {
		clocks = strings.Join(g.ClockReasons, ",")
	}
	if g.XID != nil {
		xid = fmt.Sprint(*g.XID)
	}
	return []string{textout.OrDash(g.Host), id, textout.OrDash(g.PodName()),
		num(g.UtilPct, 1, "%.0f%%"), num(g.SMActive, 100, "%.0f%%"), num(g.TensorActive, 100, "%.0f%%"), fb,
		num(g.PowerW, 1, "%.0f W"), num(g.TempC, 1, "%.0f C"), clocks, xid,
		pair(g.NVLinkTxBps, g.NVLinkRxBps), pair(g.PCIeTxBps, g.PCIeRxBps)}
}

// num prints v*scale with format, or - when absent.
func num(v *float64, scale float64, format string) string {
	if v == nil {
		return "-"
	}
	return fmt.Sprintf(format, *v*scale)
}

// pair prints two byte rates in GB/s as TX/RX.
func pair(tx, rx *float64) string {
	if tx == nil && rx == nil {
		return "-"
	}
	return num(tx, 1e-9, "%.1f") + "/" + num(rx, 1e-9, "%.1f")
}
