package bench

import (
	"strings"
	"testing"

	"github.com/ain-hpc/ain/pkg/ibport"
	"github.com/ain-hpc/ain/pkg/sandbox"
)

// sandboxPorts is what the sandbox's IB port probe prints on each of three nodes, parsed as
// preflight.ProbePorts parses it.
func sandboxPorts(t *testing.T, fabric string) []PortRate {
	t.Helper()
	var out []PortRate
	for _, node := range []string{"gpu-node-1", "gpu-node-2", "gpu-node-3"} {
		text, err := sandbox.RenderSample("probe/sysfs-"+fabric+"-active.txt", sandbox.SampleData{Pod: "probe", Namespace: "default", Fabric: fabric, Env: map[string]string{}})
		if err != nil {
			t.Fatal(err)
		}
		rep, err := ibport.Parse(strings.NewReader(text))
		if err != nil || len(rep.Ports) == 0 {
			t.Fatalf("%v %+v", err, rep)
		}
		for _, p := range rep.Ports {
			r := ""
			if p.Rate != nil {
				r = *p.Rate
			}
			out = append(out, PortRate{Node: node, Port: p.Device + ":" + itoa(int64(p.Port)), Rate: r, Active: p.Ready})
		}
	}
	return out
}

// Defect 8 of the field review: with the built-in profile (400Gb) on the sandbox's 200 Gb/s
// ports, 23.39 GB/s at 1 GiB was "47% of line rate ... suspect the fabric". Judged against the
// probed rate it is 94%: healthy, with a loud note about the profile.
func TestLineRateFromProbe(t *testing.T) {
	for _, fabric := range []string{"ib", "roce"} {
		res := &Result{Name: "allreduce", Fabric: fabric, LineRate: "400Gb", LineRateGBps: 50, Nodes: 3, GPUsPerNode: 1, SameNodes: true}
		v := &VariantResult{Variant: Variant{Name: "auto"}, Job: "allreduce-auto"}
		Analyze(v, sample(t, "default"), fabric)
		res.Variants = []*VariantResult{v}
		res.UseProbedRate(sandboxPorts(t, fabric), nil, "")
		res.Summarize()
		if res.LineRateSource != "probe" || res.LineRate != "200Gb" || res.LineRateGBps != 25 || !res.LineRateMismatch {
			t.Fatalf("%s: source %s rate %s %.2f mismatch %v", fabric, res.LineRateSource, res.LineRate, res.LineRateGBps, res.LineRateMismatch)
		}
		if !strings.HasPrefix(res.Verdict, "LINE RATE MISMATCH: the profile's lineRate is 400Gb but the ports on the benchmark's nodes run at 200 Gb/s") ||
			!strings.Contains(res.Verdict, "94% of line rate at 1 GiB (23.39 of 25.00 GB/s): the fabric is healthy") ||
			strings.Contains(res.Verdict, "suspect the fabric") {
			t.Errorf("%s verdict: %s", fabric, res.Verdict)
		}
	}
	// The profile agrees with the ports: no mismatch, the note says it was checked.
	res := &Result{Fabric: "ib", LineRate: "200Gb", LineRateGBps: 25}
	res.UseProbedRate(sandboxPorts(t, "ib"), []string{"mlx5_0:1"}, "")
	if res.LineRateMismatch || !strings.Contains(res.LineRateNote, "as the profile says") {
		t.Errorf("%+v", res)
	}
	// No probe result: the profile's rate stays, flagged as unchecked.
	res = &Result{Fabric: "ib", LineRate: "400Gb", LineRateGBps: 50}
	res.UseProbedRate(nil, nil, "probe pod Pending")
	if res.LineRateSource != "profile" || res.LineRateGBps != 50 || !strings.Contains(res.LineRateNote, "not checked against the ports (probe pod Pending)") {
		t.Errorf("%+v", res)
	}
	// A slower node bounds the ring; a port outside the profile's HCAs does not count.
	ports := []PortRate{
		{Node: "a", Port: "mlx5_0:1", Rate: "400 Gb/sec (4X NDR)", Active: true},
		{Node: "a", Port: "mlx5_2:1", Rate: "25 Gb/sec (1X EDR)", Active: true},
		{Node: "b", Port: "mlx5_0:1", Rate: "200 Gb/sec (4X HDR)", Active: true},
		{Node: "b", Port: "mlx5_1:1", Rate: "400 Gb/sec (4X NDR)", Active: false},
	}
	res = &Result{Fabric: "ib", LineRate: "400Gb", LineRateGBps: 50}
	res.UseProbedRate(ports, []string{"=mlx5_0:1"}, "")
	if res.LineRate != "200Gb" || !strings.Contains(res.LineRateNote, "b mlx5_0:1: 200 Gb/sec (4X HDR)") {
		t.Errorf("%s %s", res.LineRate, res.LineRateNote)
	}
}
