package topo

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/ain-hpc/ain/internal/golden"
)

func analyzeFile(t *testing.T, name string) *Report {
	t.Helper()
	return Analyze(golden.Parse(t, filepath.Join("testdata", name), Parse))
}

func deref(s *string) string {
	if s == nil {
		return "<nil>"
	}
	return *s
}

// TestAnalyze checks, per sample, the nearest NIC of every GPU (first in matrix order on ties),
// its path class, GDR, the layout verdict and NCCL_IB_HCA.
func TestAnalyze(t *testing.T) {
	tests := []struct {
		file, source, layout, hca string
		// per GPU: "nic device path gdr"
		gpus []string
		// words that must appear in the reasons
		reasons []string
		ties    map[int]string
		rails   map[int]string // GPU -> NIC of its rail, where it differs from nic
	}{
		{file: "smi-h100-ideal-tabs.txt", source: SourceNvidiaSMI, layout: LayoutIdeal, hca: "=mlx5_8,mlx5_7,mlx5_6,mlx5_5,mlx5_4,mlx5_3,mlx5_2,mlx5_1",
			gpus: []string{"NIC8 mlx5_8 PIX true", "NIC7 mlx5_7 PIX true", "NIC6 mlx5_6 PIX true", "NIC5 mlx5_5 PIX true",
				"NIC4 mlx5_4 PIX true", "NIC3 mlx5_3 PIX true", "NIC2 mlx5_2 PIX true", "NIC1 mlx5_1 PIX true"}},
		{file: "smi-pcie-gpus-pix-spaces.txt", source: SourceNvidiaSMI, layout: LayoutIdeal, hca: "=mlx5_0,mlx5_1,mlx5_2,mlx5_3,mlx5_4,mlx5_5,mlx5_6,mlx5_7",
			gpus: []string{"NIC0 mlx5_0 PIX true", "NIC1 mlx5_1 PIX true", "NIC2 mlx5_2 PIX true", "NIC3 mlx5_3 PIX true",
				"NIC4 mlx5_4 PIX true", "NIC5 mlx5_5 PIX true", "NIC6 mlx5_6 PIX true", "NIC7 mlx5_7 PIX true"}},
		{file: "smi-dgx-2gpu-per-nic-mlx5-header.txt", source: SourceNvidiaSMI, layout: LayoutConstrained, hca: "=mlx5_0,mlx5_1,mlx5_2,mlx5_3",
			gpus: []string{"mlx5_0 mlx5_0 PIX true", "mlx5_0 mlx5_0 PIX true", "mlx5_1 mlx5_1 PIX true", "mlx5_1 mlx5_1 PIX true",
				"mlx5_2 mlx5_2 PIX true", "mlx5_2 mlx5_2 PIX true", "mlx5_3 mlx5_3 PIX true", "mlx5_3 mlx5_3 PIX true"},
			reasons: []string{"fewer NICs (4) than GPUs (8)", "GPUs share a NIC", "GPU1->mlx5_0"}},
		{file: "smi-l40s-2nic-cross-socket-prefixed.txt", source: SourceNvidiaSMI, layout: LayoutConstrained, hca: "=mlx5_0,mlx5_1",
			gpus: []string{"NIC0 mlx5_0 PXB true", "NIC0 mlx5_0 PXB true", "NIC0 mlx5_0 NODE false", "NIC0 mlx5_0 NODE false",
				"NIC0 mlx5_0 SYS false", "NIC0 mlx5_0 SYS false", "NIC0 mlx5_0 SYS false", "NIC0 mlx5_0 SYS false"},
			reasons: []string{"fewer NICs (2) than GPUs (8)", "host bridge", "GPU2 (NODE)", "other socket", "GPU7"},
			ties:    map[int]string{0: "NIC0,NIC1", 7: "NIC0,NIC1"},
			rails:   map[int]string{1: "NIC1", 3: "NIC1", 5: "NIC1", 7: "NIC1"}},
		{file: "smi-2gpu-gpu-only.txt", source: SourceNvidiaSMI, layout: LayoutNoNICs,
			gpus: []string{"<nil> <nil> <nil> false", "<nil> <nil> <nil> false"}},
		{file: "smi-pxb-ties-nv12.txt", source: SourceNvidiaSMI, layout: LayoutIdeal, hca: "=mlx5_0,mlx5_1,mlx5_2,mlx5_3,mlx5_4,mlx5_5,mlx5_6,mlx5_7",
			gpus: []string{"NIC0 mlx5_0 PXB true", "NIC0 mlx5_0 PXB true", "NIC2 mlx5_2 PXB true", "NIC2 mlx5_2 PXB true",
				"NIC4 mlx5_4 PXB true", "NIC4 mlx5_4 PXB true", "NIC6 mlx5_6 PXB true", "NIC6 mlx5_6 PXB true"},
			ties:  map[int]string{0: "NIC0,NIC1", 1: "NIC0,NIC1", 6: "NIC6,NIC7"},
			rails: map[int]string{1: "NIC1", 3: "NIC3", 5: "NIC5", 7: "NIC7"}},
		{file: "nccl-topo-dump-mixed.xml", source: SourceNCCLXML, layout: LayoutConstrained, hca: "=mlx5_0,mlx5_1,mlx5_2,mlx5_3:1",
			gpus:    []string{"mlx5_0 mlx5_0 PIX true", "mlx5_1 mlx5_1 PIX true", "mlx5_0 mlx5_0 PHB false", "mlx5_3:1 mlx5_3:1 PIX true"},
			reasons: []string{"fewer NICs"[:0] + "host bridge", "GPU2 (PHB)"},
			ties:    map[int]string{2: "mlx5_0,mlx5_1,mlx5_2", 3: "mlx5_3:1,mlx5_3:2"},
			rails:   map[int]string{2: "mlx5_2"}},
		{file: "nccl-topo-dump-h100-ideal.xml", source: SourceNCCLXML, layout: LayoutIdeal, hca: "=mlx5_0,mlx5_1,mlx5_2,mlx5_3",
			gpus: []string{"mlx5_0 mlx5_0 PIX true", "mlx5_1 mlx5_1 PIX true", "mlx5_2 mlx5_2 PIX true", "mlx5_3 mlx5_3 PIX true"}},
	}
	for _, tc := range tests {
		t.Run(tc.file, func(t *testing.T) {
			r := analyzeFile(t, tc.file)
			if r.Source != tc.source || r.Layout != tc.layout || r.NCCLIBHCA != tc.hca {
				t.Errorf("source %s layout %s hca %q, want %s %s %q (reasons %q)", r.Source, r.Layout, r.NCCLIBHCA, tc.source, tc.layout, tc.hca, r.Reasons)
			}
			if len(r.GPUs) != len(tc.gpus) {
				t.Fatalf("%d GPUs, want %d", len(r.GPUs), len(tc.gpus))
			}
			for i, g := range r.GPUs {
				got := strings.Join([]string{deref(g.NIC), deref(g.Device), deref(g.Path), map[bool]string{true: "true", false: "false"}[g.GDR]}, " ")
				if g.GPU != i || got != tc.gpus[i] {
					t.Errorf("GPU%d: %q, want GPU%d %q", g.GPU, got, i, tc.gpus[i])
				}
				if want := tc.ties[i]; strings.Join(g.Ties, ",") != want && want != "" {
					t.Errorf("GPU%d ties %v, want %s", i, g.Ties, want)
				}
			}
			all := strings.Join(r.Reasons, "; ")
			for _, w := range tc.reasons {
				if !strings.Contains(all, w) {
					t.Errorf("reasons %q lack %q", all, w)
				}
			}
			if tc.layout == LayoutIdeal && len(r.Reasons) > 0 {
				t.Errorf("ideal with reasons %q", r.Reasons)
			}
			for _, rl := range r.Rails {
				want := deref(r.GPUs[rl.GPU].NIC)
				if w, ok := tc.rails[rl.GPU]; ok {
					want = w
				}
				if rl.NIC != want {
					t.Errorf("rail of GPU%d on %s, want %s", rl.GPU, rl.NIC, want)
				}
			}
			golden.JSON(t, strings.TrimSuffix(strings.TrimSuffix(tc.file, ".txt"), ".xml"), r)
		})
	}
}

// TestParseMatrixDetails: affinity columns, NVLink counts, SOC read as SYS.
func TestParseMatrixDetails(t *testing.T) {
	topo := golden.Parse(t, "testdata/smi-h100-ideal-tabs.txt", ParseMatrix)
	g := topo.GPUs[5]
	if g.CPUAffinity != "80-159" || g.NUMAAffinity != "1" || g.GPUNUMAID != "N/A" || g.NVLinks[0] != 18 || len(g.NVLinks) != 7 {
		t.Errorf("GPU5 = %+v", g)
	}
	old := "        GPU0    GPU1    mlx5_0  CPU Affinity\nGPU0     X      SOC     SOC     0-7\nGPU1    SOC      X      PHB     8-15\nmlx5_0  SOC     PHB      X\n"
	topo, err := ParseMatrix(strings.NewReader(old))
	if err != nil {
		t.Fatal(err)
	}
	r := Analyze(topo)
	if deref(r.GPUs[0].Path) != PathSYS || deref(r.GPUs[1].Path) != PathPHB || r.GPUs[1].CPUAffinity != "8-15" {
		t.Errorf("old SOC matrix: %+v", r.GPUs)
	}
}

// TestParseErrors: every bad input gets an error that names the line and says what to do.
func TestParseErrors(t *testing.T) {
	tests := []struct{ in, want string }{
		{"hello\nworld\n", "no topology matrix found"},
		{"\tGPU0\tGPU1\tNIC0\nGPU0\t X \tNV4\tPIX\nGPU1\tNV4\n", "line 3: row GPU1 has 1 cells"},
		{"\tGPU0\tGPU1\nGPU0\tNV4\t X\nGPU1\tNV4\t X \n", "line 2: row GPU0 has \"NV4\" in its own column 1"},
		{"\tGPU0\tGPU1\tNIC0\nGPU0\t X \tNV4\tPIX\n", "line 1: the header names GPU1 but no row"},
		{"<system version=\"1\"><cpu><gpu dev=\"x\"/></cpu></system>", "<gpu> with dev=\"x\""},
		{"<system version=\"1\"><cpu><nic><net dev=\"0\"/></nic></cpu></system>", "<net> without a name"},
		{"<system version=\"1\"><cpu><gpu dev=\"0\"/><gpu dev=\"0\"/></cpu></system>", "GPU dev=0 appears twice"},
		{"<system version=\"1\"><cpu></system>", "NCCL topology XML"},
		{"<topo><system", "NCCL topology XML"},
	}
	for _, tc := range tests {
		_, err := Parse(strings.NewReader(tc.in))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Parse(%q) = %v, want an error with %q", tc.in, err, tc.want)
		}
	}
}
