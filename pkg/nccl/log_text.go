package nccl

import (
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/ain-hpc/ain/pkg/next"
	"github.com/ain-hpc/ain/pkg/textout"
)

// EvidenceRef is how reports point at an evidence line: FILE:LINE, or "line N" for one input.
func EvidenceRef(file string, line int) string {
	if file == "" {
		return "line " + strconv.Itoa(line)
	}
	return file + ":" + strconv.Itoa(line)
}

// WriteText writes the verdict, the transport, the evidence lines, the problems and warnings
// with their fixes (fix words a fix with its suggested commands), the per-rank table, NCCL's
// algorithm/protocol choices and the NCCL_* variables the log shows set (tty: bordered tables).
func (r *LogReport) WriteText(w io.Writer, tty bool, fix func(string, []next.Command) string) {
	status := "OK"
	if !r.OK() {
		status = "PROBLEM"
	}
	fmt.Fprintf(w, "%s: %s\n", status, r.Verdict())
	gdr := "unknown"
	if r.GDR != nil {
		gdr = strconv.FormatBool(*r.GDR)
	}
	devs := "-"
	if len(r.Devices) > 0 {
		devs = strings.Join(r.Devices, ",")
	}
	fmt.Fprintf(w, "transport: %s   gdr: %s   devices: %s\n", r.Transport, gdr, devs)
	if len(r.Evidence) > 0 {
		fmt.Fprintln(w, "\nevidence:")
		for _, e := range r.Evidence {
			fmt.Fprintf(w, "  %s: %s\n", EvidenceRef(e.File, e.Line), e.Text)
		}
	}
	writeFindings(w, "problem", r.Problems, fix)
	writeFindings(w, "warning", r.Warnings, fix)
	if len(r.PerRank) > 1 {
		fmt.Fprintln(w, "\nper rank:")
		rows := make([][]string, 0, len(r.PerRank))
		for _, p := range r.PerRank {
			rank := "?"
			if p.Rank != nil {
				rank = strconv.Itoa(*p.Rank)
			}
			g := "?"
			if p.GDR != nil {
				g = strconv.FormatBool(*p.GDR)
			}
			where := p.Host
			if p.Pid != 0 {
				where += ":" + strconv.Itoa(p.Pid)
			}
			if p.File != "" {
				where += " (" + p.File + ")"
			}
			rows = append(rows, []string{rank, where, p.Transport, g, strings.Join(p.Devices, ",")})
		}
		textout.Table(w, tty, []string{"RANK", "PROCESS", "TRANSPORT", "GDR", "DEVICES"}, rows)
	}
	if len(r.Tuning) > 0 {
		fmt.Fprintln(w, "\nalgorithm/protocol chosen (TUNING):")
		rows := make([][]string, 0, len(r.Tuning))
		for _, t := range r.Tuning {
			rows = append(rows, []string{t.Collective, t.Algo, t.Proto, strconv.FormatInt(t.MinBytes, 10), strconv.FormatInt(t.MaxBytes, 10), strconv.FormatInt(t.Count, 10)})
		}
		textout.Table(w, tty, []string{"COLLECTIVE", "ALGO", "PROTO", "MIN BYTES", "MAX BYTES", "CALLS"}, rows)
	}
	if len(r.Env) > 0 {
		fmt.Fprintln(w, "\nset by environment:")
		for _, e := range r.Env {
			fmt.Fprintf(w, "  %s=%q  (%s)\n", e.Name, e.Value, EvidenceRef(e.File, e.Line))
		}
	}
}

func writeFindings(w io.Writer, kind string, fs []Finding, fix func(string, []next.Command) string) {
	for _, f := range fs {
		fmt.Fprintf(w, "\n%s [%s]: %s\n", kind, f.Code, f.Message)
		for _, e := range f.Lines {
			fmt.Fprintf(w, "  evidence %s: %s\n", EvidenceRef(e.File, e.Line), e.Text)
		}
		if f.Fix != "" {
			fmt.Fprintf(w, "  fix: %s\n", fix(f.Fix, f.Next))
		}
	}
}
