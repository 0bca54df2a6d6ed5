package topo

import (
	"bytes"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// xnode is one element of the NCCL topology dump, with its ancestors reachable.
type xnode struct {
	name   string
	attrs  map[string]string
	parent *xnode
	depth  int
	line   int
}

// ParseNCCLXML reads the topology NCCL writes to NCCL_TOPO_DUMP_FILE (or the XML a cloud gives in
// NCCL_TOPO_FILE): <system> holds a <cpu> per NUMA node, which holds <pci> bridges (class 0x0604)
// down to the device's own <pci>, holding a <gpu dev=N gdr=0|1> or a <nic> with one <net
// name=mlx5_N port=P gdr=0|1> per port. A <nic> right under a <cpu> has no known PCIe path.
//
// The path class of a GPU/NIC pair follows from the tree: different <cpu>: SYS; lowest common
// ancestor a <cpu>: PHB (NCCL does not tell NODE from PHB); a bridge that is the parent of both
// device <pci>s: PIX (one bridge); otherwise PXB.
func ParseNCCLXML(r io.Reader) (*Topology, error) {
	data, err := readInput(r, "NCCL topology XML")
	if err != nil {
		return nil, err
	}
	dec := xml.NewDecoder(bytes.NewReader(data))
	var (
		stack  []*xnode
		gpus   []*xnode
		nets   []*xnode
		sawSys bool
		elems  int
	)
	lineOf := newLineCounter(data)
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("NCCL topology XML: %w", err)
		}
		off := dec.InputOffset()
		switch t := tok.(type) {
		case xml.StartElement:
			elems++
			if elems > 1_000_000 {
				return nil, fmt.Errorf("NCCL topology XML: more than a million elements")
			}
			n := &xnode{name: strings.ToLower(t.Name.Local), attrs: map[string]string{}, line: lineOf(off)}
			for _, a := range t.Attr {
				n.attrs[strings.ToLower(a.Name.Local)] = a.Value
			}
			if len(stack) > 0 {
				n.parent = stack[len(stack)-1]
				n.depth = n.parent.depth + 1
			}
			stack = append(stack, n)
			switch n.name {
			case "system":
				sawSys = true
			case "gpu":
				gpus = append(gpus, n)
			case "net":
				nets = append(nets, n)
			}
		case xml.EndElement:
			if len(stack) > 0 {
				stack = stack[:len(stack)-1]
			}
		}
	}
	if !sawSys {
		return nil, fmt.Errorf("NCCL topology XML: no <system> element: want the file NCCL writes with NCCL_TOPO_DUMP_FILE=path")
	}
	t := &Topology{Source: SourceNCCLXML}
	names := map[string]int{}
	for _, n := range nets {
		names[n.attrs["name"]]++
	}
	for _, n := range nets {
		name := n.attrs["name"]
		if name == "" {
			return nil, fmt.Errorf("NCCL topology XML: <net> without a name attribute (line %d)", n.line)
		}
		id := name
		if names[name] > 1 && n.attrs["port"] != "" {
			id = name + ":" + n.attrs["port"] // dual-port card: NCCL_IB_HCA takes mlx5_0:1
		}
		dev := id
		ni := NICInfo{Name: id, Device: &dev, GDR: boolAttr(n.attrs["gdr"]), Speed: n.attrs["speed"]}
		t.NICs = append(t.NICs, ni)
	}
	seenGPU := map[int]bool{}
	for _, g := range gpus {
		idx, err := strconv.Atoi(g.attrs["dev"])
		if err != nil || idx < 0 {
			return nil, fmt.Errorf("NCCL topology XML: <gpu> with dev=%q (line %d): want the CUDA device number", g.attrs["dev"], g.line)
		}
		if seenGPU[idx] {
			return nil, fmt.Errorf("NCCL topology XML: GPU dev=%d appears twice (line %d)", idx, g.line)
		}
		seenGPU[idx] = true
		gi := GPUInfo{Index: idx, GDR: boolAttr(g.attrs["gdr"])}
		if c := ancestor(g, "cpu"); c != nil {
			gi.NUMAAffinity = c.attrs["numaid"]
			gi.CPUAffinity = c.attrs["affinity"]
		}
		row := make([]string, len(nets))
		for j, n := range nets {
			row[j] = xmlPath(g, n)
		}
		t.GPUs = append(t.GPUs, gi)
		t.Path = append(t.Path, row)
	}
	return t, nil
}

func boolAttr(s string) *bool {
	switch s {
	case "1", "true":
		v := true
		return &v
	case "0", "false":
		v := false
		return &v
	}
	return nil
}

func ancestor(n *xnode, name string) *xnode {
	for p := n.parent; p != nil; p = p.parent {
		if p.name == name {
			return p
		}
	}
	return nil
}

// devicePCI is the <pci> that holds a device: the gpu's parent, the net's <nic>'s parent.
func devicePCI(n *xnode) *xnode {
	p := n.parent
	if p != nil && p.name == "nic" {
		p = p.parent
	}
	if p != nil && p.name == "pci" {
		return p
	}
	return nil
}

func xmlPath(gpu, net *xnode) string {
	cg, cn := ancestor(gpu, "cpu"), ancestor(net, "cpu")
	if cg == nil || cn == nil {
		return "" // outside any NUMA node: unknown
	}
	if cg != cn {
		return PathSYS
	}
	a, b := devicePCI(gpu), devicePCI(net)
	if a == nil || b == nil {
		return PathPHB
	}
	lca := commonAncestor(a, b)
	if lca == nil || lca.name != "pci" {
		return PathPHB
	}
	// Bridges on the way: those strictly between each device and the LCA, plus the LCA itself.
	bridges := 1
	for _, d := range []*xnode{a, b} {
		for p := d.parent; p != nil && p != lca; p = p.parent {
			if p.name == "pci" {
				bridges++
			}
		}
	}
	if bridges <= 1 {
		return PathPIX
	}
	return PathPXB
}

func commonAncestor(a, b *xnode) *xnode {
	for a != nil && b != nil && a.depth > b.depth {
		a = a.parent
	}
	for a != nil && b != nil && b.depth > a.depth {
		b = b.parent
	}
	// Start from the parents: a device is never the other's ancestor.
	if a == b && a != nil {
		return a
	}
	for a != nil && b != nil && a != b {
		a, b = a.parent, b.parent
	}
	return a
}

// newLineCounter maps decoder offsets to line numbers; offsets only grow.
func newLineCounter(data []byte) func(off int64) int {
	line, pos := 1, int64(0)
	return func(off int64) int {
		if off > int64(len(data)) {
			off = int64(len(data))
		}
		if off > pos {
			line += bytes.Count(data[pos:off], []byte{'\n'})
			pos = off
		}
		return line
	}
}
