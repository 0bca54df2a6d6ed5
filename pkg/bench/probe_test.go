package bench

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes/fake"

	"github.com/ain-hpc/ain/pkg/ibport"
	"github.com/ain-hpc/ain/pkg/perftest"
	"github.com/ain-hpc/ain/pkg/preflight"
	"github.com/ain-hpc/ain/pkg/probe"
)

// PortRates keeps every port the probe saw (active or not, with or without a rate) and says why
// a node gave none.
func TestPortRates(t *testing.T) {
	hdr := "200 Gb/sec (4X HDR)"
	got, why := PortRates([]preflight.NodePorts{
		{Node: "gpu-1", Ports: []ibport.Port{{Device: "mlx5_0", Port: 1, Rate: &hdr, Ready: true}, {Device: "mlx5_1", Port: 1}}},
		{Node: "gpu-2", Err: "probe pod Pending: 0/3 nodes have rdma/rdma_shared_device_a"},
		{Node: "gpu-3", Err: "no IB device"},
	})
	want := []PortRate{{Node: "gpu-1", Port: "mlx5_0:1", Rate: hdr, Active: true}, {Node: "gpu-1", Port: "mlx5_1:1"}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("rates %+v, want %+v", got, want)
	}
	if why != "gpu-2: probe pod Pending: 0/3 nodes have rdma/rdma_shared_device_a; gpu-3: no IB device" {
		t.Errorf("why %q", why)
	}
	if got, why := PortRates(nil); got != nil || why != "" {
		t.Errorf("no nodes: %v %q", got, why)
	}
}

// A plan's result starts with the first recipe's shape and the profile's fabric; Finish times,
// summarises and saves it into the folder ResultDir made, never over an earlier result.
func TestNewResultFinish(t *testing.T) {
	var calls [][]string
	plan, err := NewPlan(PlanInput{Algo: "ring", Shape: Shape{Nodes: 3, GPUsPerNode: 1}, Run: "t3st"}, loader("allreduce", &calls))
	if err != nil {
		t.Fatal(err)
	}
	start := time.Date(2026, 12, 3, 9, 8, 7, 0, time.UTC)
	res := plan.NewResult("bench", start)
	if res.Name != "allreduce" || res.Recipe != "allreduce" || res.Namespace != "bench" || res.Nodes != 3 || res.GPUsPerNode != 1 ||
		res.Fabric != "ib" || res.LineRateGBps <= 0 || !res.SameNodes || !strings.HasSuffix(strings.Join(res.Command, " "), "all_reduce_perf -b 8 -e 8G -f 2 -g 1 -c 1") {
		t.Fatalf("result %+v", res)
	}
	v := &VariantResult{Variant: plan.Variants[0], Job: "j"}
	Analyze(v, sample(t, "ring"), "ib")
	res.Variants = append(res.Variants, v)

	base := t.TempDir()
	t.Chdir(base)
	dir, err := ResultDir("", start, "allreduce")
	if err != nil || dir != filepath.Join("ain-results", "20261203-090807-allreduce") {
		t.Fatalf("default dir %q %v", dir, err)
	}
	files, err := res.Finish(start.Add(90*time.Second), dir)
	if err != nil || len(files) != 5 {
		t.Fatalf("saved %v: %v", files, err)
	}
	if res.Seconds != 90 || len(res.Sizes) == 0 || res.Verdict == "" {
		t.Errorf("not finished: seconds %v sizes %d verdict %q", res.Seconds, len(res.Sizes), res.Verdict)
	}
	// The default folder gets a suffix; a given one must be new or empty.
	if again, err := ResultDir("", start, "allreduce"); err != nil || again != dir+"-2" {
		t.Errorf("second default dir %q %v", again, err)
	}
	if _, err := ResultDir(dir, start, "x"); err == nil || !strings.Contains(err.Error(), "never overwritten") {
		t.Errorf("explicit dir with a result: %v", err)
	}
	empty := filepath.Join(base, "mine")
	if err := os.Mkdir(empty, 0o755); err != nil {
		t.Fatal(err)
	}
	if got, err := ResultDir(empty, start, "x"); err != nil || got != empty {
		t.Errorf("explicit empty dir %q %v", got, err)
	}
}

func TestReportWording(t *testing.T) {
	n := func(v int64) *int64 { return &v }
	for _, c := range []struct {
		c          CrossoverResult
		meas, pred string
	}{
		{CrossoverResult{}, "none: tree is faster at the largest size", "none (tree always faster)"},
		{CrossoverResult{Measured: n(8), Predicted: n(0)}, "none: ring is at least as fast at every size", "none (ring always faster)"},
		{CrossoverResult{Measured: n(1 << 20), TreeWinsBelow: n(512 << 10), Predicted: n(786432)}, "1 MiB (tree faster up to 512 KiB)", "786432 bytes (768 KiB)"},
	} {
		if m, p := c.c.Describe(); m != c.meas || p != c.pred {
			t.Errorf("%+v: %q, %q", c.c, m, p)
		}
	}
	v := &VariantResult{}
	if got := v.OutOfBoundsText(); got != "-" {
		t.Errorf("no check: %q", got)
	}
	Analyze(v, sample(t, "ring"), "ib")
	if got := v.OutOfBoundsText(); got != "0 OK" {
		t.Errorf("ok: %q", got)
	}
	bad := strings.Replace(string(sample(t, "ring")), "# Out of bounds values : 0 OK", "# Out of bounds values : 3 FAILED", 1)
	Analyze(v, []byte(bad), "ib")
	if got := v.OutOfBoundsText(); got != "3" {
		t.Errorf("wrong values: %q", got)
	}
	if got := (Variant{Env: map[string]string{"NCCL_PROTO": "LL", "NCCL_ALGO": "Ring"}}).EnvText(); got != "NCCL_ALGO=Ring NCCL_PROTO=LL" {
		t.Errorf("EnvText %q", got)
	}
}

// ChoosePort takes the server's first ACTIVE port when nothing named a device, and on RoCE
// leaves the GID index to the pods (each its own, from its address: not the probe pod's index);
// what the flags or the profile set stays.
func TestChoosePort(t *testing.T) {
	three := 3
	server := preflight.NodePorts{Node: "gpu-1", Ports: []ibport.Port{
		{Device: "mlx5_0", Port: 1, Ready: false},
		{Device: "mlx5_1", Port: 2, Ready: true, RoCEv2GIDIndex: &three},
	}}
	r := &RDMAResult{Server: "gpu-1"}
	cmd := perftest.Command{}
	r.ChoosePort(&cmd, server, true)
	if cmd.Device != "mlx5_1" || cmd.Port != 2 || cmd.GIDIndex != nil || !cmd.GIDFromAddress || r.Device != "mlx5_1" || r.GIDIndex != nil ||
		r.GIDIndexSource != GIDInPodSource || len(r.Notes) != 1 || !strings.HasPrefix(r.Notes[0], "device mlx5_1:2: the first ACTIVE port") {
		t.Errorf("probe's choice: cmd %+v, result %+v", cmd, r)
	}
	// A device and GID index given are kept; InfiniBand takes no GID from the probe.
	one := 1
	r = &RDMAResult{Server: "gpu-1"}
	cmd = perftest.Command{Device: "mlx5_0", GIDIndex: &one}
	r.ChoosePort(&cmd, server, true)
	if cmd.Device != "mlx5_0" || *cmd.GIDIndex != 1 || cmd.GIDFromAddress || r.GIDIndexSource != "--gid-index or the profile's gidIndex" || len(r.Notes) != 0 {
		t.Errorf("given: cmd %+v, result %+v", cmd, r)
	}
	r = &RDMAResult{Server: "gpu-1"}
	cmd = perftest.Command{}
	r.ChoosePort(&cmd, server, false)
	if cmd.GIDIndex != nil || cmd.GIDFromAddress || r.GIDIndexSource != "" || cmd.Device != "mlx5_1" {
		t.Errorf("InfiniBand: cmd %+v, result %+v", cmd, r)
	}
	// No ACTIVE port: nothing is chosen, perftest picks.
	r = &RDMAResult{}
	cmd = perftest.Command{}
	r.ChoosePort(&cmd, preflight.NodePorts{Ports: server.Ports[:1]}, false)
	if cmd.Device != "" || len(r.Notes) != 0 {
		t.Errorf("no active port: cmd %+v", cmd)
	}
}

// An interrupt after the last variant (during the port-rate probe) leaves a result with what
// was measured and no verdict: before, the probe was skipped and the run was judged against the
// profile's rate, valid, with "suspect the fabric" on a healthy one.
func TestInterruptedAfterLastVariantNoVerdict(t *testing.T) {
	res := synthetic("ib", 0.47)
	if !res.Valid || !strings.Contains(res.Verdict, "47%") {
		t.Fatalf("the uninterrupted result: valid %v, verdict %q", res.Valid, res.Verdict)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	kc := fake.NewClientset()
	if err := res.ProbeLineRate(ctx, probe.Options{Kube: kc, Namespace: "default"}, []string{"gpu-1", "gpu-2"}, nil); !errors.Is(err, ErrInterrupted) {
		t.Fatalf("probe after an interrupt: %v, want ErrInterrupted", err)
	}
	if res.LineRateGBps != 50 || res.LineRateMismatch {
		t.Errorf("an interrupted probe changed the line rate: %v %v", res.LineRateGBps, res.LineRateMismatch)
	}
	res.Interrupted, res.InterruptedNote = true, "after the last variant, while probing the ports' rate"
	res.Summarize()
	if res.Valid || !strings.HasPrefix(res.Verdict, "Interrupted after the last variant") || strings.Contains(res.Verdict, "%") {
		t.Errorf("valid %v, verdict %q", res.Valid, res.Verdict)
	}
}
