package ibport

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/ain-hpc/ain/internal/golden"
)

type wantPort struct {
	id, state, phys, link, rate, reason string
	ready                               bool
	gid                                 int // -1: none
}

// TestParse covers every tool and every state: ACTIVE, LinkUp+INIT (no SM), Polling/Down,
// Disabled, Armed, and the RoCE v2 GID index. Samples are written from the tools' documented output.
func TestParse(t *testing.T) {
	tests := []struct {
		file, format string
		ready        bool
		gidIndex     int // -1: null
		ports        []wantPort
	}{
		{"ibstat-active-ndr.txt", FormatIbstat, true, -1, []wantPort{
			{"mlx5_0:1", "ACTIVE", "LinkUp", "InfiniBand", "400 Gb/sec", "", true, -1},
			{"mlx5_1:1", "ACTIVE", "LinkUp", "InfiniBand", "400 Gb/sec", "", true, -1},
		}},
		{"ibstat-init-no-sm.txt", FormatIbstat, false, -1, []wantPort{
			{"mlx5_0:1", "INIT", "LinkUp", "InfiniBand", "200 Gb/sec", ReasonNoSM, false, -1},
			{"mlx5_1:1", "DOWN", "Polling", "InfiniBand", "10 Gb/sec", ReasonCableOrPeer, false, -1},
		}},
		{"ibv_devinfo-armed-disabled.txt", FormatDevinfo, false, -1, []wantPort{
			{"mlx5_0:1", "ARMED", "", "InfiniBand", "", ReasonArmed, false, -1},
			{"mlx5_1:1", "DOWN", "", "InfiniBand", "", ReasonCableOrPeer, false, -1},
		}},
		{"ibv_devinfo-v-roce.txt", FormatDevinfo, true, 3, []wantPort{
			{"mlx5_2:1", "ACTIVE", "LinkUp", "Ethernet", "", "", true, 3},
		}},
		{"ibstatus-mixed.txt", FormatIbstatus, false, -1, []wantPort{
			{"mlx5_0:1", "ACTIVE", "LinkUp", "InfiniBand", "100 Gb/sec (4X EDR)", "", true, -1},
			{"mlx5_1:1", "DOWN", "Disabled", "InfiniBand", "10 Gb/sec (4X SDR)", ReasonDisabled, false, -1},
		}},
		{"sysfs-roce-v2.txt", FormatSysfs, true, 3, []wantPort{
			{"mlx5_0:1", "ACTIVE", "LinkUp", "Ethernet", "200 Gb/sec (4X HDR)", "", true, 3},
			{"mlx5_1:1", "ACTIVE", "LinkUp", "Ethernet", "200 Gb/sec (4X HDR)", "", true, 3},
		}},
		// Multus macvlan: the host PF's RoCE v2 GID (3) is outside the pod; the pod's net1 has 5.
		{"sysfs-roce-macvlan.txt", FormatSysfs, true, 5, []wantPort{
			{"mlx5_0:1", "ACTIVE", "LinkUp", "Ethernet", "200 Gb/sec (4X HDR)", "", true, 5},
		}},
		{"sysfs-ib-init-prefixed.txt", FormatSysfs, false, -1, []wantPort{
			{"mlx5_0:1", "INIT", "LinkUp", "InfiniBand", "400 Gb/sec (4X NDR)", ReasonNoSM, false, -1},
		}},
	}
	for _, tc := range tests {
		t.Run(tc.file, func(t *testing.T) {
			r := golden.Parse(t, filepath.Join("testdata", tc.file), Parse)
			if r.Format != tc.format || r.Ready != tc.ready {
				t.Errorf("format %s ready %v, want %s %v", r.Format, r.Ready, tc.format, tc.ready)
			}
			if (tc.gidIndex < 0) != (r.GIDIndex == nil) || (r.GIDIndex != nil && *r.GIDIndex != tc.gidIndex) {
				t.Errorf("gidIndex %v, want %d", r.GIDIndex, tc.gidIndex)
			}
			checkPorts(t, r, tc.ports)
			golden.JSON(t, strings.TrimSuffix(tc.file, ".txt"), r)
		})
	}
}

// checkPorts compares a report's ports with want, in order: identity, states, link layer, rate
// (none when want has none), reason, readiness and RoCE v2 GID index; a port not ready has a fix.
func checkPorts(t *testing.T, r *Report, want []wantPort) {
	t.Helper()
	if len(r.Ports) != len(want) {
		t.Fatalf("%d ports, want %d: %+v", len(r.Ports), len(want), r.Ports)
	}
	for i, w := range want {
		p := r.Ports[i]
		id := p.Device + ":" + itoa(p.Port)
		rate := ""
		if p.Rate != nil {
			rate = *p.Rate
		}
		if id != w.id || p.State != w.state || p.PhysState != w.phys || p.LinkLayer != w.link || rate != w.rate || (w.rate == "") != (p.Rate == nil) || p.Reason != w.reason || p.Ready != w.ready {
			t.Errorf("port %d = %s %s %s %s %q %q %v, want %+v", i, id, p.State, p.PhysState, p.LinkLayer, rate, p.Reason, p.Ready, w)
		}
		if (w.gid < 0) != (p.RoCEv2GIDIndex == nil) || (p.RoCEv2GIDIndex != nil && *p.RoCEv2GIDIndex != w.gid) {
			t.Errorf("port %s roceV2GidIndex %v, want %d", id, p.RoCEv2GIDIndex, w.gid)
		}
		if !p.Ready && Fix(p.Reason, p.LinkLayer) == "" {
			t.Errorf("no fix for %s", p.Reason)
		}
	}
}

func itoa(n int) string { return strconv.Itoa(n) }

func TestNormalise(t *testing.T) {
	for in, want := range map[string]string{"4: ACTIVE": "ACTIVE", "Active": "ACTIVE", "PORT_ACTIVE (4)": "ACTIVE", "2: INIT": "INIT",
		"Initializing": "INIT", "PORT_INIT (2)": "INIT", "3: ARMED": "ARMED", "Armed": "ARMED", "1: DOWN": "DOWN", "Down": "DOWN", "4": "ACTIVE"} {
		if got := normState(in); got != want {
			t.Errorf("normState(%q) = %q, want %q", in, got, want)
		}
	}
	for in, want := range map[string]string{"5: LinkUp": "LinkUp", "LINK_UP (5)": "LinkUp", "LinkUp": "LinkUp", "2: Polling": "Polling",
		"POLLING (2)": "Polling", "3: Disabled": "Disabled", "DISABLED (3)": "Disabled", "4: PortConfigurationTraining": "PortConfigurationTraining"} {
		if got := normPhys(in); got != want {
			t.Errorf("normPhys(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestRoCEv2Index(t *testing.T) {
	gids := []GID{
		{Index: 0, GID: "fe80::1", Type: "RoCE v2"},
		{Index: 1, GID: "0000:0000:0000:0000:0000:0000:0000:0000", Type: "RoCE v2"},
		{Index: 2, GID: "::ffff:10.0.0.1", Type: "IB/RoCE v1"},
		{Index: 5, GID: "::ffff:10.0.0.1", Type: "RoCE v2"},
		{Index: 7, GID: "::ffff:0.0.0.0", Type: "RoCE v2"},
	}
	i, addr, ok, _ := roceV2Index(gids, nil)
	if !ok || i != 5 || addr != "10.0.0.1" {
		t.Errorf("got %d %s %v", i, addr, ok)
	}
	if _, _, ok, _ := roceV2Index(gids[:3], nil); ok {
		t.Error("found an index where there is none")
	}
}

// A RoCE device whose RoCE v2 IPv4 GIDs are all on host netdevs is not attached to the pod's
// network: no GID index, and the report says which netdevs they were on.
func TestRoCEForeignGIDs(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("testdata", "sysfs-roce-macvlan.txt"))
	if err != nil {
		t.Fatal(err)
	}
	var keep []string
	for _, l := range strings.Split(string(raw), "\n") {
		if !strings.Contains(l, "/net1/") && !strings.Contains(l, "/4:") && !strings.Contains(l, "/5:") {
			keep = append(keep, l)
		}
	}
	r, err := Parse(strings.NewReader(strings.Join(keep, "\n")))
	if err != nil {
		t.Fatal(err)
	}
	if r.GIDIndex != nil || len(r.ForeignGIDs) != 1 || r.ForeignGIDs[0] != "mlx5_0:1 (ens1f0np0)" || strings.Join(r.Netdevs, ",") != "eth0,lo" {
		t.Errorf("gid %v foreign %v netdevs %v", r.GIDIndex, r.ForeignGIDs, r.Netdevs)
	}
}

func TestEmpty(t *testing.T) {
	r, err := Parse(strings.NewReader("ibstat: command not found\n"))
	if err != nil || r.Ready || len(r.Ports) != 0 || r.Format != FormatUnknown {
		t.Errorf("%+v %v", r, err)
	}
}

// TestSysfsDumpCommand runs the documented command with sh and grep on this machine: it must be
// valid shell and succeed or print nothing whether or not RDMA devices exist, and what it
// prints must parse.
func TestSysfsDumpCommand(t *testing.T) {
	if strings.Contains(strings.ReplaceAll(SysfsDumpCommand, "${AIN_SYSFS_ROOT:-}", ""), "{") {
		t.Fatal("brace expansion is not available in busybox sh")
	}
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Skip("no sh")
	}
	out, _ := exec.Command(sh, "-c", SysfsDumpCommand).Output() // exit 1 when nothing matches
	r, err := Parse(bytes.NewReader(out))
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(out, []byte("/sys/class/infiniband/")) && (r.Format != FormatSysfs || len(r.Ports) == 0) {
		t.Errorf("the dump of this machine did not parse: %s", out)
	}
	if bytes.Contains(out, []byte("/sys/class/net/lo/")) && !slices.Contains(r.Netdevs, "lo") {
		t.Errorf("netdevs %v: lo missing from %s", r.Netdevs, out)
	}
}

// TestTaggedOutput reads ibstat output collected with per-node tags (pdsh, kubectl --prefix).
func TestTaggedOutput(t *testing.T) {
	in := "node-3: CA 'mlx5_0'\nnode-3: \tPort 1:\nnode-3: \t\tState: Initializing\nnode-3: \t\tPhysical state: LinkUp\nnode-3: \t\tRate: 400\nnode-3: \t\tLink layer: InfiniBand\n" +
		"[pod/probe-2/c] CA 'mlx5_1'\n[pod/probe-2/c] \tPort 1:\n[pod/probe-2/c] \t\tState: Active\n[pod/probe-2/c] \t\tPhysical state: LinkUp\n"
	r, err := Parse(strings.NewReader(in))
	if err != nil || len(r.Ports) != 2 {
		t.Fatalf("%+v %v", r, err)
	}
	if r.Ports[0].Reason != ReasonNoSM || !r.Ports[1].Ready || r.Ports[0].LinkLayer != "InfiniBand" {
		t.Errorf("ports %+v", r.Ports)
	}
	// A plain "State: Active" line is not a tag.
	if got := stripTag("State: Active"); got != "State: Active" {
		t.Errorf("stripTag = %q", got)
	}
}

func TestRateGbps(t *testing.T) {
	for in, want := range map[string]float64{"200 Gb/sec (4X HDR)": 200, "400 Gb/sec (4X NDR)": 400, "25 Gb/sec (1X EDR)": 25, "400": 400, "53.125 Gb/sec (1X HDR)": 53.125} {
		if got, ok := RateGbps(in); !ok || got != want {
			t.Errorf("%q: %v %v", in, got, ok)
		}
	}
	for _, bad := range []string{"", "fast", "-5 Gb/sec", "100 Mb/sec", "NaN", "+Inf"} {
		if _, ok := RateGbps(bad); ok {
			t.Errorf("%q parsed", bad)
		}
	}
}

// A host netdev's RoCE v2 GID at a lower index than the pod's macvlan GID is what NCCL takes
// when nothing steers it (no NCCL_IB_GID_INDEX, no NCCL_IB_ADDR_RANGE).
func TestUnsteeredGID(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("testdata", "sysfs-roce-macvlan.txt"))
	if err != nil {
		t.Fatal(err)
	}
	r, err := Parse(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	if got := r.Unsteered(); len(got) != 1 || got[0] != "mlx5_0:1 (index 3 of ens1f0np0 before the pod's index 5)" {
		t.Errorf("unsteered %v (GID index %v)", got, r.GIDIndex)
	}
	// Without the host's GIDs the pod's is the first: nothing to steer.
	var keep []string
	for _, l := range strings.Split(string(raw), "\n") {
		if !strings.Contains(l, "/2:") && !strings.Contains(l, "/3:") {
			keep = append(keep, l)
		}
	}
	if r, _ = Parse(strings.NewReader(strings.Join(keep, "\n"))); len(r.Unsteered()) != 0 {
		t.Errorf("only the pod's GIDs: %v", r.Unsteered())
	}
}

func TestMerge(t *testing.T) {
	three, four := 3, 4
	r := &Report{Format: "ibstat", Ports: []Port{{}}, Ready: true, GIDIndex: &three}
	r.Merge(&Report{Format: "ibstat", Ports: []Port{{}}, Ready: true, GIDIndex: &three})
	if len(r.Ports) != 2 || !r.Ready || r.Format != "ibstat" || r.GIDIndex == nil {
		t.Errorf("two agreeing reports: %+v", r)
	}
	r.Merge(&Report{Format: "sysfs", Ready: false, GIDIndex: &four})
	if r.Ready || r.Format != "ibstat+sysfs" || r.GIDIndex != nil {
		t.Errorf("a report that is not ready, of another format and GID index: %+v", r)
	}
}
