package bench

import (
	"strings"
	"testing"

	"github.com/ain-hpc/ain/pkg/counters"
	"github.com/ain-hpc/ain/pkg/nccl"
)

func snapOf(words map[string]uint64) *counters.Snapshot {
	s := &counters.Snapshot{Ports: map[string]map[string]uint64{}}
	for port, w := range words {
		s.Ports[port] = map[string]uint64{"port_xmit_data": w, "port_rcv_data": w}
	}
	return s
}

// TestCheckWire: two sizes (1 MiB, 1 GiB), out-of-place and in-place, 20 iterations, 3 nodes:
// the ring sends 2(3-1)/3 x (1 MiB + 1 GiB) x 20 x 2 per node, the floor is half of it.
func TestCheckWire(t *testing.T) {
	const mib, gib = 1 << 20, 1 << 30
	ring := uint64(2 * 2 * (mib + gib) * 20 * 2 / 3)
	floorWords := ring / 2 / 4
	cell := &nccl.PerfCell{Busbw: 20}
	variant := func(transport string, devices ...string) *VariantResult {
		return &VariantResult{Variant: Variant{Name: "ring"}, Nodes: []string{"n1", "n2", "n3"}, Transport: transport, Valid: true,
			Raw:  "# nThread 1 nGpus 1 minBytes 1048576 maxBytes 1073741824 step: 1024(factor) warmup iters: 5 iters: 20 agg iters: 1 validation: 1 graph: 0\n",
			Perf: &nccl.PerfRun{Rows: []nccl.PerfRow{{Size: mib, OOP: cell, IP: cell}, {Size: gib, OOP: cell, IP: cell}}},
			NCCL: &nccl.LogReport{Devices: devices}}
	}
	before := map[string]*counters.Snapshot{}
	for _, n := range []string{"n1", "n2", "n3"} {
		before[n] = snapOf(map[string]uint64{"mlx5_0:1": 1000, "mlx5_1:1": 1000})
	}
	moved := func(on0, on1 uint64) map[string]*counters.Snapshot {
		after := map[string]*counters.Snapshot{}
		for _, n := range []string{"n1", "n2", "n3"} {
			after[n] = snapOf(map[string]uint64{"mlx5_0:1": 1000 + on0, "mlx5_1:1": 1000 + on1})
		}
		return after
	}
	for _, c := range []struct {
		name      string
		v         *VariantResult
		after     map[string]*counters.Snapshot
		valid     bool
		finding   string
		wantNotes string
	}{
		{"IB, bytes on NCCL's HCA", variant(nccl.TransportIB, "mlx5_0:1"), moved(2*floorWords+10, 0), true, "", ""},
		{"IB claimed, counters still", variant(nccl.TransportIB, "mlx5_0:1"), moved(100, 0), false, ProblemWire + ": NCCL's log says IB, but the RDMA ports of n1 sent 400 B", ""},
		{"IB claimed, bytes on another HCA", variant(nccl.TransportRoCE, "mlx5_0:1"), moved(0, 2*floorWords), false, ProblemWrongHCA + ": NCCL's log says it used mlx5_0:1, but on n1 those ports sent 0 B and mlx5_1:1 sent", ""},
		{"socket fallback, counters still", variant(nccl.TransportSocket), moved(0, 0), true, "", ""},
		{"socket, yet RDMA bytes (IPoIB)", variant(nccl.TransportSocket), moved(floorWords, floorWords), true, "sockets over IPoIB", ""},
		{"no after snapshot", variant(nccl.TransportIB, "mlx5_0:1"), map[string]*counters.Snapshot{}, true, "", "no delta for n1: no counter snapshot: probe pod Pending"},
	} {
		t.Run(c.name, func(t *testing.T) {
			w := CheckWire(c.v, before, c.after, map[string]string{"n1": "probe pod Pending"})
			if w.Iters != 20 || w.RingBytes != ring || w.FloorBytes != ring/2 || len(w.Nodes) != 3 {
				t.Fatalf("iters %d ring %d (want %d) floor %d nodes %d", w.Iters, w.RingBytes, ring, w.FloorBytes, len(w.Nodes))
			}
			if c.v.Valid != c.valid {
				t.Errorf("valid %v, want %v; problems %v", c.v.Valid, c.valid, c.v.Problems)
			}
			all := strings.Join(w.Findings, "\n")
			if c.finding == "" && all != "" || !strings.Contains(all, c.finding) {
				t.Errorf("findings %q, want %q", all, c.finding)
			}
			if !strings.Contains(w.Note, c.wantNotes) {
				t.Errorf("note %q, want %q", w.Note, c.wantNotes)
			}
		})
	}
	// One node: nothing had to cross the fabric.
	v := variant(nccl.TransportIB, "mlx5_0:1")
	v.Nodes = v.Nodes[:1]
	if w := CheckWire(v, before, moved(0, 0), nil); len(w.Findings) != 0 || w.FloorBytes != 0 || !v.Valid {
		t.Errorf("one node: %+v", w)
	}
}

// TestCheckJobWire: a training job has no byte floor but "more than nothing" on every node of a
// multi-node job; bytes on another HCA than NCCL names are a finding; a socket job is not judged
// by RDMA bytes (other traffic moves them too); one node is never judged.
func TestCheckJobWire(t *testing.T) {
	nodes := []string{"n1", "n2"}
	before := map[string]*counters.Snapshot{
		"n1": snapOf(map[string]uint64{"mlx5_0:1": 50, "mlx5_1:1": 50}),
		"n2": snapOf(map[string]uint64{"mlx5_0:1": 70, "mlx5_1:1": 70}),
	}
	after := func(n1, n2 [2]uint64) map[string]*counters.Snapshot {
		return map[string]*counters.Snapshot{
			"n1": snapOf(map[string]uint64{"mlx5_0:1": 50 + n1[0], "mlx5_1:1": 50 + n1[1]}),
			"n2": snapOf(map[string]uint64{"mlx5_0:1": 70 + n2[0], "mlx5_1:1": 70 + n2[1]}),
		}
	}
	for _, c := range []struct {
		name, transport string
		nodes           []string
		after           map[string]*counters.Snapshot
		want            []string // substrings, one finding each; none: no finding
	}{
		{"IB, both nodes moved on NCCL's HCA", nccl.TransportIB, nodes, after([2]uint64{1, 0}, [2]uint64{9e6, 0}), nil},
		{"IB, n2 still", nccl.TransportIB, nodes, after([2]uint64{9e6, 0}, [2]uint64{0, 0}), []string{ProblemWire + ": NCCL's log says IB, but the RDMA ports of n2 sent 0 B"}},
		{"RoCE, n1 on the other HCA", nccl.TransportRoCE, nodes, after([2]uint64{0, 5}, [2]uint64{8, 0}), []string{ProblemWrongHCA + ": NCCL's log says it used mlx5_0:1, but on n1 those ports sent 0 B and mlx5_1:1 sent 20 B"}},
		{"socket, HCAs moved (no claim either way)", nccl.TransportSocket, nodes, after([2]uint64{9e6, 9e6}, [2]uint64{9e6, 0}), nil},
		{"socket, still", nccl.TransportSocket, nodes, after([2]uint64{0, 0}, [2]uint64{0, 0}), nil},
		{"one node, still", nccl.TransportIB, nodes[:1], after([2]uint64{0, 0}, [2]uint64{0, 0}), nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			w := CheckJobWire(c.transport, []string{"mlx5_0:1"}, c.nodes, before, c.after, nil)
			if len(w.Nodes) != len(c.nodes) {
				t.Fatalf("nodes %+v", w.Nodes)
			}
			if len(w.Findings) != len(c.want) {
				t.Fatalf("findings %q, want %d like %q", w.Findings, len(c.want), c.want)
			}
			for i, s := range c.want {
				if !strings.Contains(w.Findings[i], s) {
					t.Errorf("finding %q, want %q", w.Findings[i], s)
				}
			}
		})
	}
	// A node without an after snapshot is reported, not judged.
	w := CheckJobWire(nccl.TransportIB, []string{"mlx5_0:1"}, nodes, before, map[string]*counters.Snapshot{"n1": after([2]uint64{3, 0}, [2]uint64{})["n1"]}, map[string]string{"n2": "probe pod Pending"})
	if len(w.Findings) != 0 || !strings.Contains(w.Note, "n2: no counter snapshot: probe pod Pending") || w.Nodes[0].Sent != 12 {
		t.Errorf("missing snapshot: %+v", w)
	}
}
