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
