package trainlog

import (
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/ain-hpc/ain/pkg/textout"
)

// Passed says whether the run matches its archive or does better.
func (c *Comparison) Passed() bool {
	return c.Verdict == VerdictMatches || c.Verdict == VerdictBetter
}

// WriteText writes the verdict, the two runs side by side and their losses at up to ~20
// common steps; tty draws bordered tables.
func (c *Comparison) WriteText(w io.Writer, tty bool) {
	status := "OK"
	if !c.Passed() {
		status = "PROBLEM"
	}
	fmt.Fprintf(w, "%s: %s: %s\n", status, c.Verdict, strings.Join(c.Reasons, "; "))
	fmt.Fprintln(w)
	textout.Table(w, tty, []string{"", "RUN", "ARCHIVE"}, [][]string{
		{"file", c.Run.Name, c.Archive.Name},
		{"format (steps from)", c.Run.Format + " (" + c.Run.StepSource + ")", c.Archive.Format + " (" + c.Archive.StepSource + ")"},
		{"loss entries", strconv.Itoa(len(c.Run.Entries)), strconv.Itoa(len(c.Archive.Entries))},
		{"last " + c.Axis, lastStep(c.Run), lastStep(c.Archive)},
		{"train_loss", summaryField(c.Run, "loss"), summaryField(c.Archive, "loss")},
		{"train_runtime (s)", summaryField(c.Run, "runtime"), summaryField(c.Archive, "runtime")},
		{"samples/s", summaryField(c.Run, "samples"), summaryField(c.Archive, "samples")},
	})
	if len(c.Points) > 0 {
		fmt.Fprintln(w)
		// At most ~20 rows: every k-th common step, always the last.
		k := (len(c.Points) + 19) / 20
		var rows [][]string
		for i, p := range c.Points {
			if i%k != 0 && i != len(c.Points)-1 {
				continue
			}
			arch := fmt.Sprintf("%.4f", p.ArchLoss)
			if p.Interpoled {
				arch += "*"
			}
			rows = append(rows, []string{textout.G(p.Step), fmt.Sprintf("%.4f", p.RunLoss), arch, fmt.Sprintf("%+.1f%%", 100*p.RelDiff), numOrDash(p.RunLR), numOrDash(p.ArchLR)})
		}
		textout.Table(w, tty, []string{strings.ToUpper(c.Axis), "RUN LOSS", "ARCHIVE LOSS", "DIFF", "RUN LR", "ARCHIVE LR"}, rows)
		fmt.Fprintln(w, "(* interpolated between the archive's nearest steps)")
	}
	for _, n := range c.Notes {
		fmt.Fprintf(w, "note: %s\n", n)
	}
}

func lastStep(r *Run) string {
	if len(r.Entries) == 0 {
		return "-"
	}
	return textout.G(r.Entries[len(r.Entries)-1].Step)
}

func numOrDash(n *Num) string {
	if n == nil {
		return "-"
	}
	return strconv.FormatFloat(float64(*n), 'g', 4, 64)
}

func summaryField(r *Run, f string) string {
	if r.Summary == nil {
		return "-"
	}
	switch f {
	case "loss":
		return numOrDash(r.Summary.TrainLoss)
	case "runtime":
		return numOrDash(r.Summary.Runtime)
	}
	return numOrDash(r.Summary.SamplesPerSecond)
}
