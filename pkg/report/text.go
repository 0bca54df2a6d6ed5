package report

import (
	"fmt"
	"io"
	"sort"
	"strconv"
	"text/tabwriter"

	"github.com/ain-hpc/ain/pkg/counters"
)

func sortStrings(s []string) { sort.Strings(s) }

// WriteText writes the report as a table by path, then the comparisons, disagreements, what
// is missing (with measureHint wording how to measure it) and the files skipped.
func (r *Report) WriteText(w io.Writer, measureHint func(Missing) string) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "PATH\tMEASURE\tVALUE\tAGAINST\tSOURCE")
	for _, row := range r.Rows {
		against := row.Against
		if row.Pct != nil {
			against = fmt.Sprintf("%.0f%% of %s", *row.Pct, against)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", row.Path, row.Measure, value(row), orDash(against), row.Source)
		if row.Detail != "" {
			fmt.Fprintf(tw, "\t  %s\t\t\t\n", row.Detail)
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, c := range r.Comparisons {
		fmt.Fprintf(w, "compare: %s\n", c)
	}
	for _, d := range r.Disagreements {
		fmt.Fprintf(w, "DISAGREE: %s\n", d)
	}
	for _, m := range r.Missing {
		fmt.Fprintf(w, "missing %s: %s\n", m.Path, measureHint(m))
	}
	for _, s := range r.Skipped {
		fmt.Fprintf(w, "skipped %s\n", s)
	}
	return nil
}

func value(row Row) string {
	if row.Unit == "B" {
		return counters.HumanBytes(uint64(row.Value))
	}
	return strconv.FormatFloat(row.Value, 'g', 4, 64) + " " + row.Unit
}
