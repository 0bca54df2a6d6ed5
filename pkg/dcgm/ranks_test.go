package dcgm

import (
	"context"
	"errors"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ain-hpc/ain/internal/golden"
)

var at = time.Date(2026, 12, 5, 10, 0, 0, 0, time.UTC)

// idleRankPods are the 8 pods of idle-rank.txt, one GPU each on gpu-node-07, and one pod of
// the job that has no GPU on the page.
func idleRankPods() []RankPod {
	var pods []RankPod
	for i, sfx := range []string{"x7k2p", "m9q4z", "b5t8d", "w2n6f", "h4r7c", "p8v2k", "c6m9x", "t2z5q"} {
		pods = append(pods, RankPod{Namespace: "ml-team", Pod: fmt.Sprintf("llama-ft-node-0-%d-%s", i, sfx), Node: "gpu-node-07", Label: fmt.Sprintf("rank %d", i)})
	}
	return pods
}

func TestRanksStraggler(t *testing.T) {
	s := golden.Parse(t, "testdata/idle-rank.txt", Parse)
	pods := append(idleRankPods(), RankPod{Namespace: "ml-team", Pod: "llama-ft-node-1-0-aaaaa", Node: "gpu-node-08", Label: "rank 8"},
		RankPod{Namespace: "ml-team", Pod: "llama-ft-launcher", Node: "gpu-node-08", Label: "launcher", MayHaveNoGPU: true})
	snap := Ranks(s.GPUs, pods, at)
	if len(snap.Ranks) != 8 || len(snap.Missing) != 1 || snap.Missing[0].Label != "rank 8" {
		t.Fatalf("ranks %d, missing %+v", len(snap.Ranks), snap.Missing)
	}
	if snap.Bound != Straggler || !slices.Equal(snap.Idle, []string{"rank 5"}) {
		t.Fatalf("bound %q idle %v, want straggler [rank 5]", snap.Bound, snap.Idle)
	}
	var b strings.Builder
	snap.WriteLines(&b, "  ")
	out := b.String()
	for _, want := range []string{
		"  GPU 10:00:00 rank 5 on gpu-node-07 (1 GPU): util 0% SM 0%",
		"  GPU 10:00:00 rank 8 on gpu-node-08: no GPU of the exporter is mapped to this pod",
		"rank 5 below 25% while other ranks work",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("lines lack %q:\n%s", want, out)
		}
	}
	if strings.Count(out, "\n") != 10 {
		t.Errorf("want 8 rank lines, 1 missing, 1 verdict:\n%s", out)
	}
}

func TestRanksGPUBoundAndUnmapped(t *testing.T) {
	s := golden.Parse(t, "testdata/healthy-8gpu.txt", Parse)
	snap := Ranks(s.GPUs, []RankPod{{Namespace: "ml-team", Pod: "bert-pretrain-worker-0", Node: s.GPUs[0].Host, Label: "worker-0"}}, at)
	if len(snap.Ranks) != 1 || snap.Ranks[0].GPUs != 8 || snap.Bound != GPUBound {
		t.Fatalf("%+v", snap)
	}
	r := snap.Ranks[0]
	if r.FBTotalMiB == nil || *r.FBTotalMiB < 8*79*1024 || *r.FBTotalMiB > 8*82*1024 {
		t.Errorf("framebuffer total %v MiB for 8 H100 80GB", r.FBTotalMiB)
	}
	if !strings.Contains(snap.Verdict(), "GPU-bound") {
		t.Errorf("verdict %q", snap.Verdict())
	}

	// xid79.txt has no pod labels: no GPU can be given to a rank, and nothing is judged.
	x := golden.Parse(t, "testdata/xid79.txt", Parse)
	snap = Ranks(x.GPUs, []RankPod{{Namespace: "ml-team", Pod: "p", Node: "n", Label: "worker-0"}}, at)
	if !snap.Unmapped || len(snap.Ranks) != 0 || snap.Bound != Mixed {
		t.Fatalf("%+v", snap)
	}
}

func TestJudge(t *testing.T) {
	pct := func(v float64) *float64 { return &v }
	rank := func(label string, util, sm *float64) RankGPUs {
		return RankGPUs{Pod: RankPod{Label: label}, GPUs: 1, UtilPct: util, SMActive: sm}
	}
	for _, c := range []struct {
		name  string
		ranks []RankGPUs
		want  Boundness
		idle  []string
	}{
		{"all idle", []RankGPUs{rank("a", pct(3), nil), rank("b", pct(10), nil)}, Waiting, nil},
		// NCCL's kernels spin while they wait on the network: util 100%, SM activity low. SM wins.
		{"spinning kernels", []RankGPUs{rank("a", pct(100), pct(0.05)), rank("b", pct(100), pct(0.08))}, Waiting, nil},
		{"between", []RankGPUs{rank("a", pct(50), nil), rank("b", pct(90), nil)}, Mixed, nil},
		// GPU_UTIL alone: high for compute and for NCCL waiting alike, so not called GPU-bound.
		{"util only", []RankGPUs{rank("a", pct(99), nil), rank("b", pct(97), nil)}, KernelsRunning, nil},
		{"busy by SM", []RankGPUs{rank("a", pct(99), pct(0.9)), rank("b", pct(97), pct(0.8))}, GPUBound, nil},
		{"one page util only", []RankGPUs{rank("a", pct(99), pct(0.9)), rank("b", pct(97), nil)}, KernelsRunning, nil},
		{"one idle", []RankGPUs{rank("a", pct(95), nil), rank("b", pct(2), nil), rank("c", pct(40), nil)}, Straggler, []string{"b"}},
		{"no field", []RankGPUs{rank("a", nil, nil)}, Mixed, nil},
	} {
		got, idle := judge(c.ranks)
		if got != c.want || !slices.Equal(idle, c.idle) {
			t.Errorf("%s: %q %v, want %q %v", c.name, got, idle, c.want, c.idle)
		}
	}
}

// TestSamplerReadsEachNodeOnce: the pods' nodes are read once each, in order; a read error is
// kept beside what was read.
func TestSamplerReadsEachNodeOnce(t *testing.T) {
	s := golden.Parse(t, "testdata/idle-rank.txt", Parse)
	var asked [][]string
	sm := Sampler{
		Read: func(_ context.Context, nodes []string) ([]GPU, error) {
			asked = append(asked, nodes)
			return s.GPUs, errors.New("dcgm-exporter gpu-operator/x on gpu-node-09: timeout\nmore")
		},
		Now: func() time.Time { return at },
	}
	pods := idleRankPods()
	pods = append(pods, RankPod{Namespace: "ml-team", Pod: "other", Node: "gpu-node-09", Label: "rank 9"})
	snap := sm.Sample(context.Background(), pods)
	if len(asked) != 1 || !slices.Equal(asked[0], []string{"gpu-node-07", "gpu-node-09"}) {
		t.Fatalf("read %v", asked)
	}
	if !snap.At.Equal(at) || len(snap.Ranks) != 8 || snap.Err == "" {
		t.Fatalf("%+v", snap)
	}
	var b strings.Builder
	snap.WriteLines(&b, "")
	if !strings.Contains(b.String(), "GPU 10:00:00: dcgm-exporter gpu-operator/x on gpu-node-09: timeout\n") || strings.Contains(b.String(), "more") {
		t.Errorf("the error's first line only:\n%s", b.String())
	}
}

// TestRankOnMIG: a MIG instance's GPU_UTIL (0 there) is not read; its graphics engine activity
// is, so a busy instance is not called idle.
func TestRankOnMIG(t *testing.T) {
	zero, gr := 0.0, 0.93
	r := rankOf(RankPod{Label: "worker-0"}, []GPU{{GPU: "0", MIGID: "1", MIG: "3g.40gb", UtilPct: &zero, GREngineActive: &gr}})
	if pct, ok := r.Busy(); !ok || pct < 90 || r.UtilPct != nil {
		t.Fatalf("busy %v %v, util %v", pct, ok, r.UtilPct)
	}
	g := GPU{GPU: "0", MIGID: "1", UtilPct: &zero, GREngineActive: &gr}
	if pct, ok := g.Busy(); !ok || pct < 90 {
		t.Errorf("GPU.Busy on MIG: %v %v", pct, ok)
	}
}

// TestIdleGPUInsideAPod: one pod on 8 GPUs, GPU 5 idle while the others work: its mean (85%)
// would call the job GPU-bound; the GPU is named instead.
func TestIdleGPUInsideAPod(t *testing.T) {
	var gs []GPU
	for i := range 8 {
		sm := 0.97
		if i == 5 {
			sm = 0.02
		}
		gs = append(gs, GPU{Host: "n1", GPU: fmt.Sprint(i), Namespace: "ns", Pod: "p", SMActive: &sm})
	}
	snap := Ranks(gs, []RankPod{{Namespace: "ns", Pod: "p", Node: "n1", Label: "worker-0"}}, at)
	if snap.Bound != Straggler || !slices.Equal(snap.Idle, []string{"worker-0 GPU 5"}) {
		t.Fatalf("bound %s idle %v", snap.Bound, snap.Idle)
	}
}

// TestRanksWithOldNamespaceLabels: an exporter run with --use-old-namespace labels GPUs
// pod_name, pod_namespace and container_name; its ranks map as with pod, namespace, container.
// A --kubernetes-gpu-id-type device-name exporter (GKE) writes the same gpu and device labels
// (only its pod lookup differs), which idle-rank.txt already has.
func TestRanksWithOldNamespaceLabels(t *testing.T) {
	b, err := os.ReadFile("testdata/idle-rank.txt")
	if err != nil {
		t.Fatal(err)
	}
	page := regexp.MustCompile(`container="([^"]*)",namespace="([^"]*)",pod="([^"]*)"`).
		ReplaceAllString(string(b), `container_name="$1",pod_name="$3",pod_namespace="$2"`)
	if strings.Contains(page, `pod="`) || !strings.Contains(page, `pod_name="llama-ft-node-0-5-p8v2k"`) {
		t.Fatal("the page was not rewritten")
	}
	s, err := Parse(strings.NewReader(page))
	if err != nil {
		t.Fatal(err)
	}
	if s.GPUs[0].Container != "node" || s.GPUs[0].PodName() != "ml-team/llama-ft-node-0-0-x7k2p" {
		t.Fatalf("%+v", s.GPUs[0])
	}
	snap := Ranks(s.GPUs, idleRankPods(), at)
	if snap.Unmapped || len(snap.Ranks) != 8 || snap.Bound != Straggler || !slices.Equal(snap.Idle, []string{"rank 5"}) {
		t.Fatalf("unmapped %v, %d ranks, %s %v", snap.Unmapped, len(snap.Ranks), snap.Bound, snap.Idle)
	}
}

// TestRankLinesShowTheirReadTime: a sample spans its pages' reads; each rank's line (and its
// At) is its own page's read time, the verdict the sample's end.
func TestRankLinesShowTheirReadTime(t *testing.T) {
	sm := 0.95
	end := at.Add(10 * time.Second)
	sm1 := Sampler{
		Read: func(context.Context, []string) ([]GPU, error) {
			return []GPU{
				{Host: "n1", GPU: "0", Namespace: "ns", Pod: "w0", SMActive: &sm, ReadAt: at.Add(time.Second)},
				{Host: "n2", GPU: "0", Namespace: "ns", Pod: "w1", SMActive: &sm, ReadAt: at.Add(9 * time.Second)},
			}, nil
		},
		Now: func() time.Time { return end },
	}
	snap := sm1.Sample(context.Background(), []RankPod{{Namespace: "ns", Pod: "w0", Node: "n1", Label: "worker-0"}, {Namespace: "ns", Pod: "w1", Node: "n2", Label: "worker-1"}})
	if len(snap.Ranks) != 2 || !snap.Ranks[0].At.Equal(at.Add(time.Second)) || !snap.At.Equal(end) {
		t.Fatalf("%+v", snap)
	}
	lines := snap.Lines()
	for i, want := range []string{"GPU 10:00:01 worker-0 on n1", "GPU 10:00:09 worker-1 on n2", "GPU 10:00:10 every rank's GPUs are busy"} {
		if i >= len(lines) || !strings.HasPrefix(lines[i], want) {
			t.Errorf("line %d: want %q in\n%s", i, want, strings.Join(lines, "\n"))
		}
	}
}
