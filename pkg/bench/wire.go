package bench

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/ain-hpc/ain/internal/lazyre"
	"github.com/ain-hpc/ain/pkg/counters"
	"github.com/ain-hpc/ain/pkg/nccl"
)

// Problem codes of the wire check.
const (
	// ProblemWire: NCCL's log says IB/RoCE but the RDMA ports of a node did not carry what the
	// collective had to send.
	ProblemWire = "wire-contradicts-nccl"
	// ProblemWrongHCA: the bytes crossed other HCAs than those NCCL says it used.
	ProblemWrongHCA = "wrong-hca"
)

// nccl-tests' header: "# nThread 1 nGpus 1 minBytes 8 maxBytes 8589934592 step: 2(factor) warmup iters: 5 iters: 20 ...".
var itersRe = lazyre.New(`warmup iters: \d+ iters: (\d+)`)

// defaultIters is nccl-tests' -n default.
const defaultIters = 20

// Wire is the hardware check of one variant: what the RDMA ports of its nodes carried between
// counter snapshots taken before and after it (probe pods reading sysfs), against the bytes the
// collective had to send. It is the proof that "NCCL says IB" really crossed the HCAs.
type Wire struct {
	// RingBytes is what each node sends in a ring allreduce over the nodes: 2(n-1)/n x size x
	// iterations, summed over the table's sizes, out-of-place and in-place (warm-up not counted).
	RingBytes uint64 `json:"ringBytesPerNode"`
	// FloorBytes is half of it, (n-1)/n x size per iteration: every allreduce algorithm sends at
	// least that from each node (each node's share of the result must leave it once), so less
	// on a node's RDMA ports means the traffic went elsewhere.
	FloorBytes uint64 `json:"floorBytesPerNode"`
	Iters      int    `json:"iters"`
	// Devices are the HCAs NCCL's log says it used (NET/IB : Using [0]mlx5_0:1/IB ...).
	Devices  []string   `json:"ncclDevices"`
	Nodes    []WireNode `json:"nodes"`
	Findings []string   `json:"findings"`
	// Note says why a node or the whole check gave no answer.
	Note string `json:"note,omitempty"`
}

// WireNode is one node's RDMA ports between the snapshots.
type WireNode struct {
	Node  string                      `json:"node"`
	Ports map[string]counters.Traffic `json:"ports"` // mlx5_0:1 -> bytes sent and received
	Sent  uint64                      `json:"sentBytes"`
	// Err: no delta for this node (a snapshot missing, counters went backwards).
	Err string `json:"error,omitempty"`
}

// CheckWire compares the counter deltas of v's nodes with v's table and NCCL's transport. before
// and after map node names to snapshots (a node missing from either has no delta; errs says why).
// A contradiction is a problem of the variant (it makes the result invalid).
func CheckWire(v *VariantResult, before, after map[string]*counters.Snapshot, errs map[string]string) *Wire {
	w := &Wire{Iters: defaultIters, Devices: []string{}, Nodes: []WireNode{}, Findings: []string{}}
	if m := itersRe().FindStringSubmatch(v.Raw); m != nil {
		if n, err := strconv.Atoi(m[1]); err == nil && n > 0 {
			w.Iters = n
		}
	}
	if v.NCCL != nil {
		w.Devices = append(w.Devices, v.NCCL.Devices...)
	}
	n := len(v.Nodes)
	if v.Perf != nil && n > 1 {
		var ring float64
		for _, row := range v.Perf.Rows {
			cells := 0
			for _, c := range []*nccl.PerfCell{row.OOP, row.IP} {
				if c != nil {
					cells++
				}
			}
			ring += 2 * float64(n-1) / float64(n) * float64(row.Size) * float64(w.Iters) * float64(cells)
		}
		w.RingBytes = uint64(ring)
		w.FloorBytes = w.RingBytes / 2
	}
	var missing []string
	for _, node := range v.Nodes {
		wn := WireNode{Node: node, Ports: map[string]counters.Traffic{}}
		b, a := before[node], after[node]
		switch {
		case b == nil || a == nil:
			wn.Err = "no counter snapshot"
			if e := errs[node]; e != "" {
				wn.Err += ": " + e
			} else if e := errs["*"]; e != "" { // the snapshot before a first variant, of every candidate
				wn.Err += ": " + e
			}
		default:
			rep := counters.Compare(b, a, counters.Options{})
			for port, t := range rep.Bytes {
				if t.Unknown {
					wn.Err = "port_xmit_data went backwards on " + port + " (counters reset)"
					continue
				}
				wn.Ports[port] = t
				wn.Sent += t.XmitBytes
			}
		}
		if wn.Err != "" {
			missing = append(missing, node+": "+wn.Err)
		}
		w.Nodes = append(w.Nodes, wn)
	}
	if len(missing) > 0 {
		w.Note = "no delta for " + strings.Join(missing, "; ")
	}
	if n < 2 || w.FloorBytes == 0 {
		if w.Note == "" {
			w.Note = "one node or no table: no traffic the fabric had to carry"
		}
		return w
	}
	rdma := v.Transport == nccl.TransportIB || v.Transport == nccl.TransportRoCE
	for _, wn := range w.Nodes {
		if wn.Err != "" {
			continue
		}
		onNCCL, other := uint64(0), ""
		for _, port := range slices.Sorted(maps.Keys(wn.Ports)) {
			t := wn.Ports[port]
			if len(w.Devices) == 0 || slices.Contains(w.Devices, port) {
				onNCCL += t.XmitBytes
			} else if t.XmitBytes >= w.FloorBytes && other == "" {
				other = port
			}
		}
		switch {
		case rdma && onNCCL < w.FloorBytes && other != "":
			msg := fmt.Sprintf("%s: NCCL's log says it used %s, but on %s those ports sent %s and %s sent %s: the traffic crossed another HCA than NCCL reports (check NCCL_IB_HCA and the rail mapping)",
				ProblemWrongHCA, strings.Join(w.Devices, ","), wn.Node, counters.HumanBytes(onNCCL), other, counters.HumanBytes(wn.Ports[other].XmitBytes))
			w.Findings = append(w.Findings, msg)
			v.Problems = append(v.Problems, msg)
		case rdma && wn.Sent < w.FloorBytes:
			msg := fmt.Sprintf("%s: NCCL's log says %s, but the RDMA ports of %s sent %s between the counter snapshots, less than the %s each node must send for this table (ring allreduce: %s): the collective did not cross these HCAs",
				ProblemWire, strings.ToUpper(v.Transport), wn.Node, counters.HumanBytes(wn.Sent), counters.HumanBytes(w.FloorBytes), counters.HumanBytes(w.RingBytes))
			w.Findings = append(w.Findings, msg)
			v.Problems = append(v.Problems, msg)
		case !rdma && wn.Sent >= w.FloorBytes:
			msg := fmt.Sprintf("NCCL's log says %s, yet the RDMA ports of %s sent %s: sockets over IPoIB, or other traffic on these HCAs", orNone(v.Transport), wn.Node, counters.HumanBytes(wn.Sent))
			w.Findings = append(w.Findings, msg)
			v.Warnings = append(v.Warnings, msg)
		}
	}
	v.Valid = v.Valid && len(v.Problems) == 0
	return w
}

func orNone(s string) string {
	if s == "" {
		return "no transport"
	}
	return s
}
