package ibport

import (
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/ain-hpc/ain/pkg/textout"
)

// WriteText writes the verdict, a table of the ports (tty: bordered), each reason a port is not
// ready with its fix, and the RoCE v2 GID index to give NCCL.
func (r *Report) WriteText(w io.Writer, tty bool) {
	fmt.Fprintf(w, "%s: %s (format: %s)\n", map[bool]string{true: "OK", false: "PROBLEM"}[r.Ready], r.Summary(), r.Format)
	if len(r.Ports) == 0 {
		fmt.Fprintln(w, "  fix: check the input is the output of ibstat, ibv_devinfo [-v], ibstatus, rdma link [-j] or:\n  "+SysfsDumpCommandShown())
		return
	}
	rows := make([][]string, 0, len(r.Ports))
	for _, p := range r.Ports {
		rate := "-"
		if p.Rate != nil {
			rate = *p.Rate
		}
		gid := "-"
		if p.RoCEv2GIDIndex != nil {
			gid = strconv.Itoa(*p.RoCEv2GIDIndex)
		}
		ready := "yes"
		if !p.Ready {
			ready = "no: " + p.Reason
		}
		rows = append(rows, []string{fmt.Sprintf("%s:%d", p.Device, p.Port), textout.OrDash(p.State), textout.OrDash(p.PhysState), textout.OrDash(p.LinkLayer), rate, gid, ready})
	}
	fmt.Fprintln(w)
	textout.Table(w, tty, []string{"PORT", "STATE", "PHYS", "LINK", "RATE", "ROCEV2 GID", "READY"}, rows)
	seen := map[string]bool{}
	for _, p := range r.Ports {
		if p.Ready || seen[p.Reason+p.LinkLayer] {
			continue
		}
		seen[p.Reason+p.LinkLayer] = true
		var names []string
		for _, q := range r.Ports {
			if !q.Ready && q.Reason == p.Reason && q.LinkLayer == p.LinkLayer {
				names = append(names, fmt.Sprintf("%s:%d (line %d: state %s, phys %s)", q.Device, q.Port, q.Line, textout.OrDash(q.State), textout.OrDash(q.PhysState)))
			}
		}
		fmt.Fprintf(w, "\nproblem [%s]: %s\n", p.Reason, strings.Join(names, ", "))
		fmt.Fprintf(w, "  fix: %s\n", Fix(p.Reason, p.LinkLayer))
	}
	if r.GIDIndex != nil {
		fmt.Fprintf(w, "\nRoCE v2 IPv4 GID index: %d  (NCCL_IB_GID_INDEX=%d)\n", *r.GIDIndex, *r.GIDIndex)
	} else {
		for _, p := range r.Ports {
			if p.RoCEv2GIDIndex != nil {
				fmt.Fprintln(w, "\nRoCE v2 GID indexes differ between ports: set NCCL_IB_GID_INDEX per pod, or leave it unset (auto, NCCL >= 2.21)")
				break
			}
		}
	}
}
