package mpilauncher

import (
	"bufio"
	"fmt"
	"io"
	"strings"

	"github.com/ain-hpc/ain/pkg/next"
)

// WriteText writes the launcher log's verdict, the hosts it names, its evidence and the fix
// (fix words it with its suggested commands).
func (r *Report) WriteText(w io.Writer, fix func(string, []next.Command) string) {
	status := "OK"
	if !r.OK() {
		status = "PROBLEM"
	}
	fmt.Fprintf(w, "%s: %s", status, r.Verdict)
	switch r.Verdict {
	case VerdictLauncherBeforeWorkers:
		fmt.Fprint(w, ": launcher started before workers were ready")
	case VerdictConfigError:
		fmt.Fprint(w, ": the host:slots syntax reached ssh as a host name")
	case VerdictSSHThrottled:
		fmt.Fprint(w, ": sshd on a worker throttled the launcher's connections")
	case VerdictWorkerLost:
		fmt.Fprint(w, ": a worker died mid-job, after the launch succeeded")
	case VerdictHealthy:
		// Any text without a failure signature is healthy: say what was read, so that a wrong
		// file is not taken for a good launch.
		fmt.Fprintf(w, ": no launcher failure in %d line(s)", r.Lines)
	case VerdictEmpty, VerdictNotText, VerdictNotLauncher:
		fmt.Fprint(w, ": no launcher log to judge")
	}
	if len(r.Hosts) > 0 {
		what := "unreachable"
		if r.Verdict == VerdictWorkerLost {
			what = "lost"
		}
		fmt.Fprintf(w, " (%s: %s)", what, strings.Join(r.Hosts, ", "))
	}
	fmt.Fprintln(w)
	if len(r.Evidence) > 0 {
		fmt.Fprintln(w, "\nevidence:")
		for _, e := range r.Evidence {
			fmt.Fprintf(w, "  line %d [%s]: %s\n", e.Line, e.Kind, e.Text)
		}
	}
	if r.Fix != "" {
		fmt.Fprintf(w, "\nfix: %s\n", fix(r.Fix, r.Next))
	}
}

// GateReport is the launcher-before-workers verdict of a worker gate that gave up, from its log
// (at most 1 MiB read): the lines starting with prefix are its evidence.
func GateReport(log io.Reader, prefix, fix string) *Report {
	r := &Report{Verdict: VerdictLauncherBeforeWorkers, Fix: fix}
	sc := bufio.NewScanner(io.LimitReader(log, 1<<20))
	n := 0
	for sc.Scan() {
		n++
		if strings.Contains(sc.Text(), prefix) {
			r.Evidence = append(r.Evidence, Evidence{Line: n, Kind: "worker-gate", Text: sc.Text()})
		}
	}
	r.Lines = n
	return r
}
