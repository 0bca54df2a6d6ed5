package profile

import (
	"bytes"
	"net/netip"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/ain-hpc/ain/internal/golden"
	"github.com/ain-hpc/ain/pkg/ibport"
)

// FuzzApplyProbes: whatever a probe pod prints, detection writes a profile that loads (Parse
// validates it: fabric, HCA entries, GID index, line rate), and never panics.
func FuzzApplyProbes(f *testing.F) {
	golden.Seeds(f, "probe/*.txt")
	nodes := []corev1.Node{gpuNode("gpu-1", 8, map[string]int64{"rdma/rdma_shared_device_a": 63}, map[string]string{labelLinkLayer: "ethernet"})}
	addrs := []PodInterface{{Network: "default/rdma-net", Name: "net1", Addrs: []netip.Addr{netip.MustParseAddr("192.168.100.7")}}}
	f.Fuzz(func(t *testing.T, dump []byte) {
		rep, err := ibport.Parse(bytes.NewReader(dump))
		if err != nil {
			return
		}
		for _, ifs := range [][]PodInterface{nil, addrs} {
			d := Detect(nodes, nil, nil)
			pools := d.ProbePools(nodes, false)
			d.ApplyProbes([]ProbeResult{{Pool: pools[0], Node: "gpu-1", Pod: "p", Report: rep, Interfaces: ifs}})
			y, err := d.YAML("https://127.0.0.1:6443", "2026-12-03T17:00:00Z")
			if err != nil {
				t.Fatal(err)
			}
			if _, err := Parse("detected.yaml", y); err != nil {
				t.Fatalf("detect wrote a profile that does not load: %v\n%s", err, y)
			}
		}
	})
}
