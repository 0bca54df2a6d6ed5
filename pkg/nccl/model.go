package nccl

import (
	"fmt"
	"math"
	"math/bits"
)

// The allreduce cost model.
//
// It is the alpha-beta model NCCL's tuner (src/graph/tuning.cc) uses to choose between ring and
// tree, reduced to what can be known without running NCCL:
//
//	time_us = latency_us + bytes / (1000 x algBw_GBps)
//
//	ring latency = base + (2(nRanks-1) - 2(nNodes-1)) x intraLat + 2(nNodes-1) x interLat
//	tree latency = base + 2 x ((ppn-1) x intraLat + log2i(nNodes) x interLat)
//	ring algBw   = busBw x nRanks / (2(nRanks-1))
//	tree algBw   = 0.5 x min(0.92 x busBw, treeCap)
//
// with the Simple protocol's constants (NCCL 2.30): base 8.4 us for both algorithms, network hop
// 14 us for both, NVLink hop 3.4 us, PCI hop 5.7 us. log2i is the integer (floor) log2 NCCL uses.
// busBw is the network bandwidth of one node: NICs per node x link rate / 8 (GB/s), the bound
// of a rail-optimised fabric where NVLink inside the node is much faster than the NICs.
//
// Limits, so that nobody reads more into its numbers than it holds:
//   - Simple protocol only. NCCL switches to LL/LL128 for small messages, whose latency is several
//     times lower; predicted times below ~1 MiB are pessimistic, large-message times are the point.
//   - No NVLS/NVLSTree (NVSwitch multicast), CollNet/SHARP or PAT algorithms, no PXN, no
//     per-size tree correction factors, no "ring plateau" or net-overhead terms of some NCCL
//     versions, no NCCL_MIN/MAX_NCHANNELS effects, no congestion or adaptive routing.
//   - The tree's intra-node hop latency is taken to be the ring's (the notes give only the ring's).
//   - The per-channel tree cap (nChannels x perChMaxTreeBw, ~16 x 36-41 GB/s on Hopper) is off
//     unless TreeCapGBps is set; it binds only above ~600 GB/s of node bandwidth.
//   - It predicts NCCL's choice and the shape of the curve; a measured nccl-tests run is the truth.
//     Measured busbw is usually 80-95% of the modelled one on a healthy fabric.

// Simple-protocol constants (microseconds) from NCCL 2.30's tuning tables.
const (
	baseLatSimpleUs    = 8.4
	netLatRingSimple   = 14.0
	netLatTreeSimple   = 14.0
	nvlinkLatSimpleUs  = 3.4
	pciLatSimpleUs     = 5.7
	treeBusBwEfficency = 0.92
)

// ModelParams describes the job and the fabric to model.
type ModelParams struct {
	Nodes       int     `json:"nodes"`
	GPUsPerNode int     `json:"gpusPerNode"`
	LinkGbps    float64 `json:"linkGbps"`    // one NIC's line rate, Gb/s
	NICsPerNode int     `json:"nicsPerNode"` // 0: one NIC per GPU
	Intra       string  `json:"intra"`       // "nvlink" (default) or "pci"
	TreeCapGBps float64 `json:"treeCapGBps,omitempty"`
}

// AlgoCost is the latency and bandwidth of one algorithm, as NCCL's tuner tables hold them.
type AlgoCost struct {
	LatencyUs float64 `json:"latencyUs"`
	AlgBwGBps float64 `json:"algBwGBps"`
}

// Time returns the modelled time of an allreduce of bytes, in microseconds.
func (c AlgoCost) Time(bytes float64) float64 { return c.LatencyUs + bytes/(1000*c.AlgBwGBps) }

// ModelPoint is a predicted nccl-tests-style result: algbw = bytes/time, busbw = algbw x 2(n-1)/n.
type ModelPoint struct {
	TimeUs float64 `json:"timeUs"`
	Algbw  float64 `json:"algbw"`
	Busbw  float64 `json:"busbw"`
}

// ModelRow is the prediction for one message size.
type ModelRow struct {
	Size int64       `json:"size"`
	Ring *ModelPoint `json:"ring,omitempty"`
	Tree *ModelPoint `json:"tree,omitempty"`
	Best string      `json:"best"`
}

// ModelResult is the output of AllReduceModel. The JSON names are a stable interface.
type ModelResult struct {
	Params         ModelParams `json:"params"`
	NRanks         int         `json:"nranks"`
	NodeBusBwGBps  float64     `json:"nodeBusBwGBps"`
	Ring           AlgoCost    `json:"ring"`
	Tree           AlgoCost    `json:"tree"`
	CrossoverBytes *int64      `json:"crossoverBytes"` // from this size on, ring is faster than tree
	Rows           []ModelRow  `json:"rows"`
}

// Validate checks the parameters, filling defaults.
func (p *ModelParams) Validate() error {
	if p.Nodes < 2 {
		return fmt.Errorf("nodes must be at least 2 (the model covers inter-node allreduce), got %d", p.Nodes)
	}
	if p.GPUsPerNode < 1 || p.GPUsPerNode > 1024 {
		return fmt.Errorf("gpus per node must be 1..1024, got %d", p.GPUsPerNode)
	}
	if p.Nodes > 1<<20 {
		return fmt.Errorf("nodes must be at most %d, got %d", 1<<20, p.Nodes)
	}
	if !(p.LinkGbps > 0) || math.IsInf(p.LinkGbps, 0) {
		return fmt.Errorf("link rate must be a positive number of Gb/s, got %v", p.LinkGbps)
	}
	if p.NICsPerNode == 0 {
		p.NICsPerNode = p.GPUsPerNode
	}
	if p.NICsPerNode < 0 {
		return fmt.Errorf("NICs per node must be positive, got %d", p.NICsPerNode)
	}
	switch p.Intra {
	case "":
		p.Intra = "nvlink"
	case "nvlink", "pci":
	default:
		return fmt.Errorf("intra-node link must be nvlink or pci, got %q", p.Intra)
	}
	return nil
}

// log2i is floor(log2(n)) for n >= 1, as NCCL computes it.
func log2i(n int) int { return bits.Len(uint(n)) - 1 }

// AllReduceCosts returns the ring and tree costs for p (which must be valid).
func AllReduceCosts(p ModelParams) (ring, tree AlgoCost, busBw float64) {
	nRanks := p.Nodes * p.GPUsPerNode
	ppn := p.GPUsPerNode
	intra := nvlinkLatSimpleUs
	if p.Intra == "pci" {
		intra = pciLatSimpleUs
	}
	busBw = float64(p.NICsPerNode) * p.LinkGbps / 8
	nsteps := 2 * (nRanks - 1)
	nInter := 2 * (p.Nodes - 1)
	ring.LatencyUs = baseLatSimpleUs + float64(nsteps-nInter)*intra + float64(nInter)*netLatRingSimple
	tree.LatencyUs = baseLatSimpleUs + 2*(float64(ppn-1)*intra+float64(log2i(p.Nodes))*netLatTreeSimple)
	ring.AlgBwGBps = busBw * float64(nRanks) / float64(nsteps)
	tb := treeBusBwEfficency * busBw
	if p.TreeCapGBps > 0 {
		tb = math.Min(tb, p.TreeCapGBps)
	}
	tree.AlgBwGBps = 0.5 * tb
	return ring, tree, busBw
}

// Crossover returns the message size from which ring is faster than tree: 0 when ring is never
// slower, -1 when tree is never slower.
func Crossover(ring, tree AlgoCost) int64 {
	dLat := ring.LatencyUs - tree.LatencyUs     // what ring loses on latency
	dInv := 1/tree.AlgBwGBps - 1/ring.AlgBwGBps // what ring gains per byte (x1000)
	switch {
	case dInv <= 0: // tree has at least ring's bandwidth: ring never catches up
		return -1
	case dLat <= 0:
		return 0
	}
	return int64(math.Ceil(1000 * dLat / dInv))
}

// AllReduceModel predicts allreduce times for every size from minBytes to maxBytes (x factor).
// algos selects "ring", "tree" or "both".
func AllReduceModel(p ModelParams, minBytes, maxBytes, factor int64, algos string) (*ModelResult, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	if minBytes < 1 || maxBytes < minBytes || factor < 2 {
		return nil, fmt.Errorf("sizes: need 1 <= min <= max and factor >= 2 (got %d, %d, %d)", minBytes, maxBytes, factor)
	}
	doRing, doTree := true, true
	switch algos {
	case "", "both":
	case "ring":
		doTree = false
	case "tree":
		doRing = false
	default:
		return nil, fmt.Errorf("algo must be ring, tree or both, got %q", algos)
	}
	ring, tree, busBw := AllReduceCosts(p)
	n := p.Nodes * p.GPUsPerNode
	res := &ModelResult{Params: p, NRanks: n, NodeBusBwGBps: busBw, Ring: ring, Tree: tree, Rows: []ModelRow{}}
	if c := Crossover(ring, tree); c >= 0 {
		res.CrossoverBytes = &c
	}
	busFactor := 2 * float64(n-1) / float64(n)
	point := func(c AlgoCost, size int64) *ModelPoint {
		t := c.Time(float64(size))
		alg := float64(size) / (1000 * t)
		return &ModelPoint{TimeUs: t, Algbw: alg, Busbw: alg * busFactor}
	}
	for size := minBytes; size <= maxBytes && len(res.Rows) < 4096; {
		row := ModelRow{Size: size}
		if doRing {
			row.Ring = point(ring, size)
		}
		if doTree {
			row.Tree = point(tree, size)
		}
		switch {
		case row.Ring != nil && row.Tree != nil && row.Tree.TimeUs < row.Ring.TimeUs:
			row.Best = "tree"
		case row.Ring != nil:
			row.Best = "ring"
		default:
			row.Best = "tree"
		}
		res.Rows = append(res.Rows, row)
		if size > math.MaxInt64/factor {
			break
		}
		size *= factor
	}
	return res, nil
}
