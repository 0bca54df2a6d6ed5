package cli

import (
	"bytes"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ain-hpc/ain/internal/ainerr"
	"github.com/ain-hpc/ain/pkg/bench"
	"github.com/ain-hpc/ain/pkg/sandbox"
)

// savedBench writes a result folder from the sandbox's recorded samples, one variant per sample.
func savedBench(t *testing.T, name, fabric string, samples ...string) string {
	t.Helper()
	res := &bench.Result{Name: name, Fabric: fabric, LineRate: "200Gb", LineRateGBps: 25, Nodes: 3, GPUsPerNode: 1, SameNodes: true}
	for _, s := range samples {
		raw, err := sandbox.RenderSample("nccl-tests/all_reduce_perf-"+s+".txt", sandbox.SampleData{Job: name, Namespace: "x", Fabric: "ib", Hosts: []string{"a", "b", "c"}})
		if err != nil {
			t.Fatal(err)
		}
		v := &bench.VariantResult{Variant: bench.Variant{Name: s, Env: map[string]string{}}}
		if s == "ring" || s == "tree" {
			v.Env["NCCL_ALGO"] = strings.ToUpper(s[:1]) + s[1:]
		}
		bench.Analyze(v, []byte(raw), fabric)
		res.Variants = append(res.Variants, v)
	}
	res.Summarize()
	dir := filepath.Join(t.TempDir(), name)
	if _, err := bench.MakeDir(dir, true); err != nil {
		t.Fatal(err)
	}
	if _, err := bench.Save(res, dir); err != nil {
		t.Fatal(err)
	}
	return filepath.Join(dir, bench.ResultJSON)
}

func TestBenchCompare(t *testing.T) {
	ring := savedBench(t, "ring-run", "ib", "ring")
	tree := savedBench(t, "tree-run", "ib", "tree")
	code, out, errb := runDoctorCLI(t, "", "bench", "compare", ring, tree)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errb)
	}
	// Labels fall back to the run names (both variants are "ring"/"tree": unique already).
	for _, want := range []string{"baseline: ring;", "SIZE", "tree/ring", "1 GiB    23.49  19.5   0.83", "PEAK"} {
		if !strings.Contains(out, want) {
			t.Errorf("text lacks %q:\n%s", want, out)
		}
	}
	code, out, _ = runDoctorCLI(t, "", "bench", "compare", ring, tree, "-o", "csv")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if code != 0 || lines[0] != "size,ring_busbw,tree_busbw,tree_ratio" || lines[28] != "1073741824,23.49,19.5,0.8299" || lines[1] != "8,0,0,1.6595" {
		t.Errorf("csv exit %d:\n%s", code, out)
	}
	other := savedBench(t, "ring-other", "ib", "ring")
	code, out, _ = runDoctorCLI(t, "", "bench", "compare", ring, other, "-o", "json")
	if code != 0 || !strings.Contains(out, `"baseline": "ring-run/ring"`) || !strings.Contains(out, `"label": "ring-other/ring"`) {
		t.Errorf("same run twice: exit %d\n%.400s", code, out)
	}
	for _, args := range [][]string{
		{"bench", "compare"},
		{"bench", "compare", ring},
		{"bench", "compare", ring, tree, "-o", "yaml"},
		{"bench", "compare", ring, filepath.Join(t.TempDir(), "missing.json")},
		{"bench", "plot", ring},
		{"bench", "plot", ring, "-o", "x.gif"},
		{"bench", "plot", "-o", "x.png"},
		{"bench", "plot", ring, "-o", "x.png", "--width", "5"},
		{"bench", "allreduce", "--algo", "nvls"},
		{"bench", "allreduce", "--qps", "0"},
		{"bench", "allreduce", "--proto", "fast"},
		{"bench", "allreduce", "--min", "eight"},
		{"bench", "allreduce", "-o", "yaml"},
		{"bench", "allreduce", "--algo", "ring", "--set", "nccl.env.NCCL_ALGO=Tree"},
		{"bench", "allreduce", "qlora"},
	} {
		if code, _, errb := runDoctorCLI(t, "", args...); code != int(ainerr.Usage) {
			t.Errorf("%v: exit %d, want %d\n%s", args, code, ainerr.Usage, errb)
		}
	}
}

func TestBenchPlot(t *testing.T) {
	all := savedBench(t, "all", "ib", "default", "ring", "tree")
	sock := savedBench(t, "sock", "socket", "socket")
	dir := t.TempDir()
	pngPath := filepath.Join(dir, "busbw.png")
	code, _, errb := runDoctorCLI(t, "", "bench", "plot", all, sock, "-o", pngPath, "--width", "800", "--height", "400")
	if code != 0 || !strings.Contains(errb, "4 series: default, ring, tree, socket") {
		t.Fatalf("exit %d: %s", code, errb)
	}
	b, _ := os.ReadFile(pngPath)
	img, err := png.Decode(bytes.NewReader(b))
	if err != nil || img.Bounds().Dx() != 800 || img.Bounds().Dy() != 400 {
		t.Fatalf("png: %v", err)
	}
	svgPath := filepath.Join(dir, "busbw.svg")
	if code, _, errb := runDoctorCLI(t, "", "bench", "plot", filepath.Dir(all), "-o", svgPath); code != 0 {
		t.Fatalf("svg: exit %d %s", code, errb)
	}
	svg, _ := os.ReadFile(svgPath)
	if !bytes.HasPrefix(bytes.TrimSpace(svg), []byte("<?xml")) || !bytes.Contains(svg, []byte(`width="750pt" height="450pt"`)) {
		t.Errorf("svg head: %.300s", svg)
	}
	for _, l := range []string{">default<", ">ring<", ">tree<"} {
		if !bytes.Contains(svg, []byte(l)) {
			t.Errorf("svg lacks the legend %s", l)
		}
	}
}
