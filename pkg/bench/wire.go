package bench

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/ain-hpc/ain/pkg/counters"
	"github.com/ain-hpc/ain/pkg/lazyre"
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
	w.measure(v.Nodes, before, after, errs)
	if n < 2 || w.FloorBytes == 0 {
		if w.Note == "" {
			w.Note = "one node or no table: no traffic the fabric had to carry"
		}
		return w
	}
	problems, warnings := w.judge(v.Transport, true)
	v.Problems = append(v.Problems, problems...)
	v.Warnings = append(v.Warnings, warnings...)
	v.Valid = v.Valid && len(v.Problems) == 0
	return w
}

// CheckJobWire is the wire check of a training job (ain train): what the RDMA ports of the
// nodes its ranks ran on carried between a snapshot taken before the job was submitted and one
// taken after it ended, against the transport and devices its NCCL logs name. A training job
// has no byte count ain can derive (gradient sizes, steps, bucketing and the collectives used
// are the script's), so the floor is "more than nothing" for a job on two or more nodes: its
// NCCL traffic must leave every node. The findings are problems (a job whose logs say IB but
// whose HCAs did not move did not use the fabric, whatever NCCL printed). No warning is given
// for RDMA bytes under a socket transport: any other traffic on the node's HCAs (storage,
// other jobs) moves them by more than nothing.
func CheckJobWire(transport string, devices, nodes []string, before, after map[string]*counters.Snapshot, errs map[string]string) *Wire {
	w := &Wire{Devices: append([]string{}, devices...), Nodes: []WireNode{}, Findings: []string{}}
	w.measure(nodes, before, after, errs)
	if len(nodes) < 2 {
		if w.Note == "" {
			w.Note = "one node: no traffic the fabric had to carry"
		}
		return w
	}
	w.FloorBytes = 1
	w.judge(transport, false)
	return w
}

// measure fills w.Nodes with each node's port deltas between before and after (errs says why a
// node has none; "*" applies to every node).
func (w *Wire) measure(nodes []string, before, after map[string]*counters.Snapshot, errs map[string]string) {
	var missing []string
	for _, node := range nodes {
		wn := WireNode{Node: node, Ports: map[string]counters.Traffic{}}
		b, a := before[node], after[node]
		switch {
		case b == nil || a == nil:
			wn.Err = "no counter snapshot"
			if e := errs[node]; e != "" {
				wn.Err += ": " + e
			} else if e := errs["*"]; e != "" { // the snapshot before the job, of every candidate
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
}

// judge compares each measured node with w.FloorBytes and NCCL's transport and devices; the
// contradictions are problems, added to w.Findings and returned. socketWarn: RDMA bytes of at
// least the floor under a non-RDMA transport are a warning (only meaningful for a real floor).
func (w *Wire) judge(transport string, socketWarn bool) (problems, warnings []string) {
	rdma := transport == nccl.TransportIB || transport == nccl.TransportRoCE
	need := "anything: a job on several nodes must send its NCCL traffic off every node (no byte floor is known for a training job)"
	if w.RingBytes > 0 {
		need = fmt.Sprintf("the %s each node must send for this table (ring allreduce: %s)", counters.HumanBytes(w.FloorBytes), counters.HumanBytes(w.RingBytes))
	}
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
			problems = append(problems, fmt.Sprintf("%s: NCCL's log says it used %s, but on %s those ports sent %s and %s sent %s: the traffic crossed another HCA than NCCL reports (check NCCL_IB_HCA and the rail mapping)",
				ProblemWrongHCA, strings.Join(w.Devices, ","), wn.Node, counters.HumanBytes(onNCCL), other, counters.HumanBytes(wn.Ports[other].XmitBytes)))
		case rdma && wn.Sent < w.FloorBytes:
			problems = append(problems, fmt.Sprintf("%s: NCCL's log says %s, but the RDMA ports of %s sent %s between the counter snapshots, less than %s: the collectives did not cross these HCAs",
				ProblemWire, strings.ToUpper(transport), wn.Node, counters.HumanBytes(wn.Sent), need))
		case socketWarn && !rdma && wn.Sent >= w.FloorBytes:
			warnings = append(warnings, fmt.Sprintf("NCCL's log says %s, yet the RDMA ports of %s sent %s: sockets over IPoIB, or other traffic on these HCAs", orNone(transport), wn.Node, counters.HumanBytes(wn.Sent)))
		}
	}
	w.Findings = append(w.Findings, problems...)
	w.Findings = append(w.Findings, warnings...)
	return problems, warnings
}

func orNone(s string) string {
	if s == "" {
		return "no transport"
	}
	return s
}
