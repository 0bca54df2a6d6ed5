package preflight

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
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
	// Rerun, after a cached gate result, says how to run the checks again.
	Rerun string
}

// WriteText writes the gate's result: the one-line summary of a cached result, else the result
// (Brief, as o says).
func (g *GateResult) WriteText(w io.Writer, o TextOptions) {
	if !g.Cached {
		g.Result.WriteText(w, o)
		return
	}
	now := ""
	if g.Rechecked {
		now = ", the job controllers checked now"
	}
	fmt.Fprintf(w, "preflight: %s (cached %s ago%s; %s)\n", g.Summary(), g.Age.Round(time.Second), now, o.Rerun)
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

// WritePortCauseHeading says, before the probe, that the IB ports of nodes, those a job that fell
// back to sockets ran on, are probed: a port that is not ACTIVE is skipped by NCCL silently and
// shows in its log only as the fallback.
func WritePortCauseHeading(w io.Writer, nodes []string) {
	fmt.Fprintf(w, "\nIB ports of the job's nodes (%s), probed now: a port not ACTIVE is skipped by NCCL silently\n", strings.Join(nodes, ", "))
}

// WritePortCause writes ProbeIBPorts' checks under WritePortCauseHeading.
func WritePortCause(w io.Writer, checks []Check, fix func(string, []next.Command) string) {
	bad := 0
	for _, c := range checks {
		if c.Status == Pass {
			fmt.Fprintf(w, "  ok: %s\n", c.Message)
			continue
		}
		bad++
		fmt.Fprintf(w, "  cause [%s] %s: %s\n", c.Status, c.Target, c.Message)
		for _, e := range c.Evidence {
			fmt.Fprintf(w, "    evidence: %s\n", e)
		}
		if c.Fix != "" {
			fmt.Fprintf(w, "    fix: %s\n", fix(c.Fix, c.Next))
		}
	}
	if bad == 0 {
		fmt.Fprintln(w, "  the port state is not the cause: look at the other causes above (RDMA resource, IPC_LOCK, NCCL_IB_HCA, libibverbs)")
	}
}

// SaveJSON writes the result to file as indented JSON, what -o json prints; file "" writes nothing.
func (res *Result) SaveJSON(file string) error {
	if file == "" {
		return nil
	}
	b, err := json.MarshalIndent(res, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(file, append(b, '\n'), 0o644)
}
