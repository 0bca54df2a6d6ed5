package perftest

import (
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/ain-hpc/ain/pkg/ibport"
)

// The in-pod GID choice runs for real here: its script, with sh (dash, and busybox's ash when the
// machine has it: the perftest image's /bin/sh is dash, an --image may be busybox), over fake
// /sys and /proc trees laid out as the kernel lays them out:
//
//   - /sys/class/infiniband/<dev>/ports/<p>/gids/<i>, gid_attrs/types/<i> ("RoCE v2" or
//     "IB/RoCE v1") and gid_attrs/ndevs/<i> (kernel Documentation/ABI/testing/sysfs-class-infiniband);
//     a GID is printed as 8 groups of 4 lowercase hex digits, an IPv4 one as
//     0000:0000:0000:0000:0000:ffff:c0a8:640b (the kernel's %pI6);
//   - /sys/class/net/<if> for the pod's interfaces;
//   - /proc/net/fib_trie (net/ipv4/fib_trie.c fib_trie_seq_show: "|-- <addr>" then
//     "/<len> <scope> <type>" lines; a local address is "/32 host LOCAL", shown under Main: and
//     again under Local:) and /proc/net/route (net/ipv4/fib_trie.c fib_route_seq_show: hex
//     Destination, Gateway and Mask in host byte order).

// gidEntry is one GID table entry of a fake port.
type gidEntry struct {
	idx      int
	gid, typ string // typ "" leaves the type file out (an unused entry, unreadable in sysfs)
	ndev     string
}

// v4GID is the IPv4-mapped GID of a as sysfs prints it.
func v4GID(a string) string {
	b := netip.MustParseAddr(a).As4()
	return fmt.Sprintf("0000:0000:0000:0000:0000:ffff:%02x%02x:%02x%02x", b[0], b[1], b[2], b[3])
}

// podNet is one of the pod's interfaces and its IPv4 address with prefix ("" : none).
type podNet struct{ name, cidr string }

// fakeRoot writes the /sys and /proc a pod would see.
func fakeRoot(t *testing.T, ports map[string][]gidEntry, nets []podNet) string {
	t.Helper()
	root := t.TempDir()
	write := func(path, val string) {
		f := filepath.Join(root, filepath.FromSlash(path))
		if err := os.MkdirAll(filepath.Dir(f), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(f, []byte(val+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for port, gids := range ports {
		dev, p, _ := strings.Cut(port, ":")
		base := "/sys/class/infiniband/" + dev + "/ports/" + p
		write(base+"/state", "4: ACTIVE")
		write(base+"/link_layer", "Ethernet")
		for _, g := range gids {
			write(fmt.Sprintf("%s/gids/%d", base, g.idx), g.gid)
			if g.typ != "" {
				write(fmt.Sprintf("%s/gid_attrs/types/%d", base, g.idx), g.typ)
			}
			if g.ndev != "" {
				write(fmt.Sprintf("%s/gid_attrs/ndevs/%d", base, g.idx), g.ndev)
			}
		}
	}
	// fib_trie: every local address under Main: and Local:; route: one connected route per
	// interface with an address, the default route through eth0.
	var leaves []string
	route := "Iface\tDestination\tGateway \tFlags\tRefCnt\tUse\tMetric\tMask\t\tMTU\tWindow\tIRTT\n"
	le := func(a netip.Addr) uint32 {
		b := a.As4()
		return uint32(b[0]) | uint32(b[1])<<8 | uint32(b[2])<<16 | uint32(b[3])<<24
	}
	for i, n := range append([]podNet{{"lo", "127.0.0.1/8"}}, nets...) {
		write("/sys/class/net/"+n.name+"/ifindex", fmt.Sprint(i+1))
		if n.cidr == "" {
			continue
		}
		pf := netip.MustParsePrefix(n.cidr)
		leaves = append(leaves, fmt.Sprintf("     +-- %s 2 0 2\n        |-- %s\n           /%d link UNICAST\n        |-- %s\n           /32 host LOCAL\n",
			pf.Masked(), pf.Masked().Addr(), pf.Bits(), pf.Addr()))
		if n.name == "lo" {
			continue
		}
		mask := ^uint32(0) << (32 - pf.Bits())
		m := netip.AddrFrom4([4]byte{byte(mask >> 24), byte(mask >> 16), byte(mask >> 8), byte(mask)})
		if n.name == "eth0" {
			route += fmt.Sprintf("eth0\t00000000\t%08X\t0003\t0\t0\t0\t00000000\t0\t0\t0%s\n", le(pf.Masked().Addr())|1<<24, strings.Repeat(" ", 40))
		}
		route += fmt.Sprintf("%s\t%08X\t00000000\t0001\t0\t0\t0\t%08X\t0\t0\t0%s\n", n.name, le(pf.Masked().Addr()), le(m), strings.Repeat(" ", 40))
	}
	trie := "Main:\n  +-- 0.0.0.0/0 3 0 5\n" + strings.Join(leaves, "") + "Local:\n  +-- 0.0.0.0/0 3 0 5\n" + strings.Join(leaves, "")
	write("/proc/net/fib_trie", strings.TrimSuffix(trie, "\n"))
	write("/proc/net/route", strings.TrimSuffix(route, "\n"))
	return root
}

// shells are the POSIX shells the script must run under here.
func shells(t *testing.T) [][]string {
	out := [][]string{{"/bin/sh"}}
	if p, err := exec.LookPath("busybox"); err == nil {
		out = append(out, []string{p, "sh"})
	}
	return out
}

// runScript runs script under sh with root as the pod's / and bin first on PATH.
func runScript(t *testing.T, sh []string, script, root, bin string) (string, int) {
	t.Helper()
	cmd := exec.Command(sh[0], append(sh[1:], "-c", script)...)
	cmd.Env = []string{"PATH=" + bin + ":/usr/bin:/bin", "AIN_SYSFS_ROOT=" + root}
	out, err := cmd.CombinedOutput()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return string(out), code
}

// goRule is what pkg/ibport (profile detect's and preflight's rule) chooses over the same tree:
// the sysfs dump the probe pods print, parsed, then Port.RoCEv2GIDOf the pod's address.
func goRule(t *testing.T, root, port, addr string) (int, bool) {
	t.Helper()
	cmd := exec.Command("/bin/sh", "-c", ibport.SysfsDumpCommand)
	cmd.Env = []string{"PATH=/usr/bin:/bin", "AIN_SYSFS_ROOT=" + root}
	out, _ := cmd.Output()
	rep, err := ibport.Parse(strings.NewReader(string(out)))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range rep.Ports {
		if fmt.Sprintf("%s:%d", p.Device, p.Port) == port {
			g, ok := p.RoCEv2GIDOf([]netip.Addr{netip.MustParseAddr(addr)})
			return g.Index, ok
		}
	}
	return 0, false
}

// A shared RoCE port (RDMA shared device plugin + macvlan): the host's GIDs, two other pods'
// (whose interfaces are also named net1), then this pod's, each address as a RoCE v1 and a RoCE v2
// entry; the IPv6 link-local pairs of each netdev too.
func sharedPort(me string) []gidEntry {
	var g []gidEntry
	add := func(idx int, gid, typ, ndev string) {
		g = append(g, gidEntry{idx: idx, gid: gid, typ: typ, ndev: ndev})
	}
	add(0, "fe80:0000:0000:0000:1070:fdff:fe3e:8a10", "IB/RoCE v1", "ens1f0np0")
	add(1, "fe80:0000:0000:0000:1070:fdff:fe3e:8a10", "RoCE v2", "ens1f0np0")
	add(2, v4GID("192.168.100.2"), "IB/RoCE v1", "ens1f0np0")
	add(3, v4GID("192.168.100.2"), "RoCE v2", "ens1f0np0")
	for k, other := range []string{"192.168.100.12", "192.168.100.13"} {
		add(4+4*k, "fe80:0000:0000:0000:a8c1:abff:fe00:00"+fmt.Sprintf("%02x", k), "IB/RoCE v1", "net1")
		add(5+4*k, "fe80:0000:0000:0000:a8c1:abff:fe00:00"+fmt.Sprintf("%02x", k), "RoCE v2", "net1")
		add(6+4*k, v4GID(other), "IB/RoCE v1", "net1")
		add(7+4*k, v4GID(other), "RoCE v2", "net1")
	}
	if me != "" {
		add(12, "fe80:0000:0000:0000:a8c1:abff:fe00:0099", "IB/RoCE v1", "net1")
		add(13, "fe80:0000:0000:0000:a8c1:abff:fe00:0099", "RoCE v2", "net1")
		add(14, v4GID(me), "IB/RoCE v1", "net1")
		add(15, v4GID(me), "RoCE v2", "net1")
	}
	return g
}

func TestGIDScriptChoosesThePodsOwnGID(t *testing.T) {
	nets := []podNet{{"eth0", "10.244.1.5/24"}, {"net1", "192.168.100.11/24"}}
	down := []gidEntry{{idx: 0, gid: "fe80:0000:0000:0000:1070:fdff:fe3e:8a11", typ: "IB/RoCE v1", ndev: "ens1f1np1"}}
	// The pod's RoCE v1 entry of its address sits below its RoCE v2 entry here: not chosen.
	v1First := []gidEntry{
		{idx: 0, gid: "fe80:0000:0000:0000:1070:fdff:fe3e:8a10", typ: "IB/RoCE v1", ndev: "ens1f0np0"},
		{idx: 2, gid: v4GID("192.168.100.11"), typ: "IB/RoCE v1", ndev: "net1"},
		{idx: 3, gid: v4GID("192.168.100.2"), typ: "RoCE v2", ndev: "ens1f0np0"},
		{idx: 5, gid: v4GID("192.168.100.11"), typ: "RoCE v2", ndev: "net1"},
		{idx: 6, gid: "0000:0000:0000:0000:0000:0000:0000:0000", ndev: ""}, // unused entry: no type file
	}
	for _, c := range []struct {
		name  string
		ports map[string][]gidEntry
		dev   string
		port  int
		want  GIDChoice
	}{
		{"shared port, named device", map[string][]gidEntry{"mlx5_0:1": sharedPort("192.168.100.11"), "mlx5_1:1": down}, "mlx5_0", 0,
			GIDChoice{Index: 15, Device: "mlx5_0", Port: 1, Address: "192.168.100.11", Netdev: "net1"}},
		{"shared port, device left open", map[string][]gidEntry{"mlx5_1:1": down, "mlx5_0:1": sharedPort("192.168.100.11")}, "", 0,
			GIDChoice{Index: 15, Device: "mlx5_0", Port: 1, Address: "192.168.100.11", Netdev: "net1"}},
		{"RoCE v1 of the same address first", map[string][]gidEntry{"mlx5_0:1": v1First}, "mlx5_0", 1,
			GIDChoice{Index: 5, Device: "mlx5_0", Port: 1, Address: "192.168.100.11", Netdev: "net1"}},
	} {
		root := fakeRoot(t, c.ports, nets)
		for _, sh := range shells(t) {
			out, code := runScript(t, sh, gidScript(c.dev, c.port), root, t.TempDir())
			got, fail := FindGIDChoice([]byte(out))
			if code != 0 || got == nil || *got != c.want {
				t.Errorf("%s (%s): exit %d, %+v %q, want %+v\n%s", c.name, sh[0], code, got, fail, c.want, out)
				continue
			}
			if line := strings.TrimSpace(out); line != GIDChoiceLine(c.want) {
				t.Errorf("%s: the script prints\n%s\nGIDChoiceLine gives\n%s", c.name, line, GIDChoiceLine(c.want))
			}
		}
		// The same rule as profile detect's and preflight's (pkg/ibport), over the same tree.
		if idx, ok := goRule(t, root, c.want.Device+":1", c.want.Address); !ok || idx != c.want.Index {
			t.Errorf("%s: ibport's RoCEv2GIDOf says %d %v, the script %d", c.name, idx, ok, c.want.Index)
		}
	}
}

// Two RDMA interfaces in one subnet (each rail's netdev on its own port): the route table puts
// both addresses on the first, yet net2's GID on mlx5_1 is found by its address.
func TestGIDScriptSameSubnet(t *testing.T) {
	ports := map[string][]gidEntry{
		"mlx5_0:1": {{idx: 3, gid: v4GID("10.10.1.11"), typ: "RoCE v2", ndev: "net1"}},
		"mlx5_1:1": {{idx: 2, gid: v4GID("10.10.1.12"), typ: "IB/RoCE v1", ndev: "net2"}, {idx: 3, gid: v4GID("10.10.1.12"), typ: "RoCE v2", ndev: "net2"}},
	}
	root := fakeRoot(t, ports, []podNet{{"eth0", "10.244.1.5/24"}, {"net1", "10.10.1.11/24"}, {"net2", "10.10.1.12/24"}})
	out, code := runScript(t, []string{"/bin/sh"}, gidScript("mlx5_1", 1), root, t.TempDir())
	want := GIDChoice{Index: 3, Device: "mlx5_1", Port: 1, Address: "10.10.1.12", Netdev: "net2"}
	if got, _ := FindGIDChoice([]byte(out)); code != 0 || got == nil || *got != want {
		t.Errorf("exit %d, %+v, want %+v\n%s", code, got, want, out)
	}
}

func TestGIDScriptFails(t *testing.T) {
	withNet1 := []podNet{{"eth0", "10.244.1.5/24"}, {"net1", "192.168.100.11/24"}}
	onlyV1 := append(sharedPort(""), gidEntry{idx: 14, gid: v4GID("192.168.100.11"), typ: "IB/RoCE v1", ndev: "net1"})
	ipv6Only := []gidEntry{
		{idx: 0, gid: "fe80:0000:0000:0000:a8c1:abff:fe00:0099", typ: "IB/RoCE v1", ndev: "net1"},
		{idx: 1, gid: "fe80:0000:0000:0000:a8c1:abff:fe00:0099", typ: "RoCE v2", ndev: "net1"},
		{idx: 2, gid: "fd00:0000:0000:0064:0000:0000:0000:000b", typ: "IB/RoCE v1", ndev: "net1"},
		{idx: 3, gid: "fd00:0000:0000:0064:0000:0000:0000:000b", typ: "RoCE v2", ndev: "net1"},
	}
	hostOnly := []gidEntry{
		{idx: 2, gid: v4GID("10.0.0.3"), typ: "IB/RoCE v1", ndev: "ens1f0np0"},
		{idx: 3, gid: v4GID("10.0.0.3"), typ: "RoCE v2", ndev: "ens1f0np0"},
	}
	for _, c := range []struct {
		name  string
		ports map[string][]gidEntry
		nets  []podNet
		dev   string
		want  []string
	}{
		// Other pods' and the host's GIDs only: the pod's own address is not in the table.
		{"no GID of the pod's address", map[string][]gidEntry{"mlx5_0:1": sharedPort("")}, withNet1, "mlx5_0",
			[]string{"no RoCE v2 GID of the pod's address 192.168.100.11", "mlx5_0:1", "3:192.168.100.2@ens1f0np0", "7:192.168.100.12@net1", "--gid-index"}},
		// The address is there as RoCE v1 only: never chosen.
		{"RoCE v1 only", map[string][]gidEntry{"mlx5_0:1": onlyV1}, withNet1, "mlx5_0",
			[]string{"no RoCE v2 GID of the pod's address 192.168.100.11", "mlx5_0:1"}},
		// net1 has IPv6 addresses only.
		{"IPv6 only", map[string][]gidEntry{"mlx5_0:1": ipv6Only}, []podNet{{"eth0", "10.244.1.5/24"}, {"net1", ""}}, "mlx5_0",
			[]string{"net1 on mlx5_0:1 has no IPv4 address", "10.244.1.5", "::ffff:a.b.c.d", "--gid-index"}},
		// The RDMA network is not attached: the GIDs are the host's.
		{"no interface on the port", map[string][]gidEntry{"mlx5_0:1": hostOnly}, []podNet{{"eth0", "10.244.1.5/24"}}, "mlx5_0",
			[]string{"no GID of mlx5_0:1 is on an interface of this pod", "eth0", "3:10.0.0.3@ens1f0np0", "Multus"}},
		{"no such device", map[string][]gidEntry{"mlx5_0:1": hostOnly}, withNet1, "mlx5_4",
			[]string{"no RDMA port device mlx5_4 port 1"}},
	} {
		root := fakeRoot(t, c.ports, c.nets)
		for _, sh := range shells(t) {
			out, code := runScript(t, sh, gidScript(c.dev, 0), root, t.TempDir())
			got, fail := FindGIDChoice([]byte(out))
			if code != gidExit || got != nil {
				t.Errorf("%s (%s): exit %d, %+v, want exit %d and no choice\n%s", c.name, sh[0], code, got, gidExit, out)
			}
			for _, w := range c.want {
				if !strings.Contains(fail, w) {
					t.Errorf("%s (%s): failure %q lacks %q", c.name, sh[0], fail, w)
				}
			}
		}
	}
}

// The pods' whole scripts: the choice reaches perftest's argv as -x (and -d/-i when the device
// was left open); a failed choice ends the client at once, perftest never started.
func TestGIDScriptInPerftestScripts(t *testing.T) {
	root := fakeRoot(t, map[string][]gidEntry{"mlx5_0:1": sharedPort("192.168.100.11")}, []podNet{{"eth0", "10.244.1.5/24"}, {"net1", "192.168.100.11/24"}})
	bin := t.TempDir()
	calls := filepath.Join(bin, "calls")
	stub := "#!/bin/sh\necho \"$0 $*\" >> " + calls + "\necho ran\n"
	if err := os.WriteFile(filepath.Join(bin, "ib_write_bw"), []byte(stub), 0o755); err != nil {
		t.Fatal(err)
	}
	argv := func() []string {
		b, _ := os.ReadFile(calls)
		_ = os.Remove(calls)
		var out []string
		for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
			if l != "" {
				out = append(out, strings.Join(strings.Fields(l)[1:], " "))
			}
		}
		sort.Strings(out)
		return out
	}
	for _, c := range []struct {
		cmd    Command
		server bool
		want   string
	}{
		{Command{Test: "ib_write_bw", Device: "mlx5_0", GIDFromAddress: true}, true, "-d mlx5_0 -x 15 -q 1 --report_gbits -a -F -p 18515"},
		{Command{Test: "ib_write_bw", GIDFromAddress: true}, false, "-d mlx5_0 -i 1 -x 15 -q 1 --report_gbits -a -F -p 18515 192.168.100.12"},
	} {
		script := c.cmd.ClientScript("192.168.100.12")
		if c.server {
			script = c.cmd.ServerScript()
		}
		out, code := runScript(t, []string{"/bin/sh"}, script, root, bin)
		if got := argv(); code != 0 || len(got) != 1 || got[0] != c.want {
			t.Errorf("%+v: exit %d, perftest ran with %q, want %q\n%s", c.cmd, code, got, c.want, out)
		}
		ch, _ := FindGIDChoice([]byte(out))
		if ch == nil || strings.Join(c.cmd.Chosen(*ch).Args(map[bool]string{false: "192.168.100.12"}[c.server]), " ") != "ib_write_bw "+c.want {
			t.Errorf("Chosen(%+v) does not give what ran: %v", ch, c.cmd.Chosen(GIDChoice{}).Args(""))
		}
	}
	// A fixed index wins: no choice in the pod.
	idx := 3
	if s := (Command{Test: "ib_write_bw", GIDIndex: &idx, GIDFromAddress: true}).ServerScript(); strings.Contains(s, "ain-gid") || !strings.Contains(s, "-x 3") {
		t.Errorf("fixed index: %s", s)
	}
	// No GID of the pod: the client fails with the reason, once, and perftest never runs.
	root = fakeRoot(t, map[string][]gidEntry{"mlx5_0:1": sharedPort("")}, []podNet{{"eth0", "10.244.1.5/24"}, {"net1", "192.168.100.11/24"}})
	out, code := runScript(t, []string{"/bin/sh"}, Command{Test: "ib_write_bw", Device: "mlx5_0", GIDFromAddress: true}.ClientScript("192.168.100.12"), root, bin)
	if _, fail := FindGIDChoice([]byte(out)); code != gidExit || fail == "" || len(argv()) != 0 || strings.Count(out, "ain-gid") != 1 {
		t.Errorf("exit %d, output:\n%s", code, out)
	}
}
