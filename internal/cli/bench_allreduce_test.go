package cli

import (
	"bytes"
	"context"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ain-hpc/ain/internal/ainerr"
	"github.com/ain-hpc/ain/pkg/bench"
	"github.com/ain-hpc/ain/pkg/figure"
	"github.com/ain-hpc/ain/pkg/nccl"
	"github.com/ain-hpc/ain/pkg/sandbox"
	"github.com/ain-hpc/ain/pkg/sandbox/sandboxtest"
)

// runBenchCLI runs the command tree in-process with the real clock (variants are timed) and a
// private cache folder (the preflight caches its result there).
func runBenchCLI(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	cache := t.TempDir()
	getenv := func(k string) string {
		if k == "XDG_CACHE_HOME" {
			return cache
		}
		return ""
	}
	a := &App{Streams: Streams{In: strings.NewReader(""), Out: &out, Err: &errb}, Now: time.Now, Getenv: getenv}
	code := a.Run(context.Background(), append([]string{"ain"}, args...))
	return code, out.String(), errb.String()
}

// benchProfile writes a profile like the sandbox samples' fabric: 200 Gb/s HDR (25 GB/s per rank).
func benchProfile(t *testing.T) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "profile.yaml")
	if err := os.WriteFile(p, []byte("apiVersion: ain.dev/v1alpha1\nkind: FabricProfile\nmetadata: {name: hdr}\nspec:\n  fabric: ib\n  lineRate: 200Gb\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// samplePerf parses the sandbox's recorded sample the way ain reads it from a launcher.
func samplePerf(t *testing.T, name string) *nccl.PerfRun {
	t.Helper()
	raw, err := sandbox.RenderSample("nccl-tests/all_reduce_perf-"+name+".txt", sandbox.SampleData{Job: "x", Namespace: "x", Fabric: "ib", Hosts: []string{"a", "b", "c"}})
	if err != nil {
		t.Fatal(err)
	}
	runs, err := nccl.ParsePerf(strings.NewReader(raw))
	if err != nil || len(runs) != 1 {
		t.Fatalf("sample %s: %d runs, %v", name, len(runs), err)
	}
	return runs[0]
}

func TestBenchAllreduceSandboxAlgoAll(t *testing.T) {
	sb := sandboxtest.Get(t)
	ns := sb.Namespace(t)
	out := filepath.Join(t.TempDir(), "results")
	t0 := time.Now()
	code, stdout, stderr := runBenchCLI(t, "bench", "allreduce", "--algo", "all", "--profile", benchProfile(t), "--out", out,
		"--timeout", "5m", "--kubeconfig", sb.Kubeconfig, "-n", ns)
	t.Logf("ain bench allreduce --algo all: %s on the sandbox", time.Since(t0).Round(time.Second))
	if code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	for _, want := range []string{"preflight: ", "3 variant(s) (auto, ring, tree)", "one after another on the same nodes", "[1/3] auto: applied MPIJob " + ns + "/allreduce-auto-",
		"[3/3] tree: Succeeded in"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr)
		}
	}
	for _, want := range []string{"verdict: Tree wins below 1 MiB, ring from 1 MiB on", "94% of line rate at 1 GiB", "the fabric is healthy",
		"peak ring:", "23.49 GB/s at 1 GiB = 94% of line rate", "ring/tree crossover (ring vs tree): measured 1 MiB (tree faster up to 512 KiB)"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("stdout lacks %q:\n%s", want, stdout)
		}
	}
	res, err := bench.Load(out)
	if err != nil {
		t.Fatal(err)
	}
	if !res.Valid || len(res.Variants) != 3 || !res.SameNodes || res.Namespace != ns || res.LineRateGBps != 25 {
		t.Fatalf("result: valid %v variants %d sameNodes %v problems %v", res.Valid, len(res.Variants), res.SameNodes, res.Problems)
	}
	// Every variant ran through the training-operator, on the same three nodes, and its numbers
	// are the recorded sample's, row by row.
	for i, sampleName := range []string{"default", "ring", "tree"} {
		v := res.Variants[i]
		if v.Phase != "Succeeded" || v.Transport != "ib" || !v.OutOfBoundsOK || len(v.Nodes) != 3 || v.Seconds <= 0 || !strings.HasPrefix(v.Job, "allreduce-"+v.Name+"-") {
			t.Errorf("variant %s: phase %s transport %s oob %v nodes %v seconds %v job %s", v.Name, v.Phase, v.Transport, v.OutOfBoundsOK, v.Nodes, v.Seconds, v.Job)
		}
		t.Logf("variant %s: %.1fs on %v", v.Name, v.Seconds, v.Nodes)
		want := samplePerf(t, sampleName)
		if len(v.Perf.Rows) != len(want.Rows) || len(res.Sizes) != len(want.Rows) {
			t.Fatalf("%s: %d rows, sample has %d", v.Name, len(v.Perf.Rows), len(want.Rows))
		}
		for j, row := range want.Rows {
			c := res.Sizes[j].Cells[i]
			if res.Sizes[j].Size != row.Size || c.TimeUs != row.OOP.TimeUs || c.Algbw != row.OOP.Algbw || c.Busbw != row.OOP.Busbw ||
				v.Perf.Rows[j].IP.TimeUs != row.IP.TimeUs || v.Perf.Rows[j].IP.Busbw != row.IP.Busbw || *v.Perf.Rows[j].IP.Wrong != *row.IP.Wrong {
				t.Errorf("%s at %d: report %+v, sample %+v", v.Name, row.Size, c, row.OOP)
			}
		}
		peak := 0.0
		for _, row := range want.Rows {
			peak = max(peak, row.OOP.Busbw)
		}
		if res.Peaks[i].Busbw != peak {
			t.Errorf("%s: peak %v, sample's largest out-of-place busbw %v", v.Name, res.Peaks[i].Busbw, peak)
		}
		if len(v.Tuning) != len(want.Rows) || !strings.Contains(v.Raw, "# Out of bounds values : 0 OK") {
			t.Errorf("%s: %d TUNING choices; raw output kept: %v", v.Name, len(v.Tuning), strings.Contains(v.Raw, "Out of bounds"))
		}
	}
	if !bench.SameSet(res.Variants[0].Nodes, res.Variants[2].Nodes) {
		t.Errorf("variants ran on different nodes: %v %v", res.Variants[0].Nodes, res.Variants[2].Nodes)
	}
	// The files: JSON (read above), CSV, a PNG of the default size, SVG, the launcher logs.
	csv, err := os.ReadFile(filepath.Join(out, bench.ResultCSV))
	if err != nil || strings.Count(string(csv), "\n") != 1+3*31 {
		t.Errorf("csv: %v, %d lines", err, strings.Count(string(csv), "\n"))
	}
	f, err := os.Open(filepath.Join(out, bench.PlotPNG))
	if err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(f)
	f.Close()
	if err != nil || img.Bounds().Dx() != figure.DefaultWidth || img.Bounds().Dy() != figure.DefaultHeight {
		t.Errorf("png: %v %v", err, img)
	}
	for _, name := range []string{bench.PlotSVG, "auto.log", "ring.log", "tree.log"} {
		if st, err := os.Stat(filepath.Join(out, name)); err != nil || st.Size() == 0 {
			t.Errorf("%s: %v", name, err)
		}
	}
	// Each MPIJob was deleted once read; the results are never overwritten.
	pods, err := sb.Clientset(t).CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{})
	if err != nil || len(pods.Items) != 0 {
		t.Errorf("pods left: %v %d", err, len(pods.Items))
	}
	code, _, stderr = runBenchCLI(t, "bench", "allreduce", "--out", out, "--kubeconfig", sb.Kubeconfig, "-n", ns)
	if code != int(ainerr.Usage) || !strings.Contains(stderr, "never overwritten") {
		t.Errorf("second run into the same --out: exit %d\n%s", code, stderr)
	}
	// compare and plot read the saved run back.
	code, stdout, stderr = runBenchCLI(t, "bench", "compare", out, "-o", "csv")
	if code != 0 || !strings.HasPrefix(stdout, "size,auto_busbw,ring_busbw,ring_ratio,tree_busbw,tree_ratio\n") {
		t.Errorf("compare: exit %d\n%s%s", code, stdout, stderr)
	}
}

func TestBenchAllreduceSandboxSocketFallback(t *testing.T) {
	sb := sandboxtest.Get(t)
	ns := sb.Namespace(t)
	out := filepath.Join(t.TempDir(), "socket")
	// An NCCL_IB_HCA that matches no device: NCCL falls back to TCP sockets and the job succeeds.
	code, stdout, stderr := runBenchCLI(t, "bench", "allreduce", "--algo", "ring", "--set", "nccl.env.NCCL_IB_HCA==mlx5_99:1", "--profile", benchProfile(t), "--skip-preflight",
		"--out", out, "--timeout", "3m", "--kubeconfig", sb.Kubeconfig, "-n", ns)
	if code != int(ainerr.CheckFailed) {
		t.Fatalf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, ainerr.CheckFailed, stdout, stderr)
	}
	for _, want := range []string{"verdict: INVALID: in variant ring NCCL fell back to TCP sockets", "PROBLEM ring: socket-fallback:", "INVALID"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("stdout lacks %q:\n%s", want, stdout)
		}
	}
	if !strings.Contains(stderr, "error: the bench result is INVALID: ring: socket-fallback") || strings.Contains(stdout, "healthy") {
		t.Errorf("stderr:\n%s", stderr)
	}
	res, err := bench.Load(out)
	if err != nil || res.Valid || res.Variants[0].Transport != "socket" {
		t.Fatalf("saved result: %v valid=%v", err, res != nil && res.Valid)
	}
	// The TCP baseline on purpose (--fabric socket) is a valid measurement, judged as a baseline.
	out2 := filepath.Join(t.TempDir(), "baseline")
	code, stdout, stderr = runBenchCLI(t, "bench", "allreduce", "--fabric", "socket", "--profile", benchProfile(t), "--skip-preflight",
		"--out", out2, "--timeout", "3m", "--kubeconfig", sb.Kubeconfig, "-n", ns, "-o", "json")
	if code != 0 {
		t.Fatalf("--fabric socket: exit %d\n%s", code, stderr)
	}
	if !strings.Contains(stdout, `"fabric": "socket"`) || !strings.Contains(stdout, "this is the baseline RDMA must beat") {
		t.Errorf("baseline JSON:\n%.2000s", stdout)
	}
}

// Another workload holding GPUs on the bench's nodes while it runs (on hardware it shares the
// HCAs, halving both runs; the sandbox simulates no contention): the variant is INVALID and
// says whose pods, on which nodes.
func TestBenchAllreduceSandboxSharedNodes(t *testing.T) {
	sb := sandboxtest.Get(t)
	ns := sb.Namespace(t)
	other := sb.Namespace(t)
	cs := sb.Clientset(t)
	for _, node := range []string{"gpu-node-1", "gpu-node-2", "gpu-node-3"} {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "training-" + node},
			Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "train", Image: "pytorch",
				Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("4")}}}}}}
		if _, err := cs.CoreV1().Pods(other).Create(context.Background(), p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	out := filepath.Join(t.TempDir(), "shared")
	code, stdout, stderr := runBenchCLI(t, "bench", "allreduce", "--algo", "ring", "--nodes", "2", "--gpus-per-node", "4", "--profile", benchProfile(t), "--skip-preflight",
		"--out", out, "--timeout", "3m", "--kubeconfig", sb.Kubeconfig, "-n", ns)
	if code != int(ainerr.CheckFailed) {
		t.Fatalf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, ainerr.CheckFailed, stdout, stderr)
	}
	res, err := bench.Load(out)
	if err != nil || res.Valid {
		t.Fatalf("saved result: %v valid=%v", err, res != nil && res.Valid)
	}
	v := res.Variants[0]
	problems := strings.Join(v.Problems, "\n")
	for _, n := range v.Nodes {
		if !strings.Contains(problems, other+"/training-"+n+" on "+n) {
			t.Errorf("the problem does not name the pod on %s:\n%s", n, problems)
		}
	}
	if !strings.HasPrefix(problems, bench.ProblemSharedNodes+": ") || !strings.Contains(stdout, "shared-nodes") {
		t.Errorf("problems:\n%s\nstdout:\n%s", problems, stdout)
	}
}
