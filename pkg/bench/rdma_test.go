package bench

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ain-hpc/ain/pkg/perftest"
)

func readPerftest(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "perftest", "testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func ports(rates map[string]string) []PortRate {
	var out []PortRate
	for node, r := range rates {
		out = append(out, PortRate{Node: node, Port: "mlx5_2:1", Rate: r, Active: true},
			PortRate{Node: node, Port: "mlx5_9:1", Rate: "800 Gb/sec (8X XDR)", Active: true}) // another device: ignored
	}
	return out
}

// TestRDMAJudge: the NDR sample (392 Gb/s best average on mlx5_2) against each way the rates can
// be known: ports and profile agree, the profile is wrong, a link end is degraded, no probe.
func TestRDMAJudge(t *testing.T) {
	ndr := readPerftest(t, "ib_write_bw-ib-ndr-all-gbits.txt")
	for _, c := range []struct {
		name        string
		profile     float64
		ports       map[string]string
		probeErr    string
		ok          bool
		expected    float64
		source      string
		note, issue string
	}{
		{"ports as the profile", 400, map[string]string{"a": "400 Gb/sec (4X NDR)", "b": "400 Gb/sec (4X NDR)"}, "", true, 400, "probe", "as the profile says", ""},
		{"profile says 200", 200, map[string]string{"a": "400 Gb/sec (4X NDR)", "b": "400 Gb/sec (4X NDR)"}, "", true, 400, "probe", "LINE RATE MISMATCH: the profile's lineRate is 200Gb but the ports run at 400 Gb/s", ""},
		{"one end at half width", 400, map[string]string{"a": "400 Gb/sec (4X NDR)", "b": "200 Gb/sec (2X NDR)"}, "", false, 400, "probe", "as the profile says", "DEGRADED LINK: b mlx5_2:1: 200 Gb/sec (2X NDR), but the other end runs at 400"},
		{"no probe", 400, nil, "a: probe pod Pending", true, 400, "profile", "not checked against the ports (a: probe pod Pending)", ""},
		{"no probe, profile 800", 800, nil, "", false, 800, "profile", "is the profile's", "is 49.0% of the 800 Gb/s link"},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := &RDMAResult{Test: "ib_write_bw", Server: "a", Client: "b", Fabric: "ib", ProfileGbps: c.profile, ProfileLineRate: "200Gb"}
			if c.profile != 200 {
				r.ProfileLineRate = map[float64]string{400: "400Gb", 800: "800Gb"}[c.profile]
			}
			r.Analyze(ndr, nil)
			if r.Device != "mlx5_2" || r.RDMAGbps == nil || *r.RDMAGbps != 392 || r.RDMABytes != 131072 || r.QPs != 1 {
				t.Fatalf("analyze: device %q gbps %v at %d qps %d", r.Device, r.RDMAGbps, r.RDMABytes, r.QPs)
			}
			r.Judge(ports(c.ports), c.probeErr)
			if r.OK != c.ok || r.ExpectedGbps != c.expected || r.ExpectedSource != c.source {
				t.Errorf("ok %v expected %v (%s), want %v %v (%s); %s", r.OK, r.ExpectedGbps, r.ExpectedSource, c.ok, c.expected, c.source, r.Verdict)
			}
			if !strings.Contains(r.LineRateNote, c.note) {
				t.Errorf("note %q lacks %q", r.LineRateNote, c.note)
			}
			if c.issue != "" && !strings.Contains(r.Verdict, c.issue) {
				t.Errorf("verdict %q lacks %q", r.Verdict, c.issue)
			}
			if c.ok != strings.HasPrefix(r.Verdict, "PASS") {
				t.Errorf("verdict %q", r.Verdict)
			}
		})
	}
}

func TestRDMAAnalyzeRoCEAndFailures(t *testing.T) {
	// kubectl logs --prefix lines, -q 4, RoCE GID index 3: the settings perftest printed win.
	r := &RDMAResult{Test: "ib_read_bw", Server: "a", Client: "b", Fabric: "roce", ProfileGbps: 100, ProfileLineRate: "100Gb"}
	r.Analyze(readPerftest(t, "ib_read_bw-roce-qps4-prefixed.txt"), nil)
	r.Judge(nil, "")
	if r.Device != "mlx5_1" || r.QPs != 4 || r.GIDIndex == nil || *r.GIDIndex != 3 || r.LinkType != "Ethernet" || r.RDMAGbps == nil {
		t.Errorf("device %q qps %d gid %v link %q gbps %v", r.Device, r.QPs, r.GIDIndex, r.LinkType, r.RDMAGbps)
	}
	// A client that could not connect and then ran: the last run with a table counts.
	r = &RDMAResult{Test: "ib_send_bw", Server: "a", Client: "b", Fabric: "ib", ProfileGbps: 200, ProfileLineRate: "200Gb"}
	r.Analyze(readPerftest(t, "ib_send_bw-ib-failed-then-cpu-util.txt"), nil)
	if r.Run() == nil || r.RDMAGbps == nil {
		t.Errorf("retry: run %v gbps %v", r.Run(), r.RDMAGbps)
	}
	// Nothing but an error: FAIL naming it.
	r = &RDMAResult{Test: "ib_write_bw", Server: "a", Client: "b", Fabric: "ib", ProfileGbps: 200}
	r.Analyze([]byte(" Couldn't connect to 10.0.0.1:18515\nUnable to open file descriptor for socket connection\n"), nil)
	r.Judge(nil, "")
	if r.OK || !strings.Contains(r.Verdict, "no perftest result table") {
		t.Errorf("no table: ok %v %q", r.OK, r.Verdict)
	}
	// Latency: a verdict without a rate.
	r = &RDMAResult{Test: "ib_write_lat", Server: "a", Client: "b", Fabric: "ib", ProfileGbps: 200}
	r.Analyze(readPerftest(t, "ib_write_lat-ib-all-percentiles.txt"), nil)
	r.Judge(nil, "")
	if !r.OK || r.TypicalUs == nil || *r.TypicalUs != 0.98 || r.RDMABytes != 2 || r.PctLineRate != nil {
		t.Errorf("latency: ok %v typical %v at %d pct %v: %s", r.OK, r.TypicalUs, r.RDMABytes, r.PctLineRate, r.Verdict)
	}
}

func TestLastAllreduce(t *testing.T) {
	dir := t.TempDir()
	if _, _, err := LastAllreduce(filepath.Join(dir, "none")); !errors.Is(err, ErrNoAllreduce) || !strings.Contains(err.Error(), "does not exist") {
		t.Errorf("missing folder: %v", err)
	}
	if _, _, err := LastAllreduce(dir); !errors.Is(err, ErrNoAllreduce) {
		t.Errorf("empty folder: %v", err)
	}
	save := func(name string, finished time.Time, busbw float64) {
		res := &Result{Kind: Kind, Name: name, Finished: finished, Nodes: 3, Ranks: 3, NICsPerNode: 1, LineRate: "200Gb",
			Peaks: []Peak{{Variant: "ring", Busbw: busbw, Size: 1 << 30}, {Variant: "tree", Busbw: busbw - 4, Size: 1 << 30}}}
		d := filepath.Join(dir, name)
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		b, _ := json.Marshal(res)
		if err := os.WriteFile(filepath.Join(d, ResultJSON), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	t0 := time.Date(2026, 12, 3, 10, 0, 0, 0, time.UTC)
	save("b-older", t0, 20)
	save("a-newer", t0.Add(time.Hour), 23.5)
	// Something else in the folder (an rdma result, junk) is not a candidate.
	_ = os.MkdirAll(filepath.Join(dir, "junk"), 0o755)
	_ = os.WriteFile(filepath.Join(dir, "junk", ResultJSON), []byte(`{"kind":"`+RDMAKind+`"}`), 0o644)
	res, path, err := LastAllreduce(dir)
	if err != nil || res.Name != "a-newer" || !strings.HasSuffix(path, filepath.Join("a-newer", ResultJSON)) {
		t.Fatalf("got %v %s %v", res, path, err)
	}
	r := &RDMAResult{}
	r.UseNCCL(res, path)
	if r.NCCL == nil || r.NCCL.Variant != "ring" || r.NCCL.BusbwGbps != 188 || r.NCCL.Nodes != 3 {
		t.Errorf("NCCL ref %+v", r.NCCL)
	}
}

// UseGIDChoices: each pod's own choice is recorded (the client's is GIDIndex, the server's may
// differ), the source names pod and address; a pod that found no GID is a problem with its reason,
// and no "perftest used GID 0" note follows.
func TestUseGIDChoices(t *testing.T) {
	line := func(idx int, addr string) []byte {
		return []byte(perftest.GIDChoiceLine(perftest.GIDChoice{Index: idx, Device: "mlx5_0", Port: 1, Address: addr, Netdev: "net1"}) + "\n---\n")
	}
	r := &RDMAResult{Server: "gpu-1", Client: "gpu-2", Fabric: "roce", GIDIndexSource: GIDInPodSource}
	ch := r.UseGIDChoices("ain-perftest-server-a", "ain-perftest-client-a", line(7, "192.168.100.11"), line(11, "192.168.100.12"))
	if ch == nil || ch.Index != 11 || r.GIDIndex == nil || *r.GIDIndex != 11 || len(r.GIDChoices) != 2 || r.GIDChoices[1].Index != 7 || r.GIDChoices[1].Node != "gpu-1" ||
		r.GIDIndexSource != "index 11 chosen in client pod ain-perftest-client-a from its address 192.168.100.12 (mlx5_0:1, net1); index 7 chosen in server pod ain-perftest-server-a from its address 192.168.100.11 (mlx5_0:1, net1)" {
		t.Errorf("both chose: %+v %+v", ch, r)
	}
	// The server stopped before the client started: its reason, no client.
	r = &RDMAResult{Server: "gpu-1", Client: "gpu-2", Fabric: "roce", GIDIndexSource: GIDInPodSource}
	ch = r.UseGIDChoices("ain-perftest-server-b", "", []byte("ain-gid: FAIL: the pod's interface net1 on mlx5_0:1 has no IPv4 address\n"), nil)
	r.Judge(nil, "not probed")
	if ch != nil || r.GIDIndex != nil || r.OK || len(r.Problems) != 1 ||
		r.Problems[0] != "no RoCE GID for perftest in the server pod ain-perftest-server-b on gpu-1: the pod's interface net1 on mlx5_0:1 has no IPv4 address" {
		t.Errorf("server failed: %+v", r)
	}
	for _, n := range r.Notes {
		if strings.Contains(n, "GID 0") {
			t.Errorf("note %q after the pods chose", n)
		}
	}
}
