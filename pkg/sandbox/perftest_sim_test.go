package sandbox

import (
	"fmt"
	"io"
	"net/netip"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/ain-hpc/ain/pkg/counters"
	"github.com/ain-hpc/ain/pkg/ibport"
	"github.com/ain-hpc/ain/pkg/iperf"
	"github.com/ain-hpc/ain/pkg/perftest"
)

// TestPerftestSamples: the perftest samples parse with ain's own parser, say what the command
// asked for (device, QPs, GID index, CUDA) and measure what the link between the nodes allows.
func TestPerftestSamples(t *testing.T) {
	for _, c := range []struct {
		name, fabric, cmd string
		path              float64
		test              string
		qps, gid          int
		bwMin, bwMax      float64 // Gb/s of the best row (bandwidth tests)
	}{
		{"perftest/bw-client.txt", "ib", "ib_write_bw -d mlx5_0 -q 1 --report_gbits -a -F -p 18515 10.244.1.5", 200, "ib_write_bw", 1, -1, 190, 199},
		{"perftest/bw-client.txt", "ib", "ib_read_bw -d mlx5_1 -q 4 --report_gbits -a --use_cuda=0 -F -p 18515 10.244.1.5", 200, "ib_read_bw", 4, -1, 190, 199},
		{"perftest/bw-client.txt", "ib", "ib_write_bw -d mlx5_0 -q 1 --report_gbits -a -F -p 18515 10.244.1.5", 100, "ib_write_bw", 1, -1, 95, 99.9},
		{"perftest/bw-client.txt", "roce", "ib_write_bw -d mlx5_0 -x 3 -q 2 --report_gbits -s 65536 -F -p 18515 192.168.100.11", 200, "ib_write_bw", 2, 3, 185, 194},
		{"perftest/lat-client.txt", "ib", "ib_write_lat -d mlx5_0 -a -F -p 18515 10.244.1.5", 200, "ib_write_lat", 1, -1, 0, 0},
	} {
		d := sampleData(c.fabric, 0, 2)
		d.Command, d.PathGbps = "i=0; while :; do "+c.cmd+" && exit 0; done", c.path
		text, err := RenderSample(c.name, d)
		if err != nil {
			t.Fatal(err)
		}
		runs, err := perftest.Parse(strings.NewReader(text))
		if err != nil || len(runs) != 1 {
			t.Fatalf("%s %s: %v, %d runs\n%s", c.name, c.cmd, err, len(runs), text)
		}
		r := runs[0]
		if r.Test == nil || *r.Test != c.test || r.QPs == nil || *r.QPs != c.qps || len(r.Errors) > 0 {
			t.Errorf("%s: test %v qps %v errors %v", c.cmd, r.Test, r.QPs, r.Errors)
		}
		if (c.gid < 0) != (r.GIDIndex == nil) || (r.GIDIndex != nil && *r.GIDIndex != c.gid) {
			t.Errorf("%s: GID index %v, want %d", c.cmd, r.GIDIndex, c.gid)
		}
		wantRows := 23
		if strings.Contains(c.cmd, " -s ") {
			wantRows = 1
		}
		if len(r.Rows) != wantRows {
			t.Errorf("%s: %d rows, want %d", c.cmd, len(r.Rows), wantRows)
		}
		best := r.Best()
		if c.test == "ib_write_lat" {
			if v, _ := best.TTypical.Float64(); best.Bytes != 2 || v < 0.9 || v > 1.1 {
				t.Errorf("%s: best latency %v at %d", c.cmd, best.TTypical, best.Bytes)
			}
			continue
		}
		g, ok := r.Gbps(best.BwAverage)
		if !ok || g < c.bwMin || g > c.bwMax {
			t.Errorf("%s over %v Gb/s: best %v Gb/s, want %v..%v", c.cmd, c.path, g, c.bwMin, c.bwMax)
		}
	}
	// The server prints its banner and settings, no table.
	d := sampleData("ib", 1, 2)
	d.Command = "ib_write_bw -d mlx5_0 -q 1 --report_gbits -a -F -p 18515"
	text, err := RenderSample("perftest/server.txt", d)
	if err != nil || !strings.Contains(text, "Waiting for client to connect") {
		t.Fatalf("server: %v\n%s", err, text)
	}
}

// TestLinkRates: a scenario's nodes.linkRates reaches the probe's sysfs and the pair's path rate.
func TestLinkRates(t *testing.T) {
	sc, err := LoadScenario("degraded-link")
	if err != nil {
		t.Fatal(err)
	}
	if got := linkRate(sc, "gpu-node-2"); got != "100 Gb/sec (2X HDR)" {
		t.Errorf("gpu-node-2: %q", got)
	}
	if got := linkRate(sc, "gpu-node-1"); got != DefaultLinkRate {
		t.Errorf("gpu-node-1: %q", got)
	}
	d := sampleData("ib", 2, 3)
	d.LinkRate = linkRate(sc, "gpu-node-2")
	rep, err := ibport.Parse(strings.NewReader(mustRender(t, "probe/sysfs-ib-active.txt", d)))
	if err != nil || len(rep.Ports) != 2 || rep.Ports[0].Rate == nil || *rep.Ports[0].Rate != "100 Gb/sec (2X HDR)" {
		t.Fatalf("probe on the degraded node: %+v %v", rep, err)
	}
	if rateGbps("100 Gb/sec (2X HDR)") != 100 || rateGbps("") != 0 {
		t.Error("rateGbps")
	}
}

func mustRender(t *testing.T, name string, d SampleData) string {
	t.Helper()
	s, err := RenderSample(name, d)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestCounterTraffic: an allreduce over IB moves the counters of its nodes' RDMA ports by the
// bytes it sent (read back through the counter probe's parser); a socket-fallback run moves nothing.
func TestCounterTraffic(t *testing.T) {
	snap := func(a *agent, node int) *counters.Snapshot {
		d := sampleData("ib", node-1, 3)
		d.Traffic = a.traffic[d.Node]
		s, err := counters.Parse(strings.NewReader(mustRender(t, "probe/sysfs-ib-active.txt", d)))
		if err != nil || len(s.Ports) != 2 {
			t.Fatalf("counters of node %d: %+v %v", node, s, err)
		}
		return s
	}
	launcher := sampleData("ib", 0, 3)
	launcher.NodesOf = []string{"gpu-node-1", "gpu-node-2", "gpu-node-3"}
	for _, c := range []struct {
		sample string
		moved  bool
	}{
		{"nccl-tests/all_reduce_perf-ring.txt", true},
		{"nccl-tests/all_reduce_perf-socket.txt", false},
	} {
		a := &agent{log: io.Discard}
		before := snap(a, 2)
		a.account(launcher, mustRender(t, c.sample, launcher))
		r := counters.Compare(before, snap(a, 2), counters.Options{})
		sent := r.Bytes["mlx5_0:1"].XmitBytes
		// 31 sizes 8 B..8 GiB: 2(3-1)/3 x 16 GiB x (2x20+5) per node, about 1 TiB on mlx5_0.
		if c.moved && (sent < 900<<30 || r.Bytes["mlx5_1:1"].XmitBytes != 0) || !c.moved && sent != 0 {
			t.Errorf("%s: mlx5_0:1 sent %d, mlx5_1:1 %d", c.sample, sent, r.Bytes["mlx5_1:1"].XmitBytes)
		}
		if !r.OK {
			t.Errorf("%s: findings %+v", c.sample, r.Findings)
		}
	}
}

// TestTrainingCounterTraffic: a training rank over IB moves its own node's counters (only its
// node's, on NCCL's device or the scenario's trafficPort); a socket-fallback rank and a one-rank
// job move nothing.
func TestTrainingCounterTraffic(t *testing.T) {
	want := uint64(2 * 2 * trainGradBytes * trainSteps / 3)
	for _, c := range []struct {
		sample, port string
		world        int
		trafficPort  string
		moved        bool
	}{
		{"nccl/pytorch-rank.txt", "mlx5_0:1", 3, "", true},
		{"nccl/pytorch-rank.txt", "mlx5_1:1", 3, "mlx5_1:1", true},
		{"nccl/pytorch-rank-socket.txt", "mlx5_0:1", 3, "", false},
		{"nccl/pytorch-rank.txt", "mlx5_0:1", 1, "", false},
	} {
		a := &agent{log: io.Discard, sc: &Scenario{}}
		a.sc.Nodes.TrafficPort = c.trafficPort
		d := sampleData("ib", 1, c.world)
		a.account(d, mustRender(t, c.sample, d))
		got := a.traffic[d.Node][c.port]
		if c.moved && (got < want-1 || got > want || len(a.traffic) != 1 || len(a.traffic[d.Node]) != 1) || !c.moved && len(a.traffic) != 0 {
			t.Errorf("%s world %d: traffic %v, want %d on %s of %s only (moved %v)", c.sample, c.world, a.traffic, want, c.port, d.Node, c.moved)
		}
	}
}

// TestIperfSample: the TCP baseline's report parses with pkg/iperf and follows the link's rate.
func TestIperfSample(t *testing.T) {
	for _, c := range []struct {
		path, want float64
		cmd        string
	}{
		{200, 38.6, "iperf3 -c 10.244.1.6 -p 5201 -P 8 -t 10 -J"},
		{25, 10.91, "iperf3 -c 10.244.1.6 -p 5201 -P 8 -t 10 -J"},
		{200, 4.825, "iperf3 -c 10.244.1.6 -p 5201 -P 1 -t 5 -J"},
	} {
		d := sampleData("ib", 1, 2)
		d.Command, d.PathGbps = "i=0; while :; do "+c.cmd+" && exit 0; done", c.path
		r, err := iperf.Parse(strings.NewReader(mustRender(t, "iperf3/client.txt", d)))
		if err != nil || r.Gbps() < c.want-0.01 || r.Gbps() > c.want+0.01 || r.RemoteHost != "10.244.1.6" || r.LocalHost != d.PodIP {
			t.Errorf("%s over %v Gb/s: %+v %v", c.cmd, c.path, r, err)
		}
	}
	if s := mustRender(t, "iperf3/server.txt", sampleData("ib", 0, 2)); !strings.Contains(s, "Server listening on 5201") {
		t.Errorf("server: %q", s)
	}
}

// TestPerftestGIDInPod: with the RoCE GID chosen in the pods (perftest.Command.GIDFromAddress),
// the sandbox runs each pod's own script over the node's simulated sysfs: the pod prints its
// choice, perftest's settings show that index, and it is the one pkg/ibport's rule (profile
// detect's) finds for the pod's address in the IB port probe's sample. The script is not taken
// for the IB port probe's (which the agent runs as a whole).
func TestPerftestGIDInPod(t *testing.T) {
	for _, c := range []struct {
		cmd    perftest.Command
		sample string
		server string
	}{
		{perftest.Command{Test: "ib_write_bw", Device: "mlx5_0", QPs: 2, GIDFromAddress: true}, "perftest/bw-client.txt", "10.10.1.11"},
		{perftest.Command{Test: "ib_write_lat", GIDFromAddress: true}, "perftest/lat-client.txt", "10.10.1.11"},
		{perftest.Command{Test: "ib_read_bw", Device: "mlx5_1", GIDFromAddress: true}, "perftest/server.txt", ""},
	} {
		d := sampleData("roce", 1, 2) // gpu-node-2
		script := c.cmd.ServerScript()
		if c.server != "" {
			script = c.cmd.ClientScript(c.server)
		}
		pod := &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Command: []string{"/bin/sh", "-c", script}}}}}
		if _, ok := runsProbe(pod); ok {
			t.Fatalf("%s: the sandbox takes the perftest pod for the IB port probe", c.cmd.Test)
		}
		d.Command = "/bin/sh -c " + script
		text := mustRender(t, c.sample, d)
		ch, fail := perftest.FindGIDChoice([]byte(text))
		dev := c.cmd.Device
		if dev == "" {
			dev = "mlx5_0"
		}
		if ch == nil || fail != "" || ch.Device != dev || ch.Port != 1 || ch.Netdev == "" {
			t.Fatalf("%s: choice %+v %q\n%s", c.sample, ch, fail, text)
		}
		rep, err := ibport.Parse(strings.NewReader(mustRender(t, "probe/sysfs-roce-active.txt", d)))
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range rep.Ports {
			if p.Device != dev {
				continue
			}
			g, ok := p.RoCEv2GIDOf([]netip.Addr{netip.MustParseAddr(ch.Address)})
			if !ok || g.Index != ch.Index || g.Netdev != ch.Netdev {
				t.Errorf("%s: the pod chose %+v, ibport's rule %+v %v", c.sample, ch, g, ok)
			}
		}
		if c.server == "" { // the server prints its settings, no table
			if !strings.Contains(text, fmt.Sprintf("GID index       : %d\n", ch.Index)) || !strings.Contains(text, "Device         : "+dev+"\n") {
				t.Errorf("%s: settings\n%s", c.sample, text)
			}
			continue
		}
		runs, err := perftest.Parse(strings.NewReader(text))
		if err != nil || len(runs) != 1 || runs[0].GIDIndex == nil || *runs[0].GIDIndex != ch.Index || runs[0].Device != dev {
			t.Errorf("%s: perftest's settings %+v %v\n%s", c.sample, runs, err, text)
		}
		if c.sample == "perftest/bw-client.txt" && (len(runs) != 1 || len(runs[0].Rows) != 23 || runs[0].QPs == nil || *runs[0].QPs != 2 ||
			len(runs[0].Local) != 2 || runs[0].Local[0].IPv4 != ch.Address || len(runs[0].Remote) != 2 || runs[0].Remote[0].IPv4 != c.server) {
			t.Errorf("%s: table %+v\n%s", c.sample, runs, text)
		}
	}
	// A pod with no GID of its own address (the device has none): it prints why and nothing else.
	d := sampleData("roce", 1, 2)
	d.Command = "/bin/sh -c " + perftest.Command{Test: "ib_write_bw", Device: "mlx5_3", GIDFromAddress: true}.ServerScript()
	text := mustRender(t, "perftest/server.txt", d)
	if _, fail := perftest.FindGIDChoice([]byte(text)); fail == "" || strings.Contains(text, "Waiting for client") {
		t.Errorf("failed choice:\n%s", text)
	}
}
