package bench

import (
	"fmt"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	kubeflowv1 "github.com/kubeflow/training-operator/pkg/apis/kubeflow.org/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/ain-hpc/ain/pkg/counters"
	"github.com/ain-hpc/ain/pkg/jobs"
	"github.com/ain-hpc/ain/pkg/nccl"
	"github.com/ain-hpc/ain/pkg/profile"
	"github.com/ain-hpc/ain/pkg/recipe"
	"github.com/ain-hpc/ain/pkg/sandbox"
)

// sample renders one of the sandbox's recorded nccl-tests outputs for a 3-worker MPIJob.
func sample(t *testing.T, name string) []byte {
	t.Helper()
	out, err := sandbox.RenderSample("nccl-tests/all_reduce_perf-"+name+".txt", sandbox.SampleData{
		Pod: "allreduce-launcher", Namespace: "default", Job: "allreduce", Role: "launcher", Fabric: "ib",
		Hosts: []string{"allreduce-worker-0", "allreduce-worker-1", "allreduce-worker-2"}, Env: map[string]string{},
	})
	if err != nil {
		t.Fatal(err)
	}
	return []byte(out)
}

func TestVariants(t *testing.T) {
	for _, tc := range []struct {
		o    PlanOptions
		want string // name:env;...
	}{
		{PlanOptions{}, "auto:"},
		{PlanOptions{Algos: []string{"auto"}}, "auto:"},
		{PlanOptions{Algos: []string{"ring"}}, "ring:NCCL_ALGO=Ring"},
		{PlanOptions{Algos: []string{"all"}}, "auto:;ring:NCCL_ALGO=Ring;tree:NCCL_ALGO=Tree"},
		{PlanOptions{Algos: []string{"auto"}, QPs: []int{1, 4}}, "qps1:NCCL_IB_QPS_PER_CONNECTION=1;qps4:NCCL_IB_QPS_PER_CONNECTION=4"},
		{PlanOptions{Algos: []string{"ring", "ring"}, Protos: []string{"simple", "ll128"}}, "ring-simple:NCCL_ALGO=Ring,NCCL_PROTO=Simple;ring-ll128:NCCL_ALGO=Ring,NCCL_PROTO=LL128"},
		{PlanOptions{Algos: []string{"auto", "tree"}, Protos: []string{"ll"}}, "auto-ll:NCCL_PROTO=LL;tree-ll:NCCL_ALGO=Tree,NCCL_PROTO=LL"},
	} {
		vs, err := Variants(tc.o)
		if err != nil {
			t.Fatalf("%+v: %v", tc.o, err)
		}
		var got []string
		for _, v := range vs {
			var env []string
			for _, k := range slices.Sorted(maps.Keys(v.Env)) {
				env = append(env, k+"="+v.Env[k])
			}
			got = append(got, v.Name+":"+strings.Join(env, ","))
		}
		if g := strings.Join(got, ";"); g != tc.want {
			t.Errorf("%+v: got %s, want %s", tc.o, g, tc.want)
		}
	}
	for _, bad := range []PlanOptions{{Algos: []string{"nvls"}}, {Protos: []string{"fast"}}, {QPs: []int{0}}, {QPs: []int{129}}} {
		if _, err := Variants(bad); err == nil {
			t.Errorf("%+v: no error", bad)
		}
	}
	if _, err := ParseQPs("1, 2,x"); err == nil {
		t.Error("ParseQPs accepted x")
	}
	if q, err := ParseQPs("1, 2,8"); err != nil || len(q) != 3 || q[2] != 8 {
		t.Errorf("ParseQPs: %v %v", q, err)
	}
	v := Variant{Name: "ring", Env: map[string]string{"NCCL_PROTO": "LL", "NCCL_ALGO": "Ring"}}
	if s := strings.Join(v.Sets(), " "); s != "nccl.env.NCCL_ALGO=Ring nccl.env.NCCL_PROTO=LL" {
		t.Errorf("Sets: %s", s)
	}
}

func TestAnalyzeSamples(t *testing.T) {
	for _, tc := range []struct {
		sample, fabric, transport string
		valid                     bool
		problem                   string
		firstChoice, lastChoice   string
	}{
		{"ring", "ib", "ib", true, "", "8:RING/LL", "8589934592:RING/SIMPLE"},
		{"tree", "ib", "ib", true, "", "8:TREE/LL", "8589934592:TREE/SIMPLE"},
		{"default", "ib", "ib", true, "", "8:TREE/LL", "8589934592:RING/SIMPLE"},
		{"socket", "ib", "socket", false, ProblemSocketFallback, "8:RING/LL", "8589934592:RING/SIMPLE"},
		{"socket", "roce", "socket", false, ProblemSocketFallback, "8:RING/LL", "8589934592:RING/SIMPLE"},
		{"socket", "socket", "socket", true, "", "8:RING/LL", "8589934592:RING/SIMPLE"},
	} {
		r := &VariantResult{Variant: Variant{Name: tc.sample}}
		Analyze(r, sample(t, tc.sample), tc.fabric)
		if r.Transport != tc.transport || r.Valid != tc.valid || !r.OutOfBoundsOK {
			t.Errorf("%s on %s: transport %s valid %v oob %v problems %v", tc.sample, tc.fabric, r.Transport, r.Valid, r.OutOfBoundsOK, r.Problems)
		}
		if tc.problem != "" && (len(r.Problems) == 0 || !strings.HasPrefix(r.Problems[0], tc.problem)) {
			t.Errorf("%s on %s: problems %v, want %s", tc.sample, tc.fabric, r.Problems, tc.problem)
		}
		if r.Perf == nil || len(r.Perf.Rows) != 31 || len(r.Tuning) != 31 {
			t.Fatalf("%s: perf %v tuning %d", tc.sample, r.Perf, len(r.Tuning))
		}
		choice := func(c SizeChoice) string { return strings.Join([]string{itoa(c.Size), c.Algo + "/" + c.Proto}, ":") }
		if f, l := choice(r.Tuning[0]), choice(r.Tuning[30]); f != tc.firstChoice || l != tc.lastChoice {
			t.Errorf("%s: tuning %s .. %s", tc.sample, f, l)
		}
		if !strings.Contains(r.Raw, "# Out of bounds values : 0 OK") {
			t.Errorf("%s: raw output not kept", tc.sample)
		}
	}
	// Wrong values and a missing trailer invalidate the run; no NCCL lines cannot be verified.
	raw := string(sample(t, "ring"))
	bad := strings.Replace(raw, "# Out of bounds values : 0 OK", "# Out of bounds values : 3 FAILED", 1)
	r := &VariantResult{}
	Analyze(r, []byte(bad), "ib")
	if r.Valid || r.OutOfBoundsOK || !strings.HasPrefix(r.Problems[0], ProblemOutOfBounds) {
		t.Errorf("out of bounds: %v", r.Problems)
	}
	cut := raw[:strings.Index(raw, "# Out of bounds")]
	Analyze(r, []byte(cut), "ib")
	if r.Valid || !strings.Contains(strings.Join(r.Problems, ";"), "did not finish") {
		t.Errorf("truncated: %v", r.Problems)
	}
	var plain []string
	for _, l := range strings.Split(raw, "\n") {
		if !strings.Contains(l, "NCCL") {
			plain = append(plain, l)
		}
	}
	Analyze(r, []byte(strings.Join(plain, "\n")), "ib")
	if r.Valid || !strings.HasPrefix(r.Problems[0], ProblemNoTransport) || len(r.Tuning) != 0 {
		t.Errorf("no NCCL lines: %v", r.Problems)
	}
	Analyze(r, []byte("mpirun: command not found\n"), "ib")
	if r.Valid || !strings.HasPrefix(r.Problems[0], ProblemNoTable) {
		t.Errorf("no table: %v", r.Problems)
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// threeVariants is the --algo all result of the sandbox's samples on a 200 Gb/s fabric.
func threeVariants(t *testing.T, lineRate float64) *Result {
	res := &Result{Name: "allreduce", Fabric: "ib", LineRate: "200Gb", LineRateGBps: lineRate, Nodes: 3, GPUsPerNode: 1, SameNodes: true}
	vs, _ := Variants(PlanOptions{Algos: []string{"all"}})
	for _, v := range vs {
		r := &VariantResult{Variant: v, Job: "allreduce-" + v.Name}
		s := v.Name
		if s == "auto" {
			s = "default"
		}
		Analyze(r, sample(t, s), "ib")
		res.Variants = append(res.Variants, r)
	}
	res.Summarize()
	return res
}

func TestSummarizeSamples(t *testing.T) {
	res := threeVariants(t, 25)
	if !res.Valid || len(res.Sizes) != 31 || len(res.Peaks) != 3 {
		t.Fatalf("valid %v sizes %d peaks %d problems %v", res.Valid, len(res.Sizes), len(res.Peaks), res.Problems)
	}
	// The numbers are the samples' (out-of-place columns).
	want := map[string]struct {
		busbw float64
		size  int64
		at1G  float64
	}{"auto": {23.73, 2 << 30, 23.39}, "ring": {23.49, 1 << 30, 23.49}, "tree": {19.62, 64 << 20, 19.50}}
	for _, p := range res.Peaks {
		w := want[p.Variant]
		if p.Busbw != w.busbw || p.Size != w.size || p.AtRef == nil || *p.AtRef != w.at1G {
			t.Errorf("peak %s: %+v, want %+v", p.Variant, p, w)
		}
		if math.Abs(*p.PctLineRate-100*w.busbw/25) > 1e-9 {
			t.Errorf("peak %s: %.3f%% of line rate", p.Variant, *p.PctLineRate)
		}
	}
	row := res.Sizes[17] // 1 MiB
	if row.Size != 1<<20 || row.Cells[1].TimeUs != 87.81 || row.Cells[1].Algbw != 11.94 || row.Cells[1].Busbw != 15.92 || row.Cells[2].TimeUs != 88.18 {
		t.Errorf("1 MiB row: %+v %+v", row.Cells[1], row.Cells[2])
	}
	if row.Cells[0].Algo != "RING" || row.Cells[0].Proto != "LL128" || res.Sizes[0].Cells[0].Algo != "TREE" {
		t.Errorf("NCCL choices: %+v %+v", row.Cells[0], res.Sizes[0].Cells[0])
	}
	// Crossover: tree faster up to 512 KiB, ring from 1 MiB; the model: 3 nodes x 1 GPU at 25 GB/s.
	c := res.Crossover
	if c == nil || c.Ring != "ring" || c.Tree != "tree" || *c.Measured != 1<<20 || *c.TreeWinsBelow != 512<<10 {
		t.Fatalf("crossover %+v", c)
	}
	ring, tree, _ := nccl.AllReduceCosts(nccl.ModelParams{Nodes: 3, GPUsPerNode: 1, NICsPerNode: 1, LinkGbps: 200, Intra: "nvlink"})
	if c.Predicted == nil || *c.Predicted != nccl.Crossover(ring, tree) || *c.Predicted < 800<<10 || *c.Predicted > 850<<10 {
		t.Errorf("predicted crossover %v", *c.Predicted)
	}
	// Model beside the measurement: ring at 1 GiB vs ring's formula.
	cell := res.Sizes[27].Cells[1]
	pred := float64(1<<30) / (1000 * ring.Time(float64(1<<30))) * 4 / 3
	if res.Sizes[27].Size != 1<<30 || math.Abs(*cell.ModelBusbw-pred) > 1e-9 || math.Abs(*cell.Deviation-(23.49/pred-1)) > 1e-9 {
		t.Errorf("model at 1 GiB: %v %v want %v", *cell.ModelBusbw, *cell.Deviation, pred)
	}
	d := res.Deviation
	if d == nil || d.Variant != "tree" || d.Size < ModelFromBytes {
		t.Fatalf("largest deviation %+v", d)
	}
	for i, v := range res.Variants {
		for _, row := range res.Sizes {
			if c := row.Cells[i]; row.Size >= ModelFromBytes && math.Abs(*c.Deviation) > math.Abs(d.Deviation)+1e-12 {
				t.Errorf("%s at %d deviates %v, more than the reported %v", v.Name, row.Size, *c.Deviation, d.Deviation)
			}
		}
	}
	for _, s := range []string{"Tree wins below 1 MiB, ring from 1 MiB on", "the model predicts the crossover at 813 KiB",
		"Peak busbw 23.73 GB/s at 2 GiB (auto)", "94% of line rate at 1 GiB", "the fabric is healthy"} {
		if !strings.Contains(res.Verdict, s) {
			t.Errorf("verdict lacks %q:\n%s", s, res.Verdict)
		}
	}
}

func TestMeasuredCrossover(t *testing.T) {
	sz := []int64{8, 16, 32, 64, 128}
	p := func(v *int64) string {
		if v == nil {
			return "nil"
		}
		return SizeLabel(*v)
	}
	for _, tc := range []struct {
		ring, tree  []float64
		from, below string
	}{
		{[]float64{10, 10, 10, 10, 10}, []float64{5, 6, 11, 20, 40}, "32 B", "16 B"},
		{[]float64{10, 10, 10, 10, 10}, []float64{11, 12, 13, 14, 15}, "8 B", "nil"},
		{[]float64{10, 10, 10, 10, 10}, []float64{1, 2, 3, 4, 5}, "nil", "nil"},
		// Noise below the crossover does not move it: ring must win at every larger size.
		{[]float64{10, 10, 10, 10, 10}, []float64{9, 11, 9, 12, 13}, "64 B", "32 B"},
		// A tie counts for ring (NCCL's tuner keeps ring on ties).
		{[]float64{10, 10, 10, 10, 10}, []float64{9, 9, 9, 10, 10}, "64 B", "32 B"},
	} {
		f, b := MeasuredCrossover(sz, tc.ring, tc.tree)
		if p(f) != tc.from || p(b) != tc.below {
			t.Errorf("ring %v tree %v: from %s below %s, want %s %s", tc.ring, tc.tree, p(f), p(b), tc.from, tc.below)
		}
	}
	if f, b := MeasuredCrossover(sz, []float64{1}, []float64{2}); f != nil || b != nil {
		t.Error("mismatched lengths")
	}
}

// synthetic builds a one-variant result (2 nodes x 2 GPUs, 2 x 400Gb NICs per node: a 100 GB/s
// busbw limit) whose busbw at every size is frac x the limit.
func synthetic(fabric string, frac float64) *Result {
	rows := []nccl.PerfRow{}
	for s := int64(1 << 20); s <= 4<<30; s *= 4 {
		bus := 100 * frac
		rows = append(rows, nccl.PerfRow{Size: s, OOP: &nccl.PerfCell{TimeUs: float64(s) / (1000 * bus / 1.5), Algbw: bus / 1.5, Busbw: bus}})
	}
	oob := int64(0)
	v := &VariantResult{Variant: Variant{Name: "auto", Env: map[string]string{}}, Perf: &nccl.PerfRun{Rows: rows, OutOfBounds: &oob},
		OutOfBoundsOK: true, Transport: fabric, Valid: true, Problems: []string{}}
	res := &Result{Fabric: fabric, LineRate: "400Gb", LineRateGBps: 50, Nodes: 2, GPUsPerNode: 2, Variants: []*VariantResult{v}}
	res.Summarize()
	return res
}

func TestVerdictLineRate(t *testing.T) {
	for _, tc := range []struct {
		fabric string
		frac   float64
		want   string
	}{
		{"ib", 0.92, "92% of line rate at 1 GiB (92.00 of 100.00 GB/s = 2 NICs x 50.00): the fabric is healthy"},
		{"ib", 0.80, "80% of line rate at 1 GiB"},
		{"ib", 0.65, "only 65% of line rate at 1 GiB"},
		{"roce", 0.30, "30% of line rate at 1 GiB (30.00 of 100.00 GB/s = 2 NICs x 50.00): far below"},
		{"socket", 0.05, "5% of the 400Gb line rate at 1 GiB over TCP sockets: this is the baseline RDMA must beat"},
	} {
		res := synthetic(tc.fabric, tc.frac)
		if !strings.Contains(res.Verdict, tc.want) {
			t.Errorf("%s %.2f: verdict\n%s\nlacks %q", tc.fabric, tc.frac, res.Verdict, tc.want)
		}
		if tc.frac == 0.80 && !strings.Contains(res.Verdict, "healthy") {
			t.Errorf("80%% is the healthy threshold: %s", res.Verdict)
		}
		if res.Crossover != nil {
			t.Errorf("crossover without ring and tree variants: %+v", res.Crossover)
		}
	}
	// The model: 2 nodes x 2 GPUs, 400Gb: measured at 92% of line rate, the model predicts auto as
	// the faster of ring and tree.
	res := synthetic("ib", 0.92)
	ring, tree, _ := nccl.AllReduceCosts(nccl.ModelParams{Nodes: 2, GPUsPerNode: 2, NICsPerNode: 2, LinkGbps: 400, Intra: "nvlink"})
	for _, row := range res.Sizes {
		tm := math.Min(ring.Time(float64(row.Size)), tree.Time(float64(row.Size)))
		want := float64(row.Size) / (1000 * tm) * 1.5
		if c := row.Cells[0]; math.Abs(*c.ModelBusbw-want) > 1e-9 || math.Abs(*c.Deviation-(92/want-1)) > 1e-9 {
			t.Errorf("%d: model %v deviation %v, want %v", row.Size, *c.ModelBusbw, *c.Deviation, want)
		}
	}
	if d := res.Deviation; d == nil || d.Size != 1<<20 {
		t.Errorf("largest deviation should be at the smallest modelled size: %+v", d)
	}
	if res.NICsPerNode != 2 || res.LimitGBps != 100 || res.AtLargest == nil || res.AtLargest.Size != 4<<30 ||
		!strings.Contains(res.Verdict, "The cost model holds on large messages (auto at 4 GiB: 92.00 measured,") {
		t.Errorf("model at the largest size %+v: %s", res.AtLargest, res.Verdict)
	}
	// Large messages far from the model: slower (a fabric problem), faster (a wrong lineRate).
	slow := synthetic("ib", 0.6)
	fast := synthetic("ib", 0.92)
	fast.LineRateGBps = 30
	fast.NICsPerNode = 0
	fast.Summarize()
	if !strings.Contains(slow.Verdict, "Large messages are slower than the cost model predicts (auto at 4 GiB: 60.00 measured, 99.92 predicted GB/s, -40%)") ||
		!strings.Contains(fast.Verdict, "Large messages are faster than the cost model predicts") || !strings.Contains(fast.Verdict, "lineRate is probably too low") {
		t.Errorf("model verdicts:\n%s\n%s", slow.Verdict, fast.Verdict)
	}
	// An invalid variant makes the whole result invalid and the verdict says so first.
	bad := threeVariants(t, 25)
	s := &VariantResult{Variant: Variant{Name: "ring", Env: map[string]string{"NCCL_ALGO": "Ring"}}}
	Analyze(s, sample(t, "socket"), "ib")
	bad.Variants[1] = s
	bad.Summarize()
	if bad.Valid || !strings.HasPrefix(bad.Verdict, "INVALID: in variant ring NCCL fell back to TCP sockets") || strings.Contains(bad.Verdict, "healthy") {
		t.Errorf("socket fallback verdict: %v %s", bad.Valid, bad.Verdict)
	}
}

func TestCompare(t *testing.T) {
	a := threeVariants(t, 25)
	sock := synthetic("socket", 0.1)
	ib := synthetic("ib", 0.9)
	series := SeriesOf([]*Result{ib, sock}, []string{"x/ib/result.json", "x/sock/result.json"})
	if series[0].Label != "ib/auto" || series[1].Label != "socket/auto" {
		t.Errorf("labels %s %s", series[0].Label, series[1].Label)
	}
	c, err := Compare(series)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range c.Rows {
		if r.Ratio[0] == nil || *r.Ratio[0] != 1 || math.Abs(*r.Ratio[1]-5.0/45) > 1e-12 {
			t.Errorf("ratios at %d: %v %v", r.Size, *r.Ratio[0], *r.Ratio[1])
		}
	}
	if math.Abs(*c.PeakRatio[1]-5.0/45) > 1e-12 {
		t.Errorf("peak ratio %v", *c.PeakRatio[1])
	}
	// Variants of one run: labels are the variant names; tree/ring ratios from the samples.
	c, err = Compare(SeriesOf([]*Result{a}, nil)[1:])
	if err != nil {
		t.Fatal(err)
	}
	if c.Baseline != "ring" || c.Series[1].Label != "tree" {
		t.Fatalf("baseline %s", c.Baseline)
	}
	r := c.Rows[27]
	if r.Size != 1<<30 || math.Abs(*r.Ratio[1]-60941.0/73436) > 1e-12 || math.Abs(*c.Rows[0].Ratio[1]-27.98/16.86) > 1e-12 {
		t.Errorf("1 GiB ratio %v; 8 B ratio (0.00 busbw) %v", *r.Ratio[1], c.Rows[0].Ratio[1])
	}
	// Same run twice: labels fall back to the run name, then the folder.
	b := threeVariants(t, 25)
	b.Name = "second"
	s := SeriesOf([]*Result{a, b}, nil)
	if s[0].Label != "allreduce/auto" || s[3].Label != "second/auto" {
		t.Errorf("labels %s %s", s[0].Label, s[3].Label)
	}
	s = SeriesOf([]*Result{a, a}, []string{"r/one/result.json", "r/two/result.json"})
	if s[0].Label != "one/auto" || s[5].Label != "two/tree" {
		t.Errorf("labels %s %s", s[0].Label, s[5].Label)
	}
	if _, err := Compare(s[:1]); err == nil {
		t.Error("one series compared")
	}
}

func TestSaveLoadNeverOverwrites(t *testing.T) {
	res := threeVariants(t, 25)
	base := filepath.Join(t.TempDir(), "ain-results", "20260102-030405-allreduce")
	d1, err := MakeDir(base, false)
	if err != nil || d1 != base {
		t.Fatal(d1, err)
	}
	files, err := Save(res, d1)
	if err != nil || len(files) != 7 {
		t.Fatal(files, err)
	}
	if _, err := Save(res, d1); err == nil {
		t.Error("Save replaced existing files")
	}
	d2, err := MakeDir(base, false)
	if err != nil || d2 != base+"-2" {
		t.Errorf("second default folder %s %v", d2, err)
	}
	if _, err := MakeDir(base, true); err == nil {
		t.Error("explicit --out over a non-empty folder accepted")
	}
	if d, err := MakeDir(d2, true); err != nil || d != d2 {
		t.Errorf("explicit empty folder: %s %v", d, err)
	}
	back, err := Load(d1)
	if err != nil {
		t.Fatal(err)
	}
	if back.Verdict != res.Verdict || len(back.Variants) != 3 || back.Variants[1].Raw != res.Variants[1].Raw || *back.Crossover.Measured != 1<<20 {
		t.Errorf("round trip lost data")
	}
	csv, _ := os.ReadFile(filepath.Join(d1, ResultCSV))
	lines := strings.Split(strings.TrimSpace(string(csv)), "\n")
	if len(lines) != 1+3*31 || lines[0] != strings.Join(CSVHeader, ",") {
		t.Fatalf("csv: %d lines, header %s", len(lines), lines[0])
	}
	if !strings.HasPrefix(lines[1+31+27], "ring,1073741824,60941,17.62,23.49,0,61912,17.34,23.12,0,93.96,") || !strings.HasSuffix(lines[1+31+27], ",RING,SIMPLE,ib,true") {
		t.Errorf("csv ring 1 GiB: %s", lines[1+31+27])
	}
	if _, err := Load(filepath.Join(d1, ResultCSV)); err == nil {
		t.Error("Load accepted a CSV")
	}
	if err := os.WriteFile(filepath.Join(d2, "x.json"), []byte(`{"kind":"Other"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(filepath.Join(d2, "x.json")); err == nil || !strings.Contains(err.Error(), "not an ain bench allreduce result") {
		t.Errorf("wrong kind: %v", err)
	}
}

func TestPinWorkers(t *testing.T) {
	job := &kubeflowv1.MPIJob{Spec: kubeflowv1.MPIJobSpec{MPIReplicaSpecs: map[kubeflowv1.ReplicaType]*kubeflowv1.ReplicaSpec{
		kubeflowv1.MPIJobReplicaTypeLauncher: {},
		kubeflowv1.MPIJobReplicaTypeWorker:   {},
	}}}
	if err := PinWorkers([]runtime.Object{job}, []string{"gpu-node-1", "gpu-node-2"}); err != nil {
		t.Fatal(err)
	}
	terms := job.Spec.MPIReplicaSpecs[kubeflowv1.MPIJobReplicaTypeWorker].Template.Spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms
	// The API server accepts one value per metadata.name field selector: one term per node.
	if len(terms) != 2 || len(terms[1].MatchFields) != 1 || terms[1].MatchFields[0].Key != "metadata.name" || len(terms[1].MatchFields[0].Values) != 1 || terms[1].MatchFields[0].Values[0] != "gpu-node-2" {
		t.Errorf("terms %+v", terms)
	}
	if job.Spec.MPIReplicaSpecs[kubeflowv1.MPIJobReplicaTypeLauncher].Template.Spec.Affinity != nil {
		t.Error("launcher pinned")
	}
	// Existing terms are kept, each ANDed with each node.
	zone := corev1.NodeSelectorRequirement{Key: "zone", Operator: corev1.NodeSelectorOpIn, Values: []string{"a", "b"}}
	w := job.Spec.MPIReplicaSpecs[kubeflowv1.MPIJobReplicaTypeWorker]
	w.Template.Spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms = []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{zone}}}
	_ = PinWorkers([]runtime.Object{job}, []string{"n1", "n2", "n3"})
	terms = w.Template.Spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms
	if len(terms) != 3 || len(terms[2].MatchExpressions) != 1 || terms[2].MatchFields[0].Values[0] != "n3" {
		t.Errorf("terms %+v", terms)
	}
	if err := PinWorkers([]runtime.Object{&corev1.Pod{}}, []string{"n1"}); err == nil {
		t.Error("a Pod pinned")
	}
}

// The v2beta1 MPIJob's workers and a TrainJob runtime's node pods are pinned; the launchers are not.
func TestPinWorkersBackends(t *testing.T) {
	r, err := recipe.Load("allreduce", nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, api := range []jobs.API{jobs.APIMPIOperator, jobs.APITrainer} {
		be, err := jobs.Choose(r, jobs.Served{}, api)
		if err != nil {
			t.Fatal(err)
		}
		b, err := be.Build(r, profile.Default(), jobs.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if err := PinWorkers(b.Objects, []string{"n1"}); err != nil {
			t.Fatalf("%s: %v", api, err)
		}
		out, _ := jobs.Encode(b.Objects, "yaml")
		if n := strings.Count(string(out), "metadata.name"); n != 1 {
			t.Errorf("%s: %d node field selectors, want 1 (workers only)\n%s", api, n, out)
		}
	}
}

// TestLimitCountsTheNICsUsed: planned with 2 NICs per node (a profile listing both HCAs of a
// 1-GPU node), the limit counts one NIC per GPU: the healthy samples must not read "47% ...
// suspect the fabric". Port counters that show more NICs busy raise it; fewer than expected keep
// it and say so. Summarize stays idempotent.
func TestLimitCountsTheNICsUsed(t *testing.T) {
	res := threeVariants(t, 25)
	res.NICsPerNode, res.PlannedNICs = 2, 0
	res.Summarize()
	res.Summarize()
	if res.NICsPerNode != 1 || res.PlannedNICs != 2 || res.LimitGBps != 25 || !strings.Contains(res.NICsNote, "1 GPU(s) per node drive 1 of the node's 2 NICs") {
		t.Fatalf("NICs %d (planned %d), limit %v, note %q", res.NICsPerNode, res.PlannedNICs, res.LimitGBps, res.NICsNote)
	}
	if !strings.Contains(res.Verdict, "the fabric is healthy") || strings.Contains(res.Verdict, "suspect the fabric") {
		t.Errorf("verdict: %s", res.Verdict)
	}
	wire := func(ports map[string]uint64) *Wire {
		n := WireNode{Node: "gpu-node-1", Ports: map[string]counters.Traffic{}}
		for p, b := range ports {
			n.Ports[p] = counters.Traffic{XmitBytes: b}
			n.Sent += b
		}
		return &Wire{Nodes: []WireNode{n}}
	}
	// Both ports carried half: NCCL spread the GPU over both NICs, and the limit counts both.
	res.Variants[0].Wire = wire(map[string]uint64{"mlx5_0:1": 500 << 30, "mlx5_1:1": 480 << 30})
	res.Summarize()
	if res.NICsPerNode != 2 || res.LimitGBps != 50 || !strings.Contains(res.NICsNote, "traffic on 2 NICs per node (mlx5_0:1, mlx5_1:1)") {
		t.Errorf("both busy: NICs %d, limit %v, note %q", res.NICsPerNode, res.LimitGBps, res.NICsNote)
	}
	// 8 GPUs and 8 NICs planned, traffic on 4: the limit stays 8 and the note says 4 were missing.
	res.GPUsPerNode, res.PlannedNICs = 8, 8
	ports := map[string]uint64{}
	for i := range 8 {
		if i < 4 {
			ports[fmt.Sprintf("mlx5_%d:1", i)] = 100 << 30
		} else {
			ports[fmt.Sprintf("mlx5_%d:1", i)] = 1 << 20
		}
	}
	res.Variants[0].Wire = wire(ports)
	res.Summarize()
	if res.NICsPerNode != 8 || !strings.Contains(res.NICsNote, "traffic on only 4 of the 8 NICs per node expected") {
		t.Errorf("4 of 8: NICs %d, note %q", res.NICsPerNode, res.NICsNote)
	}
}
