package train

import (
	"bytes"
	"strings"
	"testing"

	"github.com/ain-hpc/ain/pkg/bench"
	"github.com/ain-hpc/ain/pkg/counters"
)

// TestWriteWireText: the summary's table names each node's ports with the bytes sent and
// received and marks NCCL's; a node without a delta says why; a clean multi-node check says the
// floor is "more than nothing".
func TestWriteWireText(t *testing.T) {
	var out bytes.Buffer
	snap := func(words uint64) *counters.Snapshot {
		return &counters.Snapshot{Ports: map[string]map[string]uint64{
			"mlx5_0:1": {"port_xmit_data": words, "port_rcv_data": words},
			"mlx5_1:1": {"port_xmit_data": 7, "port_rcv_data": 7}}}
	}
	before := map[string]*counters.Snapshot{"n1": snap(0), "n2": snap(0), "n3": snap(0)}
	after := map[string]*counters.Snapshot{"n1": snap(256 << 20), "n2": snap(1)}
	w := bench.CheckJobWire("ib", []string{"mlx5_0:1"}, []string{"n1", "n2", "n3"}, before, after, map[string]string{"n3": "probe pod Pending"})
	WriteWireText(&out, w, false)
	got := out.String()
	for _, want := range []string{"bytes that crossed each HCA", "n1    mlx5_0:1  1.00 GiB", "NCCL's", "n2    mlx5_0:1  4 B", "n2    mlx5_1:1  0 B", "n3    -         unknown", "no delta for n3: no counter snapshot: probe pod Pending"} {
		if !strings.Contains(got, want) {
			t.Errorf("lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "every node's RDMA ports moved") {
		t.Errorf("n3 has no delta, yet every node is said to have moved:\n%s", got)
	}
	out.Reset()
	WriteWireText(&out, bench.CheckJobWire("ib", []string{"mlx5_0:1"}, []string{"n1", "n2"}, before, after, nil), false)
	if !strings.Contains(out.String(), "every node's RDMA ports moved") {
		t.Errorf("clean check:\n%s", out.String())
	}
	out.Reset()
	WriteWireText(&out, nil, false)
	if out.Len() != 0 {
		t.Errorf("no check printed %q", out.String())
	}
}
