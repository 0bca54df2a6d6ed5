package preflight

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/ain-hpc/ain/pkg/next"
	"github.com/ain-hpc/ain/pkg/textout"
)

// TextOptions shape a result's text.
type TextOptions struct {
	TTY bool
	// Brief (the gate before a job): only the non-PASS checks and the summary, no table.
	Brief bool
	// Fix words a check's fix with its suggested commands.
	Fix func(string, []next.Command) string
}

// WriteText writes the result: the table of every check (unless Brief), each non-PASS check's
// evidence and fix, and the summary line.
func (res *Result) WriteText(w io.Writer, o TextOptions) {
	if !o.Brief {
		rows := make([][]string, 0, len(res.Checks))
		for _, c := range res.Checks {
			rows = append(rows, []string{strings.ToUpper(c.Name), textout.OrDash(c.Target), string(c.Status), c.Message})
		}
		textout.Table(w, o.TTY, []string{"CHECK", "TARGET", "STATUS", "MESSAGE"}, rows)
	}
	for _, c := range res.Checks {
		if c.Status == Pass {
			continue
		}
		fmt.Fprintf(w, "\n%s %s", c.Status, c.Name)
		if c.Target != "" {
			fmt.Fprintf(w, " %s", c.Target)
		}
		fmt.Fprintf(w, ": %s\n", c.Message)
		for _, e := range c.Evidence {
			fmt.Fprintf(w, "  evidence: %s\n", e)
		}
		if c.Fix != "" {
			fmt.Fprintf(w, "  fix: %s\n", o.Fix(c.Fix, c.Next))
		}
	}
	when := "in " + res.Duration.Round(100*time.Millisecond).String()
	if res.Cached {
		// A gate's cached result: only the job-controller checks were run now.
		when = "- the job controllers checked now, the rest cached from the run at " + res.StartedAt.Local().Format("15:04:05")
	}
	fmt.Fprintf(w, "\npreflight: %s %s (namespace %s, profile %s, fabric %s, %d node(s) probed)\n",
		res.Summary(), when, res.Namespace, res.Profile, res.Fabric, res.Probed)
}
