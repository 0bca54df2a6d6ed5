package topo

import (
	"encoding/json"
	"testing"

	"github.com/ain-hpc/ain/internal/golden"
)

// FuzzAnalyze: no input may panic; a parsed topology's report is consistent (a GPU's NIC is one of
// the input's NICs at its best path class, gdr only at PIX/PXB, rails never name a missing NIC,
// ideal only without reasons) and marshals to JSON.
func FuzzAnalyze(f *testing.F) {
	f.Add([]byte("GPU0 GPU0\nGPU0 X X\n"))
	f.Add([]byte("<system><cpu><pci><gpu dev=\"0\"/></pci><pci><nic><net name=\"a\"/></nic></pci></cpu></system>"))
	golden.FuzzParser(f, []string{"*.txt", "*.xml"}, Parse, nil, func(t *testing.T, topo *Topology) {
		r := Analyze(topo)
		nics := map[string]bool{}
		for _, n := range topo.NICs {
			nics[n.Name] = true
		}
		for i, g := range r.GPUs {
			if g.NIC != nil {
				if !nics[*g.NIC] || g.Path == nil {
					t.Fatalf("GPU%d nearest %v not in the input", g.GPU, *g.NIC)
				}
				for j, n := range topo.NICs {
					if rk := PathRank(topo.Path[i][j]); rk > 0 && rk < PathRank(*g.Path) {
						t.Fatalf("GPU%d: %s at %s is nearer than %s at %s", g.GPU, n.Name, topo.Path[i][j], *g.NIC, *g.Path)
					}
				}
			}
			if g.GDR && (g.Path == nil || !GDRPath(*g.Path)) {
				t.Fatalf("GPU%d gdr at %v", g.GPU, g.Path)
			}
		}
		for _, rl := range r.Rails {
			if !nics[rl.NIC] {
				t.Fatalf("rail on unknown NIC %s", rl.NIC)
			}
		}
		if r.Layout == LayoutIdeal && len(r.Reasons) > 0 {
			t.Fatalf("ideal with reasons %v", r.Reasons)
		}
		if _, err := json.Marshal(r); err != nil {
			t.Fatal(err)
		}
		_ = r.Summary()
	})
}
