package counters

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/ain-hpc/ain/internal/golden"
)

func parseFile(t *testing.T, name string) *Snapshot {
	t.Helper()
	return golden.Parse(t, filepath.Join("testdata", name), Parse)
}

const gib = 1 << 30

// TestCompare: per scenario, the ports and formats read, the bytes (4 x the word counters), and
// the findings that must (and must not) be there.
func TestCompare(t *testing.T) {
	tests := []struct {
		name        string
		expect      uint64
		formats     string
		ports       string
		ok          bool
		bytes       map[string]uint64 // port -> xmit bytes
		codes, nots []string
		contains    []string
	}{
		{name: "roce-allreduce", expect: 96 * gib, formats: "sysfs,ethtool", ports: "ens1f0np0,ens1f1np1,mlx5_0:1,mlx5_1:1", ok: true,
			bytes: map[string]uint64{"mlx5_0:1": 48 * gib, "mlx5_1:1": 48*gib + 123456},
			codes: []string{"rdma-traffic", "rdma-bytes-ok", "ecn-cnp", "dcqcn-reacting", "pfc-pause"}, nots: []string{"packet-loss", "errors", "ecn-without-cnp"},
			contains: []string{"rx_prio3_pause +4421 on ens1f0np0,ens1f1np1"}},
		{name: "roce-lossy", formats: "listing,ethtool", ports: "ens1f0np0,mlx5_0:1", ok: false,
			bytes: map[string]uint64{"mlx5_0:1": 20 * gib},
			codes: []string{"packet-loss"}, nots: []string{"pfc-pause", "errors"},
			contains: []string{"out_of_sequence +18342 on mlx5_0:1", "rx_discards_phy +18377 on ens1f0np0", "packet_seq_err +9120"}},
		{name: "socket-fallback", expect: 36 * gib, formats: "rdma-statistic,sysfs,ethtool", ports: "eth0,mlx5_2:1", ok: false,
			bytes: map[string]uint64{"mlx5_2:1": 8192},
			codes: []string{"rdma-bytes-short", "netdev-carried-it"}, nots: []string{"packet-loss"},
			contains: []string{"sent 8.00 KiB in all, less than the 36.00 GiB", "eth0 sent 36.00 GiB"}},
		{name: "ib-link-flap", formats: "sysfs", ports: "mlx5_0:1,mlx5_3:1", ok: false,
			bytes: map[string]uint64{"mlx5_0:1": 3 * gib, "mlx5_3:1": 0},
			codes: []string{"errors", "counter-went-backwards"}, nots: []string{"packet-loss"},
			contains: []string{"link_downed +2 on mlx5_0:1", "symbol_error +4817", "mlx5_3:1 port_xmit_data"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b, a := parseFile(t, tc.name+"-before.txt"), parseFile(t, tc.name+"-after.txt")
			if got := strings.Join(a.Formats, ","); got != tc.formats {
				t.Errorf("formats %s, want %s", got, tc.formats)
			}
			if got := strings.Join(a.PortNames(), ","); got != tc.ports {
				t.Errorf("ports %s, want %s", got, tc.ports)
			}
			r := Compare(b, a, Options{ExpectBytes: tc.expect})
			if r.OK != tc.ok {
				t.Errorf("ok %v, want %v: %+v", r.OK, tc.ok, r.Findings)
			}
			for p, want := range tc.bytes {
				if got := r.Bytes[p].XmitBytes; got != want {
					t.Errorf("%s sent %d bytes, want %d", p, got, want)
				}
			}
			codes := map[string]bool{}
			var all []string
			for _, f := range r.Findings {
				codes[f.Code] = true
				all = append(all, f.Message)
				if f.Severity == "problem" && f.Fix == "" {
					t.Errorf("problem %s without a fix", f.Code)
				}
			}
			for _, c := range tc.codes {
				if !codes[c] {
					t.Errorf("no %s finding in %q", c, all)
				}
			}
			for _, c := range tc.nots {
				if codes[c] {
					t.Errorf("unexpected %s finding in %q", c, all)
				}
			}
			text := strings.Join(all, "\n")
			for _, w := range tc.contains {
				if !strings.Contains(text, w) {
					t.Errorf("findings lack %q:\n%s", w, text)
				}
			}
			for _, ds := range r.Deltas {
				for _, d := range ds {
					if d.Counter == "lifespan" {
						t.Error("lifespan is not a counter")
					}
				}
			}
			golden.JSON(t, tc.name, r)
		})
	}
}

// TestSingle: one snapshot gives bytes since reset (x4) and warns about nonzero error counters.
func TestSingle(t *testing.T) {
	r := Single(parseFile(t, "ib-link-flap-after.txt"))
	if !r.OK || r.Deltas != nil || r.Bytes["mlx5_3:1"].XmitBytes != 4800 {
		t.Errorf("single: ok %v deltas %v bytes %+v", r.OK, r.Deltas, r.Bytes)
	}
	if len(r.Findings) != 2 || !strings.Contains(r.Findings[1].Message, "mlx5_0:1 link_downed=2") {
		t.Errorf("findings %+v", r.Findings)
	}
}

func TestAnalyze(t *testing.T) {
	before, after := parseFile(t, "ib-link-flap-before.txt"), parseFile(t, "ib-link-flap-after.txt")
	if r := Analyze([]*Snapshot{after}, Options{}); r.Deltas != nil {
		t.Error("one snapshot: deltas")
	}
	if r := Analyze([]*Snapshot{before, after}, Options{}); r.Deltas == nil {
		t.Error("two snapshots: no deltas")
	}
}

// TestParseFormats: the listing headers, "name: value" vs a port header, and a bad value.
func TestParseFormats(t *testing.T) {
	in := "mlx5_bond_0/1\n  port_xmit_data: 10\nrocep65s0f0 port 1\nnp_cnp_sent 3\nlifespan 12\n"
	s, err := Parse(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	if s.Ports["mlx5_bond_0:1"]["port_xmit_data"] != 10 || s.Ports["rocep65s0f0:1"]["np_cnp_sent"] != 3 || len(s.Ports["rocep65s0f0:1"]) != 1 {
		t.Errorf("ports %v", s.Ports)
	}
	_, err = Parse(strings.NewReader("/sys/class/infiniband/mlx5_0/ports/1/counters/port_xmit_data:-5\n"))
	if err == nil || !strings.Contains(err.Error(), "line 1: mlx5_0:1 port_xmit_data: \"-5\" is not a counter value") {
		t.Errorf("bad value: %v", err)
	}
}

// TestCompareSwapped: snapshots given after-then-before make every counter go backwards. That is
// no verdict: not OK, the bytes are unknown (not "idle", not "short of the expected bytes").
func TestCompareSwapped(t *testing.T) {
	b, a := parseFile(t, "roce-lossy-before.txt"), parseFile(t, "roce-lossy-after.txt")
	r := Compare(a, b, Options{ExpectBytes: 1 << 30})
	if r.OK {
		t.Error("ok with every counter gone backwards")
	}
	if tr := r.Bytes["mlx5_0:1"]; !tr.Unknown || tr.XmitBytes != 0 {
		t.Errorf("mlx5_0:1 traffic %+v, want unknown", tr)
	}
	codes := map[string]bool{}
	for _, f := range r.Findings {
		codes[f.Code] = true
	}
	for c, want := range map[string]bool{"counter-went-backwards": true, "rdma-bytes-unknown": true, "rdma-idle": false, "rdma-bytes-short": false, "rdma-traffic": false, "packet-loss": false} {
		if codes[c] != want {
			t.Errorf("finding %s present %v, want %v: %+v", c, codes[c], want, r.Findings)
		}
	}
}

// TestPastedShapes: the shapes people's shell loops print (testdata/README.md, issue 31).
func TestPastedShapes(t *testing.T) {
	cases := []struct {
		file, port, counter string
		want                uint64
	}{
		{"paste-for-cat-loop.txt", "mlx5_0:1", "port_xmit_data", 2473871120},
		{"paste-ethtool-grep-prio.txt", "eth0", "rx_prio3_pause", 1250},
		{"paste-ethtool-grep-prio-nocmd.txt", "ethtool0", "rx_prio3_pause", 1250},
		{"paste-grep-h-relative.txt", UnnamedPort, "np_cnp_sent", 42},
		{"paste-grep-h-bare.txt", UnnamedPort, "port_xmit_data", 2473871120},
	}
	for _, c := range cases {
		t.Run(c.file, func(t *testing.T) {
			s := parseFile(t, c.file)
			if got, ok := s.Ports[c.port][c.counter]; !ok || got != c.want {
				t.Errorf("%s %s = %d (%v); ports %v", c.port, c.counter, got, ok, s.Ports)
			}
		})
	}
	// A loop over a directory without a port header: the value belongs to the unnamed port.
	s, err := Parse(strings.NewReader("=== counters/port_rcv_data ===\n7\n=== ens1f0 ===\nNIC statistics:\n     rx_prio3_pause: 2\n"))
	if err != nil || s.Ports[UnnamedPort]["port_rcv_data"] != 7 || s.Ports["ens1f0"]["rx_prio3_pause"] != 2 {
		t.Errorf("%v %v", s, err)
	}
	if s, _ := Parse(strings.NewReader("epoch 3\nstep: 100\n")); len(s.Ports) != 0 {
		t.Errorf("job output read as counters: %v", s.Ports)
	}
	if s := parseFile(t, "no-counters.txt"); len(s.Ports) != 0 {
		t.Errorf("no-counters.txt: %v", s.Ports)
	}
	e := parseFile(t, "no-counters.txt").NoCounters("no-counters.txt").Error()
	for _, w := range []string{"no-counters.txt: no counters in 2 line(s)", "grep -H", "=== counters/NAME ===", "ethtool -S"} {
		if !strings.Contains(e, w) {
			t.Errorf("%q not in %q", w, e)
		}
	}
}
