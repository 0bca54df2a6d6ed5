package hang

import (
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/ain-hpc/ain/pkg/nccl"
	"github.com/ain-hpc/ain/pkg/next"
)

func ranksText(rs []int) string {
	if len(rs) == 0 {
		return "-"
	}
	parts := make([]string, len(rs))
	for i, k := range rs {
		parts[i] = strconv.Itoa(k)
	}
	return strings.Join(parts, ",")
}

// WriteText writes the verdict, the collective, the stuck, ahead and missing ranks, the evidence
// and the fix (fix words it with its suggested commands).
func (r *Report) WriteText(w io.Writer, fix func(string, []next.Command) string) {
	status := "OK"
	if !r.OK() {
		status = "PROBLEM"
	}
	// RAS's Errors section alone does not say how many ranks the job has: print no "0 ranks".
	ranks := "ranks unknown"
	if r.NRanks > 0 {
		ranks = fmt.Sprintf("%d ranks", r.NRanks)
	}
	fmt.Fprintf(w, "%s: %s (%s, %s)\n", status, r.Status, r.Format, ranks)
	if r.Collective != "" {
		fmt.Fprintf(w, "collective: %s\n", r.Collective)
	}
	fmt.Fprintf(w, "stuck (did not enter it): %s   ahead (wait in it): %s   missing (no data): %s\n",
		ranksText(r.StuckRanks), ranksText(r.AheadRanks), ranksText(r.MissingRanks))
	if len(r.Evidence) > 0 {
		fmt.Fprintln(w, "\nevidence:")
		for _, e := range r.Evidence {
			switch {
			case e.File != "" && e.Line > 0:
				fmt.Fprintf(w, "  %s: %s\n", nccl.EvidenceRef(e.File, e.Line), e.Text)
			case e.File != "":
				fmt.Fprintf(w, "  %s: %s\n", e.File, e.Text)
			default:
				fmt.Fprintf(w, "  %s\n", e.Text)
			}
		}
	}
	if r.Fix != "" {
		fmt.Fprintf(w, "\nfix: %s\n", fix(r.Fix, r.Next))
	}
}
