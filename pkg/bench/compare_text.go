package bench

import (
	"encoding/csv"
	"fmt"
	"io"
	"strconv"

	"github.com/ain-hpc/ain/pkg/textout"
)

// WriteCSV writes one row per size: every series' busbw and, after the first, its ratio to it.
func (cmp *Comparison) WriteCSV(w io.Writer) error {
	cw := csv.NewWriter(w)
	head := []string{"size"}
	for i, s := range cmp.Series {
		head = append(head, s.Label+"_busbw")
		if i > 0 {
			head = append(head, s.Label+"_ratio")
		}
	}
	_ = cw.Write(head)
	for _, r := range cmp.Rows {
		rec := []string{strconv.FormatInt(r.Size, 10)}
		for i := range cmp.Series {
			rec = append(rec, fptr(r.Busbw[i], 'f', -1))
			if i > 0 {
				rec = append(rec, fptr(r.Ratio[i], 'f', 4))
			}
		}
		_ = cw.Write(rec)
	}
	cw.Flush()
	return cw.Error()
}

// WriteText writes the series, then the busbw per size with each series' ratio to the
// baseline and the peaks (a bordered table when tty).
func (cmp *Comparison) WriteText(w io.Writer, tty bool) error {
	fmt.Fprintf(w, "baseline: %s; X/%s = X's busbw over the baseline's at the same size (from the times: nccl-tests rounds busbw)\n", cmp.Baseline, cmp.Baseline)
	for _, s := range cmp.Series {
		valid := ""
		if !s.Valid {
			valid = "  INVALID (see its result.json)"
		}
		fmt.Fprintf(w, "  %-20s %s, fabric %s, run %s%s\n", s.Label, textout.OrDash(s.Source), s.Fabric, s.Run, valid)
	}
	fmt.Fprintln(w)
	head := []string{"SIZE"}
	for i, s := range cmp.Series {
		head = append(head, s.Label)
		if i > 0 {
			head = append(head, s.Label+"/"+cmp.Baseline)
		}
	}
	rows := [][]string{}
	for _, r := range cmp.Rows {
		rec := []string{SizeLabel(r.Size)}
		for i := range cmp.Series {
			rec = append(rec, textout.OrDash(fptr(r.Busbw[i], 'f', -1)))
			if i > 0 {
				rec = append(rec, textout.OrDash(fptr(r.Ratio[i], 'f', 2)))
			}
		}
		rows = append(rows, rec)
	}
	peak := []string{"PEAK"}
	for i := range cmp.Series {
		peak = append(peak, textout.G(cmp.Peaks[i]))
		if i > 0 {
			peak = append(peak, textout.OrDash(fptr(cmp.PeakRatio[i], 'f', 2)))
		}
	}
	rows = append(rows, peak)
	textout.Table(w, tty, head, rows)
	_, err := fmt.Fprintln(w, "(busbw in GB/s, out-of-place)")
	return err
}

func fptr(v *float64, f byte, prec int) string {
	if v == nil {
		return ""
	}
	return strconv.FormatFloat(*v, f, prec, 64)
}
