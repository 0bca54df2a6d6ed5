// Package topo reads a node's GPU/NIC topology, from the matrix `nvidia-smi topo -m` prints or
// from the XML NCCL writes to NCCL_TOPO_DUMP_FILE, and says what it means for NCCL: per GPU the
// nearest NIC and the PCIe path class between them, which GPU-NIC pairs can use GPUDirect RDMA,
// whether the layout is the ideal one (one NIC per GPU behind the same PCIe switch) or a
// constrained one (shared uplinks, host bridges, cross-socket), and the NCCL_IB_HCA value and
// GPU-to-rail mapping that follow.
//
// # Path classes
//
// nvidia-smi's legend, nearest first:
//
//	PIX  = at most a single PCIe bridge (GPU and NIC behind the same PCIe switch)
//	PXB  = multiple PCIe bridges, without the PCIe host bridge
//	PHB  = through a PCIe host bridge (typically the CPU)
//	NODE = through the interconnect between PCIe host bridges within a NUMA node
//	SYS  = through the SMP interconnect between NUMA nodes (QPI/UPI, xGMI): cross-socket
//	NV#  = a bonded set of # NVLinks (GPU to GPU only)
//
// NCCL's own classes (src/graph/topo.h) have no NODE: what nvidia-smi calls NODE is NCCL's PHB.
//
// # GPUDirect RDMA
//
// NCCL enables GPUDirect RDMA for a GPU/NIC pair when their path is at most NCCL_NET_GDR_LEVEL,
// whose default is PXB (ncclTopoCheckGdr in src/graph/paths.cc: `netGdrLevel = PATH_PXB`, then
// `if (distance > netGdrLevel) ... Disabled`), and when both the GPU and the NIC support it
// (nvidia-peermem or DMA-BUF; the gdr="1" attributes of the XML dump). A matrix from nvidia-smi
// says nothing about the kernel module, so there "gdr" is the path condition alone.
package topo

import (
	"fmt"
	"io"
	"strings"

	"github.com/ain-hpc/ain/pkg/input"
)

// Path classes, nearest first.
const (
	PathPIX  = "PIX"
	PathPXB  = "PXB"
	PathPHB  = "PHB"
	PathNODE = "NODE"
	PathSYS  = "SYS"
)

var pathRank = map[string]int{PathPIX: 1, PathPXB: 2, PathPHB: 3, PathNODE: 4, PathSYS: 5}

// PathRank orders path classes, nearest first; 0 for anything that is not a GPU-NIC PCIe class.
func PathRank(p string) int { return pathRank[p] }

// GDRPath reports whether NCCL enables GPUDirect RDMA at this path class with the default
// NCCL_NET_GDR_LEVEL (PXB).
func GDRPath(p string) bool { r := PathRank(p); return r > 0 && r <= pathRank[PathPXB] }

// Layouts.
const (
	LayoutIdeal       = "ideal"
	LayoutConstrained = "constrained"
	LayoutNoNICs      = "no-nics" // a GPU-only matrix: nothing to say about the network path
)

// Sources.
const (
	SourceNvidiaSMI = "nvidia-smi"
	SourceNCCLXML   = "nccl-topo-xml"
)

// Topology is the parsed input, before analysis: GPUs and NICs, and the path class of each pair.
type Topology struct {
	Source string
	GPUs   []GPUInfo
	NICs   []NICInfo
	// Path[i][j] is the class between GPUs[i] and NICs[j] ("" when the input does not give it).
	Path [][]string
}

// GPUInfo is one GPU as the input names it.
type GPUInfo struct {
	Index        int
	CPUAffinity  string
	NUMAAffinity string
	GPUNUMAID    string
	// NVLinks: the NV# links to other GPUs (index -> number of links), from the matrix.
	NVLinks map[int]int
	GDR     *bool // the XML dump's gdr attribute
}

// NICInfo is one NIC as the input names it.
type NICInfo struct {
	Name   string  // as the matrix names it: NIC0, mlx5_0
	Device *string // the RDMA device: from the NIC legend, or the name itself when it is one
	GDR    *bool   // the XML dump's gdr attribute
	Speed  string  // the XML dump's speed (Mb/s)
}

// Report is the analysis `ain doctor topo` prints.
type Report struct {
	Source string    `json:"source"`
	GPUs   []GPUPath `json:"gpus"`
	NICs   []NICUse  `json:"nics"`
	// Layout: ideal when every GPU has a NIC of its own at PIX or PXB (the same PCIe switch
	// tree, GPUDirect RDMA possible); constrained otherwise; no-nics for a GPU-only input.
	Layout  string   `json:"layout"`
	Reasons []string `json:"reasons"`
	// GDRPairs: every GPU-NIC pair at PIX or PXB (with both ends supporting it, where known).
	GDRPairs []Pair `json:"gdrPairs"`
	// Rails: GPU i uses the NIC matched to it (each GPU a distinct NIC where the nearest ones allow).
	Rails []Rail `json:"rails"`
	// NCCLIBHCA is the NCCL_IB_HCA value that keeps NCCL to the NICs of the rails. It starts with
	// "=" for an exact match: NCCL takes the list as name prefixes otherwise, so mlx5_1 would also
	// select mlx5_10..mlx5_17 (NCCL env docs, NCCL_SOCKET_IFNAME/NCCL_IB_HCA: "=eth0 : Use only
	// interface eth0"). Empty when the NICs have no device name.
	NCCLIBHCA string   `json:"ncclIbHca"`
	Notes     []string `json:"notes"`
}

// GPUPath is one GPU's nearest NIC.
type GPUPath struct {
	GPU          int      `json:"gpu"`
	NIC          *string  `json:"nic"`
	Device       *string  `json:"device"`
	Path         *string  `json:"path"`
	GDR          bool     `json:"gdr"`
	Ties         []string `json:"ties,omitempty"`
	CPUAffinity  string   `json:"cpuAffinity,omitempty"`
	NUMAAffinity string   `json:"numaAffinity,omitempty"`
	GPUNUMAID    string   `json:"gpuNumaId,omitempty"`
}

// NICUse is one NIC and the GPUs for which it is the nearest.
type NICUse struct {
	NIC    string  `json:"nic"`
	Device *string `json:"device"`
	// NearestFor: GPUs whose nearest NIC (first in matrix order on ties) this is.
	NearestFor []int  `json:"nearestFor"`
	Best       string `json:"best,omitempty"` // its nearest path class to any GPU
}

// Pair is a GPU-NIC pair.
type Pair struct {
	GPU    int     `json:"gpu"`
	NIC    string  `json:"nic"`
	Device *string `json:"device"`
	Path   string  `json:"path"`
}

// Rail is a GPU's assigned NIC.
type Rail struct {
	GPU    int     `json:"gpu"`
	NIC    string  `json:"nic"`
	Device *string `json:"device"`
	Path   string  `json:"path"`
	Shared bool    `json:"shared"` // another GPU is on this NIC too
}

// Parse reads either input format, told apart by its content.
func Parse(r io.Reader) (*Topology, error) {
	b, err := readInput(r, "input")
	if err != nil {
		return nil, err
	}
	s := string(b)
	if strings.Contains(s, "<system") {
		return ParseNCCLXML(strings.NewReader(s))
	}
	return ParseMatrix(strings.NewReader(s))
}

const maxInput = 16 << 20

// readInput reads a whole input of at most maxInput bytes; a larger one, being no topology
// dump, is an *input.TooLargeError (what: how it names the input).
func readInput(r io.Reader, what string) ([]byte, error) {
	return input.ReadAll(r, what, maxInput)
}

// Analyze derives the report from a topology.
func Analyze(t *Topology) *Report {
	r := &Report{Source: t.Source, GPUs: []GPUPath{}, NICs: []NICUse{}, GDRPairs: []Pair{}, Rails: []Rail{}, Reasons: []string{}, Notes: []string{}}
	if t.Source == SourceNvidiaSMI {
		r.Notes = append(r.Notes, "gdr is the path condition only (PIX or PXB, NCCL's default NCCL_NET_GDR_LEVEL): check that nvidia-peermem is loaded or DMA-BUF is available (NCCL log: 'GPU Direct RDMA Enabled')")
	}
	if t.Source == SourceNCCLXML {
		r.Notes = append(r.Notes, "NCCL's dump does not tell NODE from PHB: both read as PHB (through the CPU)")
	}
	nearest := r.nearestNICs(t)
	if len(t.NICs) == 0 || len(t.GPUs) == 0 {
		r.Layout = LayoutNoNICs
		if len(t.GPUs) == 0 {
			r.Layout = LayoutConstrained
			r.Reasons = append(r.Reasons, "no GPU in the input")
		} else {
			r.Reasons = append(r.Reasons, "the input lists no NIC: inter-node traffic cannot be placed (run nvidia-smi topo -m where the RDMA devices are visible)")
		}
		return r
	}
	match, users := assignRails(nearest, len(t.NICs))
	r.rails(t, match, users)
	r.Layout = LayoutIdeal
	r.constraints(t, nearest)
	if len(r.Reasons) > 0 {
		r.Layout = LayoutConstrained
	}
	return r
}

// nearestNICs fills the report's GPUs, NICs and GDR pairs, and returns per GPU the indexes
// of the NICs at its best path class.
func (r *Report) nearestNICs(t *Topology) [][]int {
	nearest := make([][]int, len(t.GPUs)) // per GPU, NIC indexes at its best path class
	for _, n := range t.NICs {
		r.NICs = append(r.NICs, NICUse{NIC: n.Name, Device: n.Device, NearestFor: []int{}})
	}
	for i, g := range t.GPUs {
		gp := GPUPath{GPU: g.Index, CPUAffinity: g.CPUAffinity, NUMAAffinity: g.NUMAAffinity, GPUNUMAID: g.GPUNUMAID}
		best := 0
		for j := range t.NICs {
			rk := PathRank(t.Path[i][j])
			if rk == 0 {
				continue
			}
			if gdrAllowed(t, i, j) {
				r.GDRPairs = append(r.GDRPairs, Pair{GPU: g.Index, NIC: t.NICs[j].Name, Device: t.NICs[j].Device, Path: t.Path[i][j]})
			}
			if best == 0 || rk < best {
				best, nearest[i] = rk, []int{j}
			} else if rk == best {
				nearest[i] = append(nearest[i], j)
			}
			if b := r.NICs[j].Best; b == "" || rk < PathRank(b) {
				r.NICs[j].Best = t.Path[i][j]
			}
		}
		if len(nearest[i]) > 0 {
			j := nearest[i][0]
			n := t.NICs[j]
			p := t.Path[i][j]
			gp.NIC, gp.Device, gp.Path = &n.Name, n.Device, &p
			gp.GDR = gdrAllowed(t, i, j)
			if len(nearest[i]) > 1 {
				for _, k := range nearest[i] {
					gp.Ties = append(gp.Ties, t.NICs[k].Name)
				}
			}
			r.NICs[j].NearestFor = append(r.NICs[j].NearestFor, g.Index)
		}
		r.GPUs = append(r.GPUs, gp)
	}
	return nearest
}

// assignRails gives each GPU a NIC among its nearest (match, -1 for none) and counts the
// GPUs per NIC (users).
func assignRails(nearest [][]int, nNICs int) (match []int, users map[int]int) {
	match = matchRails(nearest, nNICs)
	users = map[int]int{}
	for i := range nearest {
		if match[i] >= 0 {
			users[match[i]]++
		}
	}
	// A GPU left without a NIC of its own at its best class shares the least used of its nearest
	// ones (the first in matrix order among equals), so the sharing is spread, not piled on NIC0.
	for i := range nearest {
		if match[i] < 0 && len(nearest[i]) > 0 {
			best := nearest[i][0]
			for _, j := range nearest[i][1:] {
				if users[j] < users[best] {
					best = j
				}
			}
			match[i] = best
			users[best]++
		}
	}
	return match, users
}

// rails fills the report's rails from the assignment, and NCCL_IB_HCA when every rail's NIC
// has a device name.
func (r *Report) rails(t *Topology, match []int, users map[int]int) {
	var devs []string
	seenDev := map[string]bool{}
	hcaOK := true
	for i, g := range t.GPUs {
		j := match[i]
		if j < 0 {
			continue
		}
		n := t.NICs[j]
		r.Rails = append(r.Rails, Rail{GPU: g.Index, NIC: n.Name, Device: n.Device, Path: t.Path[i][j], Shared: users[j] > 1})
		if n.Device == nil {
			hcaOK = false
		} else if !seenDev[*n.Device] {
			seenDev[*n.Device] = true
			devs = append(devs, *n.Device)
		}
	}
	if hcaOK && len(devs) > 0 {
		r.NCCLIBHCA = "=" + strings.Join(devs, ",")
	} else if len(devs) == 0 || !hcaOK {
		r.Notes = append(r.Notes, "the matrix names NICs without a legend (NIC0: mlx5_0): NCCL_IB_HCA cannot be derived; run a newer nvidia-smi or map the NICs by hand")
	}
}

// constraints adds the reasons the layout is not ideal: GPUs without a NIC, fewer NICs than
// GPUs, shared NICs, and nearest NICs through the host bridge or across sockets.
func (r *Report) constraints(t *Topology, nearest [][]int) {
	var shared, far, sys []string
	noNIC := 0
	for i, g := range t.GPUs {
		if len(nearest[i]) == 0 {
			noNIC++
			continue
		}
		p := t.Path[i][nearest[i][0]]
		switch p {
		case PathPHB, PathNODE:
			far = append(far, fmt.Sprintf("GPU%d (%s)", g.Index, p))
		case PathSYS:
			sys = append(sys, fmt.Sprintf("GPU%d", g.Index))
		}
	}
	for _, rl := range r.Rails {
		if rl.Shared {
			shared = append(shared, fmt.Sprintf("GPU%d->%s", rl.GPU, rl.NIC))
		}
	}
	if noNIC > 0 {
		r.Reasons = append(r.Reasons, fmt.Sprintf("%d GPU(s) have no path to any NIC in the input", noNIC))
	}
	if len(t.NICs) < len(t.GPUs) {
		r.Reasons = append(r.Reasons, fmt.Sprintf("fewer NICs (%d) than GPUs (%d)", len(t.NICs), len(t.GPUs)))
	}
	if len(shared) > 0 {
		r.Reasons = append(r.Reasons, "GPUs share a NIC (shared uplink, each gets a fraction of its bandwidth): "+strings.Join(shared, ", "))
	}
	if len(far) > 0 {
		r.Reasons = append(r.Reasons, "nearest NIC only through the CPU's host bridge (no GPUDirect RDMA by default): "+strings.Join(far, ", "))
	}
	if len(sys) > 0 {
		r.Reasons = append(r.Reasons, "nearest NIC on the other socket (SYS, cross-socket): "+strings.Join(sys, ", "))
	}
}

func gdrAllowed(t *Topology, i, j int) bool {
	if !GDRPath(t.Path[i][j]) {
		return false
	}
	if g := t.GPUs[i].GDR; g != nil && !*g {
		return false
	}
	if n := t.NICs[j].GDR; n != nil && !*n {
		return false
	}
	return true
}

// matchRails gives each GPU a distinct NIC among its nearest ones where possible (maximum
// bipartite matching by augmenting paths, GPUs and NICs tried in matrix order, so the result is
// deterministic and a GPU keeps its first nearest NIC unless another GPU needs it). -1: none.
func matchRails(nearest [][]int, nNICs int) []int {
	owner := make([]int, nNICs)
	for j := range owner {
		owner[j] = -1
	}
	var try func(i int, seen []bool) bool
	try = func(i int, seen []bool) bool {
		for _, j := range nearest[i] { // a free NIC first: a GPU keeps its first choice when it can
			if owner[j] < 0 {
				seen[j] = true
				owner[j] = i
				return true
			}
		}
		for _, j := range nearest[i] {
			if seen[j] {
				continue
			}
			seen[j] = true
			if owner[j] < 0 || try(owner[j], seen) {
				owner[j] = i
				return true
			}
		}
		return false
	}
	for i := range nearest {
		try(i, make([]bool, nNICs))
	}
	match := make([]int, len(nearest))
	for i := range match {
		match[i] = -1
	}
	for j, i := range owner {
		if i >= 0 {
			match[i] = j
		}
	}
	return match
}

// Summary is the one-line verdict.
func (r *Report) Summary() string {
	switch r.Layout {
	case LayoutIdeal:
		return fmt.Sprintf("ideal layout: each of %d GPUs has its own NIC behind the same PCIe switch; GPUDirect RDMA possible on every rail", len(r.GPUs))
	case LayoutNoNICs:
		return fmt.Sprintf("%d GPUs and no NIC in the input: only the GPU-to-GPU paths are known", len(r.GPUs))
	}
	return "constrained layout: " + strings.Join(r.Reasons, "; ")
}
