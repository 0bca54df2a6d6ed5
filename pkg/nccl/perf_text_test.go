package nccl

import (
	"path/filepath"
	"strings"
	"testing"
)

// A run with wrong values is a PROBLEM, with its out-of-bounds count; its table has a row per
// size, the sizes in nccl-tests' units.
func TestWritePerfText(t *testing.T) {
	runs := parsePerfFile(t, filepath.Join("testdata", "perf", "all_reduce-wrong-failed.txt"))
	if runs[0].OK() {
		t.Error("a run with #wrong 512 is OK")
	}
	var b strings.Builder
	if err := WritePerfText(&b, runs, false); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(b.String(), "\n")
	if !strings.HasPrefix(lines[0], "PROBLEM: all_reduce_perf, ranks 16 (inferred from busbw/algbw), 3 sizes, max busbw 49.09 GB/s, avg busbw 39.7617 GB/s") ||
		lines[1] != "  problem: 2 out-of-bounds values: the results are wrong, not just slow" ||
		!strings.HasPrefix(lines[2], "SIZE") || !strings.HasPrefix(lines[4], "2M ") || !strings.Contains(lines[4], " 512 ") {
		t.Errorf("text:\n%s", b.String())
	}
}

// The model's text gives the crossover and one row per size with the faster algorithm.
func TestModelWriteText(t *testing.T) {
	res, err := AllReduceModel(ModelParams{Nodes: 2, GPUsPerNode: 8, LinkGbps: 400, Intra: "nvlink"}, 8, 1<<30, 4, "both")
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	if err := res.WriteText(&b, false); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	if !strings.HasPrefix(out, "allreduce model: 2 nodes x 8 GPUs = 16 ranks, 8 x 400 Gb/s NICs per node") ||
		!strings.Contains(out, "crossover: ring is faster from 63697455 bytes") || !strings.Contains(out, "\n128M ") || !strings.Contains(out, "ring\n\n(GB/s") || !strings.HasSuffix(out, "small-message times are pessimistic)\n") {
		t.Errorf("text:\n%s", out)
	}
}
