package jobs

import (
	"fmt"
	"io"
	"strings"
	"time"

	"k8s.io/client-go/discovery"

	"github.com/ain-hpc/ain/pkg/mpilauncher"
	"github.com/ain-hpc/ain/pkg/nccl"
	"github.com/ain-hpc/ain/pkg/next"
	"github.com/ain-hpc/ain/pkg/textout"
)

// TextOptions are a terminal's choices for the text printers: bordered tables, and how a fix
// reads with the commands it suggests (the caller words commands; nil: the fix alone).
type TextOptions struct {
	TTY bool
	Fix func(fix string, cmds []next.Command) string
}

func (o TextOptions) fix(text string, cmds []next.Command) string {
	if o.Fix == nil {
		return text
	}
	return o.Fix(text, cmds)
}

// Age is a duration as kubectl shows ages: 42s, 7m, 5h, 3d.
func Age(d time.Duration) string {
	switch {
	case d < 0:
		return "0s"
	case d < 2*time.Minute:
		return fmt.Sprintf("%ds", int(d.Seconds()))
	case d < 2*time.Hour:
		return fmt.Sprintf("%dm", int(d.Minutes()))
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh", int(d.Hours()))
	}
	return fmt.Sprintf("%dd", int(d.Hours()/24))
}

// Clock is an elapsed time as a stopwatch shows it: 01:05, 1:02:03.
func Clock(d time.Duration) string {
	d = d.Round(time.Second)
	h, m, s := int(d.Hours()), int(d.Minutes())%60, int(d.Seconds())%60
	if h > 0 {
		return fmt.Sprintf("%d:%02d:%02d", h, m, s)
	}
	return fmt.Sprintf("%02d:%02d", m, s)
}

// ReplicaLabel is "master-0", "worker-1", or "launcher" (which has no index).
func ReplicaLabel(p PodInfo) string {
	if p.Index < 0 {
		return p.Replica
	}
	return fmt.Sprintf("%s-%d", p.Replica, p.Index)
}

// ResultCell is a rank's RESULT cell: its exit code once its container ended, else its phase. A
// pod still Running or Pending when the job has ended says so: the operator decides a PyTorchJob's
// success by its master alone, and a worker may still be finishing (or be stopped by the
// cleanPodPolicy), which a bare "Running" under "Succeeded" left unexplained.
func ResultCell(jobPhase string, p PodInfo) string {
	if p.ExitCode != nil {
		return fmt.Sprintf("exit %d", *p.ExitCode)
	}
	if Terminal(jobPhase) {
		switch p.Phase {
		case "Running":
			return "still running at job end"
		case "Pending":
			return "never started (job ended)"
		}
	}
	return p.Phase
}

// DescribeTransport words an NCCL transport for a person.
func DescribeTransport(t string) string {
	switch t {
	case nccl.TransportIB:
		return "ib (InfiniBand verbs)"
	case nccl.TransportRoCE:
		return "roce (RDMA over Converged Ethernet)"
	case nccl.TransportSocket:
		return "socket (TCP): the RDMA fabric was NOT used"
	case nccl.TransportNone:
		return "none (no network: single node, P2P/SHM only)"
	case "mixed":
		return "mixed: ranks used different transports"
	}
	return t
}

// WriteText writes the end-of-run summary: the job's outcome, a row per rank, NCCL's verdict and
// its problems, and for a failed job the launcher's verdict and the failed ranks' last lines.
func (s *Summary) WriteText(w io.Writer, o TextOptions) {
	dur := ""
	if s.Duration > 0 {
		dur = " in " + s.Duration.Round(time.Second).String()
	}
	fmt.Fprintf(w, "\n%s %s/%s %s%s\n", s.Kind, s.Namespace, s.Name, s.Phase, dur)
	if s.Message != "" && s.Phase == PhaseFailed {
		fmt.Fprintf(w, "  %s\n", s.Message)
	}
	rows := [][]string{}
	for _, r := range s.Ranks {
		gdr := "-"
		if r.GDR != nil {
			gdr = map[bool]string{true: "yes", false: "no"}[*r.GDR]
		}
		t := r.Transport
		if t == "" {
			t = "-"
		}
		rows = append(rows, []string{ReplicaLabel(r.PodInfo), r.Name, r.Node, ResultCell(s.Phase, r.PodInfo), t, gdr, strings.Join(r.Devices, ",")})
	}
	textout.Table(w, o.TTY, []string{"REPLICA", "POD", "NODE", "RESULT", "TRANSPORT", "GDR", "DEVICES"}, rows)
	switch {
	case s.Transport == "":
		fmt.Fprintln(w, "NCCL: no transport lines in the logs (set NCCL_DEBUG=INFO, as ain does by default, to verify the fabric)")
	case len(s.Problems) == 0:
		fmt.Fprintf(w, "NCCL: every rank used %s\n", DescribeTransport(s.Transport))
	default:
		fmt.Fprintf(w, "NCCL: %s\n", DescribeTransport(s.Transport))
	}
	for _, p := range s.Problems {
		fmt.Fprintf(w, "  problem: %s\n", p.Message)
		for _, e := range p.Lines {
			fmt.Fprintf(w, "    %s:%d: %s\n", e.File, e.Line, e.Text)
		}
		if p.Fix != "" {
			fmt.Fprintf(w, "    fix: %s\n", o.fix(p.Fix, p.Next))
		}
	}
	if s.Phase == PhaseFailed {
		s.writeFailures(w)
	}
}

func (s *Summary) writeFailures(w io.Writer) {
	for _, r := range s.Ranks {
		if r.Replica != "launcher" {
			continue
		}
		// Failure 1 of the course (10.7.1): mpirun started before its workers were ready.
		if rep := r.Launcher; rep != nil && rep.Verdict == mpilauncher.VerdictLauncherBeforeWorkers {
			fmt.Fprintf(w, "\nlauncher started before workers were ready (%s):\n", strings.Join(rep.Hosts, ", "))
			for _, e := range rep.Evidence {
				fmt.Fprintf(w, "  | %s\n", e.Text)
			}
			fmt.Fprintf(w, "  fix: %s\n", rep.Fix)
		}
	}
	for _, r := range s.Ranks {
		if failed := r.Phase == "Failed" || (r.ExitCode != nil && *r.ExitCode != 0); !failed {
			continue
		}
		fmt.Fprintf(w, "\n%s (%s on %s) failed; its last %d lines:\n", r.Name, r.State, r.Node, len(r.LastLines))
		for _, l := range r.LastLines {
			fmt.Fprintf(w, "  | %s\n", l)
		}
	}
}

// PendingReasons explains, one indented line each, why a job is not running: its pods' reasons,
// what it waits for, a gang note (gangs: GangSchedulers), or that it has no pods at all.
func PendingReasons(s Snapshot, gangs []string) string {
	var lines []string
	for _, p := range s.Pods {
		if p.Why != "" {
			lines = append(lines, fmt.Sprintf("  %s: %s", p.Name, p.Why))
		}
	}
	if s.Waiting != "" {
		lines = append(lines, "  "+s.Waiting)
	}
	if note := GangNote(s, gangs); note != "" {
		lines = append(lines, "  "+note)
	}
	if len(s.Pods) == 0 {
		if s.Message != "" && strings.HasPrefix(s.Message, "no pods: ") {
			lines = append(lines, "  "+s.Message)
		} else if s.Phase == PhasePending {
			lines = append(lines, "  no pods yet: is the job's controller running? (ain preflight checks which job APIs the cluster serves)")
		}
	}
	return strings.Join(lines, "\n")
}

// GangSchedulers names the gang schedulers the cluster serves (none when d is nil or discovery
// fails: the gang note is advice, not worth failing a command for).
func GangSchedulers(d discovery.ServerGroupsInterface) []string {
	if d == nil {
		return nil
	}
	groups, err := d.ServerGroups()
	if err != nil {
		return nil
	}
	names := make([]string, 0, len(groups.Groups))
	for _, g := range groups.Groups {
		names = append(names, g.Name)
	}
	return GangAPIs(names)
}
