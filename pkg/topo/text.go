package topo

import (
	"fmt"
	"io"
	"strings"

	"github.com/ain-hpc/ain/pkg/textout"
)

// WriteText writes the verdict, the GPU-to-NIC table (tty: bordered), NCCL_IB_HCA for the rails,
// the NICs on no rail, the notes, and the fix for a constrained layout.
func (r *Report) WriteText(w io.Writer, tty bool) {
	fmt.Fprintf(w, "%s: %s (from %s)\n\n", map[bool]string{true: "OK", false: "PROBLEM"}[r.Layout == LayoutIdeal], r.Summary(), r.Source)
	rail := map[int]Rail{}
	for _, rl := range r.Rails {
		rail[rl.GPU] = rl
	}
	rows := make([][]string, 0, len(r.GPUs))
	for _, g := range r.GPUs {
		nic, dev, path := "-", "-", "-"
		if g.NIC != nil {
			nic, path = *g.NIC, *g.Path
		}
		if g.Device != nil {
			dev = *g.Device
		}
		if len(g.Ties) > 1 {
			nic += " (ties: " + strings.Join(g.Ties, ",") + ")"
		}
		gdr := "no"
		if g.GDR {
			gdr = "yes"
		}
		rl := "-"
		if x, ok := rail[g.GPU]; ok {
			rl = x.NIC
			if x.Device != nil && *x.Device != x.NIC {
				rl += " (" + *x.Device + ")"
			}
			if x.Shared {
				rl += " shared"
			}
		}
		numa := textout.OrDash(g.NUMAAffinity)
		rows = append(rows, []string{fmt.Sprintf("GPU%d", g.GPU), nic, dev, path, gdr, rl, numa})
	}
	textout.Table(w, tty, []string{"GPU", "NEAREST NIC", "DEVICE", "PATH", "GDR", "RAIL", "NUMA"}, rows)
	if r.NCCLIBHCA != "" {
		fmt.Fprintf(w, "\nNCCL_IB_HCA=%s  (the rails' NICs; '=' matches names exactly, so mlx5_1 does not also select mlx5_10)\n", r.NCCLIBHCA)
	}
	var unused []string
	for _, n := range r.NICs {
		used := false
		for _, rl := range r.Rails {
			used = used || rl.NIC == n.NIC
		}
		if !used {
			name := n.NIC
			if n.Device != nil && *n.Device != n.NIC {
				name += " (" + *n.Device + ")"
			}
			unused = append(unused, name)
		}
	}
	if len(unused) > 0 && len(r.Rails) > 0 {
		fmt.Fprintf(w, "not on any GPU's rail: %s\n", strings.Join(unused, ", "))
	}
	for _, n := range r.Notes {
		fmt.Fprintf(w, "note: %s\n", n)
	}
	if r.Layout == LayoutConstrained {
		fmt.Fprintln(w, "\nfix: a constrained layout is a property of the server: expect less than line rate per GPU on shared or\n"+
			"  far NICs. Keep NCCL_IB_HCA to the rails' NICs, leave NCCL_NET_GDR_LEVEL at its default unless you measured\n"+
			"  better, and pin each rank to its GPU's NUMA node.")
	}
}
