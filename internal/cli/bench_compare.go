package cli

import (
	"encoding/csv"
	"fmt"
	"strconv"

	ucli "github.com/urfave/cli/v2"

	"github.com/ain-hpc/ain/internal/ainerr"
	"github.com/ain-hpc/ain/pkg/bench"
)

// benchCompareOptions are the flags of `ain bench compare`.
type benchCompareOptions struct {
	Output string
	Files  []string
}

func (a *App) benchCompareCommand() *ucli.Command {
	o := &benchCompareOptions{}
	return &ucli.Command{
		Name:      "compare",
		Usage:     "put saved `ain bench allreduce` runs side by side: busbw per size and its ratio to the first",
		ArgsUsage: "RESULT.json|DIR RESULT.json|DIR ...",
		Description: "Every variant of every file is a column; the first one is the baseline, and each other column gets its\n" +
			"busbw divided by the baseline's at the same size (1.25 = 25% faster). A single file with several variants\n" +
			"(--algo all) compares its variants.\n\n" +
			"Examples:\n  ain bench compare results/ring.json results/tree.json\n  ain bench compare ain-results/*-ib ain-results/*-socket -o csv",
		Flags: []ucli.Flag{outputFlag(&o.Output, "text", "text, json or csv", "json", "csv")},
		Action: func(c *ucli.Context) error {
			o.Files = c.Args().Slice()
			return a.runBenchCompare(o)
		},
	}
}

// loadBenchResults reads saved results; problems are usage errors naming the file.
func loadBenchResults(files []string) ([]*bench.Result, error) {
	var out []*bench.Result
	for _, f := range files {
		r, err := bench.Load(f)
		if err != nil {
			return nil, ainerr.New(ainerr.Usage, err, "give result.json files (or their folders) written by `ain bench allreduce`")
		}
		out = append(out, r)
	}
	return out, nil
}

func (a *App) runBenchCompare(o *benchCompareOptions) error {
	switch o.Output {
	case "text", "json", "csv":
	default:
		return ainerr.Usagef("-o must be text, json or csv, got %q", o.Output)
	}
	if len(o.Files) == 0 {
		return ainerr.Usagef("give two or more saved results (result.json or their folders), or one with several variants")
	}
	results, err := loadBenchResults(o.Files)
	if err != nil {
		return err
	}
	cmp, err := bench.Compare(bench.SeriesOf(results, o.Files))
	if err != nil {
		return ainerr.Usagef("%v", err)
	}
	switch o.Output {
	case "json":
		return a.writeJSON(cmp)
	case "csv":
		cw := csv.NewWriter(a.Streams.Out)
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
	w := a.Streams.Out
	fmt.Fprintf(w, "baseline: %s; X/%s = X's busbw over the baseline's at the same size (from the times: nccl-tests rounds busbw)\n", cmp.Baseline, cmp.Baseline)
	for _, s := range cmp.Series {
		valid := ""
		if !s.Valid {
			valid = "  INVALID (see its result.json)"
		}
		fmt.Fprintf(w, "  %-20s %s, fabric %s, run %s%s\n", s.Label, orDash(s.Source), s.Fabric, s.Run, valid)
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
		rec := []string{bench.SizeLabel(r.Size)}
		for i := range cmp.Series {
			rec = append(rec, orDash(fptr(r.Busbw[i], 'f', -1)))
			if i > 0 {
				rec = append(rec, orDash(fptr(r.Ratio[i], 'f', 2)))
			}
		}
		rows = append(rows, rec)
	}
	peak := []string{"PEAK"}
	for i := range cmp.Series {
		peak = append(peak, fmtG(cmp.Peaks[i]))
		if i > 0 {
			peak = append(peak, orDash(fptr(cmp.PeakRatio[i], 'f', 2)))
		}
	}
	rows = append(rows, peak)
	a.table(head, rows)
	fmt.Fprintln(w, "(busbw in GB/s, out-of-place)")
	return nil
}

func fptr(v *float64, f byte, prec int) string {
	if v == nil {
		return ""
	}
	return strconv.FormatFloat(*v, f, prec, 64)
}
