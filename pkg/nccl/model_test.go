package nccl

import (
	"math"
	"testing"
)

func near(a, b float64) bool { return math.Abs(a-b) <= 1e-9*math.Max(1, math.Abs(b)) }

// TestModelHandComputed checks the model against values worked out by hand from the formulas
// in the package doc (Simple protocol, NCCL 2.30 constants).
func TestModelHandComputed(t *testing.T) {
	tests := []struct {
		name                      string
		p                         ModelParams
		ringLat, treeLat          float64
		ringBw, treeBw, nodeBusBw float64
		crossover                 int64
	}{
		{
			// ring: 8.4 + (2*23 - 2*2)*3.4 + 2*2*14 = 8.4 + 142.8 + 56 = 207.2
			// tree: 8.4 + 2*((8-1)*3.4 + log2i(3)=1 * 14) = 8.4 + 75.6 = 84.0
			// busBw 8 x 400/8 = 400; ring 400*24/46; tree 0.5*0.92*400 = 184
			// crossover 1000*(207.2-84)/(1/184 - 46/9600) = 191567323.7 -> 191567324
			name: "3x8 400Gb nvlink", p: ModelParams{Nodes: 3, GPUsPerNode: 8, LinkGbps: 400},
			ringLat: 207.2, treeLat: 84.0, ringBw: 400.0 * 24 / 46, treeBw: 184, nodeBusBw: 400, crossover: 191567324,
		},
		{
			// ring: 8.4 + (30-2)*3.4 + 2*14 = 131.6; tree: 8.4 + 2*(7*3.4 + 14) = 84.0
			// busBw 200; ring 200*16/30; tree 92; crossover 1000*47.6/(0.0108695652 - 0.009375) = 31848727.3 -> 31848728
			name: "2x8 200Gb nvlink", p: ModelParams{Nodes: 2, GPUsPerNode: 8, LinkGbps: 200},
			ringLat: 131.6, treeLat: 84.0, ringBw: 200.0 * 16 / 30, treeBw: 92, nodeBusBw: 200, crossover: 31848728,
		},
		{
			// ring: 8.4 + (30-6)*5.7 + 6*14 = 229.2; tree: 8.4 + 2*(3*5.7 + log2i(4)=2 * 14) = 98.6
			// busBw 1 x 100/8 = 12.5; ring 12.5*16/30; tree 0.5*0.92*12.5 = 5.75
			// crossover 1000*130.6/(0.1739130435 - 0.15) = 5461454.5 -> 5461455
			name: "4x4 100Gb pci 1 NIC", p: ModelParams{Nodes: 4, GPUsPerNode: 4, LinkGbps: 100, NICsPerNode: 1, Intra: "pci"},
			ringLat: 229.2, treeLat: 98.6, ringBw: 12.5 * 16 / 30, treeBw: 5.75, nodeBusBw: 12.5, crossover: 5461455,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res, err := AllReduceModel(tc.p, 1<<20, 1<<30, 2, "both")
			if err != nil {
				t.Fatal(err)
			}
			if !near(res.Ring.LatencyUs, tc.ringLat) || !near(res.Tree.LatencyUs, tc.treeLat) {
				t.Errorf("latency ring %v tree %v, want %v %v", res.Ring.LatencyUs, res.Tree.LatencyUs, tc.ringLat, tc.treeLat)
			}
			if !near(res.Ring.AlgBwGBps, tc.ringBw) || !near(res.Tree.AlgBwGBps, tc.treeBw) || !near(res.NodeBusBwGBps, tc.nodeBusBw) {
				t.Errorf("bw ring %v tree %v node %v", res.Ring.AlgBwGBps, res.Tree.AlgBwGBps, res.NodeBusBwGBps)
			}
			if res.CrossoverBytes == nil || *res.CrossoverBytes != tc.crossover {
				t.Errorf("crossover %s, want %d", ptrStr(res.CrossoverBytes), tc.crossover)
			}
			// Every row must agree with the crossover.
			for _, row := range res.Rows {
				wantBest := "tree"
				if row.Size >= tc.crossover {
					wantBest = "ring"
				}
				if row.Best != wantBest {
					t.Errorf("size %d: best %s, want %s", row.Size, row.Best, wantBest)
				}
			}
		})
	}
}

func TestModelPoint(t *testing.T) {
	res, err := AllReduceModel(ModelParams{Nodes: 3, GPUsPerNode: 8, LinkGbps: 400}, 1<<20, 1<<20, 2, "ring")
	if err != nil {
		t.Fatal(err)
	}
	row := res.Rows[0]
	// time = 207.2 + 1048576/(1000 * 400*24/46) = 207.2 + 5.0243533 us
	wantT := 207.2 + 1048576.0/(1000*400.0*24/46)
	if row.Tree != nil || !near(row.Ring.TimeUs, wantT) {
		t.Fatalf("row %+v", row)
	}
	alg := 1048576 / (1000 * wantT)
	if !near(row.Ring.Algbw, alg) || !near(row.Ring.Busbw, alg*2*23/24) {
		t.Errorf("algbw %v busbw %v", row.Ring.Algbw, row.Ring.Busbw)
	}
}

func TestModelLimits(t *testing.T) {
	for _, c := range []struct{ n, want int }{{1, 0}, {2, 1}, {3, 1}, {4, 2}, {1000, 9}} {
		if got := log2i(c.n); got != c.want {
			t.Errorf("log2i(%d) = %d, want %d", c.n, got, c.want)
		}
	}
	bad := []ModelParams{
		{Nodes: 1, GPUsPerNode: 8, LinkGbps: 400},
		{Nodes: 2, GPUsPerNode: 0, LinkGbps: 400},
		{Nodes: 2, GPUsPerNode: 8, LinkGbps: 0},
		{Nodes: 2, GPUsPerNode: 8, LinkGbps: math.Inf(1)},
		{Nodes: 2, GPUsPerNode: 8, LinkGbps: 400, Intra: "ethernet"},
	}
	for _, p := range bad {
		if _, err := AllReduceModel(p, 8, 1024, 2, "both"); err == nil {
			t.Errorf("%+v: no error", p)
		}
	}
	if _, err := AllReduceModel(ModelParams{Nodes: 2, GPUsPerNode: 8, LinkGbps: 400}, 8, 1024, 2, "nvls"); err == nil {
		t.Error("bad algo accepted")
	}
	if _, err := AllReduceModel(ModelParams{Nodes: 2, GPUsPerNode: 8, LinkGbps: 400}, 1024, 8, 2, "both"); err == nil {
		t.Error("min > max accepted")
	}
	// The size loop stops before overflowing.
	res, err := AllReduceModel(ModelParams{Nodes: 2, GPUsPerNode: 8, LinkGbps: 400}, 1, math.MaxInt64, 2, "both")
	if err != nil || len(res.Rows) != 63 {
		t.Errorf("rows %d err %v", len(res.Rows), err)
	}
	if c := Crossover(AlgoCost{LatencyUs: 5, AlgBwGBps: 100}, AlgoCost{LatencyUs: 10, AlgBwGBps: 50}); c != 0 {
		t.Errorf("ring dominating: crossover %d", c)
	}
	if c := Crossover(AlgoCost{LatencyUs: 50, AlgBwGBps: 50}, AlgoCost{LatencyUs: 10, AlgBwGBps: 100}); c != -1 {
		t.Errorf("tree dominating: crossover %d", c)
	}
}
