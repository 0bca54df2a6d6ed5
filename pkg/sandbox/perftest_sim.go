package sandbox

import (
	"bytes"
	"context"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/ain-hpc/ain/pkg/perftest"
)

// The perftest samples' numbers (samples/perftest/): a client's table consistent with the rate
// of the link between the two nodes (SampleData.PathGbps). Rows are printed with perftest's own
// formats (src/perftest_parameters.h REPORT_FMT and REPORT_FMT_LAT, linux-rdma/perftest).
const (
	// perftestEfficiency: ib_write_bw reaches about 97% of an HDR/NDR port's signalling rate.
	perftestEfficiency = 0.97
	// perftestMpps: the small-message rate of one QP (millions of messages per second).
	perftestMpps = 7.0
	// perftestBaseLatUs: ib_write_lat's 2-byte typical latency over one IB switch.
	perftestBaseLatUs = 0.98
)

// argOf returns the value after flag in a command line ("-q 4" -> "4"), or def.
func argOf(cmd, flag, def string) string {
	f := strings.Fields(cmd)
	for i := 0; i+1 < len(f); i++ {
		if f[i] == flag {
			return f[i+1]
		}
	}
	return def
}

// perftestSizes are the sizes of a run: -s N, else -a (2 B to 8 MiB).
func perftestSizes(cmd string) []int64 {
	if s, err := strconv.ParseInt(argOf(cmd, "-s", ""), 10, 64); err == nil && s > 0 {
		return []int64{s}
	}
	var out []int64
	for s := int64(2); s <= 1<<23; s *= 2 {
		out = append(out, s)
	}
	return out
}

// perftestBWRows is the table of a bandwidth client over a link of gbps, with --report_gbits.
func perftestBWRows(gbps float64, cmd string) string {
	qps, _ := strconv.Atoi(argOf(cmd, "-q", "1"))
	qps = max(qps, 1)
	var b strings.Builder
	for _, size := range perftestSizes(cmd) {
		// The message rate bounds small sizes, the link large ones; in between both cost time
		// (harmonic sum), so the curve bends over 4-64 KiB as measured ones do.
		small := float64(size) * 8 * perftestMpps * float64(min(qps, 4)) / 1000
		avg := 1 / (1/small + 1/(gbps*perftestEfficiency))
		peak := avg * 1.003
		rate := avg * 125 / float64(size) // Gb/s -> millions of messages per second
		fmt.Fprintf(&b, " %-7d    %-10d       %-7.2f            %-7.2f\t\t     %-7.6f\n", size, 5000, peak, avg, rate)
	}
	return strings.TrimRight(b.String(), "\n")
}

// perftestLatRows is the table of ib_write_lat over a link of gbps.
func perftestLatRows(gbps float64, cmd string) string {
	var b strings.Builder
	for _, size := range perftestSizes(cmd) {
		wire := float64(size) * 8 / (gbps * 1000) // microseconds on the wire
		typ := perftestBaseLatUs + wire
		fmt.Fprintf(&b, " %-7d %d          %-7.2f        %-7.2f      %-7.2f  \t       %-7.2f     \t%-7.2f\t\t%-7.2f \t\t%-7.2f\n",
			size, 1000, typ-0.10, typ*6.9, typ, typ+0.05, 0.21, typ+0.23, typ*5.5)
	}
	return strings.TrimRight(b.String(), "\n")
}

// PerftestStartup is what a perftest pod's script did before perftest printed anything: the
// in-pod GID choice's line (perftest.GIDLinePrefix), and the perftest command it ran.
type PerftestStartup struct {
	GIDLine string
	Failed  bool   // the choice failed: the pod printed GIDLine and stopped
	Command string // the perftest command line with the chosen -x (and -d/-i); else .Command
	// LocalGID and RemoteGID are the RoCE v2 GIDs of this pod's chosen address and of the
	// server's (a client's last argument), as perftest prints a GID: 16 decimal bytes.
	LocalGID, RemoteGID string
}

// perftestGID is an IPv4 address's mapped GID as perftest prints it ("GID: 00:...:255:255:10:10:2:11").
func perftestGID(addr string) string {
	a, err := netip.ParseAddr(addr)
	if err != nil || !a.Is4() {
		return ""
	}
	b := a.As16() // the IPv4-mapped form, ::ffff:a.b.c.d
	parts := make([]string, 16)
	for i, x := range b {
		parts[i] = fmt.Sprintf("%02d", x)
	}
	return strings.Join(parts, ":")
}

// PerftestStart runs the pod's own script up to perftest (the samples call it first) when the
// pods choose their RoCE GID (perftest.Command.GIDFromAddress): with sh, over the node's
// simulated sysfs (probe/sysfs-roce-active.txt, the IB port probe's) and the pod's /proc/net
// (eth0 with the pod IP, net1 and net2 at SecondaryIP, as multus.go and that sample have them),
// with stand-ins for the perftest binaries that print the command they were given. So the
// index a sandbox perftest reports is what the script makes of the GID table, as on a cluster.
func (d SampleData) PerftestStart() (PerftestStartup, error) {
	st := PerftestStartup{Command: d.Command}
	script, ok := strings.CutPrefix(d.Command, "/bin/sh -c ")
	if !ok || !strings.Contains(script, perftest.GIDLinePrefix) {
		return st, nil
	}
	desc, err := RenderSample("probe/sysfs-roce-active.txt", d)
	if err != nil {
		return st, err
	}
	root, err := os.MkdirTemp("", "ain-perftest-")
	if err != nil {
		return st, err
	}
	defer os.RemoveAll(root)
	if _, err := WriteSysfsTree(root, desc); err != nil {
		return st, err
	}
	nets := [][2]string{{"lo", "127.0.0.1/8"}, {"eth0", d.PodIP + "/24"}, {"net1", SecondaryIP(d.NodeIndex, 0) + "/24"}, {"net2", SecondaryIP(d.NodeIndex, 1) + "/24"}}
	trie, route := procNet(nets)
	bin := filepath.Join(root, "bin")
	files := map[string]string{"proc/net/fib_trie": trie, "proc/net/route": route}
	for _, t := range perftest.Tests {
		files["bin/"+t] = "#!/bin/sh\necho \"ain-sandbox-ran: ${0##*/} $*\"\n"
	}
	for name, text := range files {
		f := filepath.Join(root, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(f), 0o755); err != nil {
			return st, err
		}
		if err := os.WriteFile(f, []byte(text), 0o755); err != nil {
			return st, err
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "/bin/sh", "-c", script)
	cmd.Env = []string{"PATH=" + bin + ":/usr/bin:/bin", SysfsRootEnv + "=" + root}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	runErr := cmd.Run()
	for _, l := range strings.Split(out.String(), "\n") {
		switch {
		case strings.HasPrefix(l, perftest.GIDLinePrefix):
			st.GIDLine = l
		case strings.HasPrefix(l, "ain-sandbox-ran: "):
			st.Command = strings.TrimPrefix(l, "ain-sandbox-ran: ")
		}
	}
	ch, fail := perftest.FindGIDChoice([]byte(st.GIDLine))
	if fail != "" {
		st.Failed = true
		return st, nil
	}
	if ch != nil {
		st.LocalGID = perftestGID(ch.Address)
		if f := strings.Fields(st.Command); len(f) > 0 {
			st.RemoteGID = perftestGID(f[len(f)-1])
		}
	}
	if runErr != nil || st.GIDLine == "" {
		return st, fmt.Errorf("the perftest pod's script over the simulated sysfs: %v\n%s", runErr, out.String())
	}
	return st, nil
}

// procNet is a pod's /proc/net/fib_trie and /proc/net/route for its interfaces (name, a.b.c.d/len),
// in the kernel's layouts (net/ipv4/fib_trie.c: fib_trie_seq_show lists each local address as
// "|-- a.b.c.d" then "/32 host LOCAL", under Main: and Local:; fib_route_seq_show prints
// Destination, Gateway and Mask as host-order hex, little-endian here).
func procNet(nets [][2]string) (trie, route string) {
	var leaves strings.Builder
	var routes strings.Builder
	routes.WriteString("Iface\tDestination\tGateway \tFlags\tRefCnt\tUse\tMetric\tMask\t\tMTU\tWindow\tIRTT\n")
	le := func(a netip.Addr) uint32 {
		b := a.As4()
		return uint32(b[0]) | uint32(b[1])<<8 | uint32(b[2])<<16 | uint32(b[3])<<24
	}
	for _, n := range nets {
		pf, err := netip.ParsePrefix(n[1])
		if err != nil || !pf.Addr().Is4() {
			continue
		}
		net := pf.Masked().Addr()
		fmt.Fprintf(&leaves, "     +-- %s 2 0 2\n        |-- %s\n           /%d link UNICAST\n        |-- %s\n           /32 host LOCAL\n", pf.Masked(), net, pf.Bits(), pf.Addr())
		if n[0] == "lo" {
			continue
		}
		mask := ^uint32(0) << (32 - pf.Bits())
		m := uint32(byte(mask>>24)) | uint32(byte(mask>>16))<<8 | uint32(byte(mask>>8))<<16 | uint32(byte(mask))<<24
		if n[0] == "eth0" {
			fmt.Fprintf(&routes, "eth0\t00000000\t%08X\t0003\t0\t0\t0\t00000000\t0\t0\t0\n", le(net)|1<<24)
		}
		fmt.Fprintf(&routes, "%s\t%08X\t00000000\t0001\t0\t0\t0\t%08X\t0\t0\t0\n", n[0], le(net), m)
	}
	head := "  +-- 0.0.0.0/0 3 0 5\n"
	return "Main:\n" + head + leaves.String() + "Local:\n" + head + leaves.String(), routes.String()
}

// The TCP baseline's numbers (samples/iperf3/): an iperf3 -J report in iperf3's own layout (cJSON,
// tab-indented; key names of iperf_api.c). TCP over the same link gets what a few cores can push:
// about 4.8 Gb/s per stream with a 9000-byte MTU, at most 45% of the link.
const (
	iperfPerStreamGbps = 4.825
	iperfLinkShare     = 0.45
)

// iperfReport is the client's report for a run of cmd (iperf3 -c IP -P N -t T -J) over a link of
// gbps, from the pod at local.
func iperfReport(gbps float64, cmd, local string) string {
	streams, _ := strconv.Atoi(argOf(cmd, "-P", "1"))
	secs, _ := strconv.Atoi(argOf(cmd, "-t", "10"))
	streams, secs = max(streams, 1), max(secs, 1)
	server := argOf(cmd, "-c", "10.244.0.1")
	rate := min(float64(streams)*iperfPerStreamGbps, gbps*perftestEfficiency*iperfLinkShare) * 1e9
	rcv := uint64(rate * float64(secs) / 8)
	sent := rcv + rcv/500
	var conns []string
	for i := 0; i < streams; i++ {
		conns = append(conns, fmt.Sprintf("{\n\t\t\t\t\"socket\":\t%d,\n\t\t\t\t\"local_host\":\t%q,\n\t\t\t\t\"local_port\":\t%d,\n\t\t\t\t\"remote_host\":\t%q,\n\t\t\t\t\"remote_port\":\t5201\n\t\t\t}", 5+i, local, 45000+i, server))
	}
	var b strings.Builder
	fmt.Fprintf(&b, "{\n\t\"start\":\t{\n\t\t\"connected\":\t[%s],\n", strings.Join(conns, ", "))
	fmt.Fprintf(&b, "\t\t\"version\":\t\"iperf 3.16\",\n\t\t\"system_info\":\t\"Linux ain-iperf3-client 5.15.0-105-generic #115-Ubuntu SMP Mon Apr 15 09:52:04 UTC 2024 x86_64\",\n")
	fmt.Fprintf(&b, "\t\t\"connecting_to\":\t{\n\t\t\t\"host\":\t%q,\n\t\t\t\"port\":\t5201\n\t\t},\n", server)
	fmt.Fprintf(&b, "\t\t\"tcp_mss_default\":\t8948,\n\t\t\"sock_bufsize\":\t0,\n\t\t\"sndbuf_actual\":\t16384,\n\t\t\"rcvbuf_actual\":\t131072,\n")
	fmt.Fprintf(&b, "\t\t\"test_start\":\t{\n\t\t\t\"protocol\":\t\"TCP\",\n\t\t\t\"num_streams\":\t%d,\n\t\t\t\"blksize\":\t131072,\n\t\t\t\"omit\":\t0,\n\t\t\t\"duration\":\t%d,\n\t\t\t\"bytes\":\t0,\n\t\t\t\"blocks\":\t0,\n\t\t\t\"reverse\":\t0,\n\t\t\t\"tos\":\t0\n\t\t}\n\t},\n", streams, secs)
	fmt.Fprintf(&b, "\t\"intervals\":\t[],\n\t\"end\":\t{\n")
	fmt.Fprintf(&b, "\t\t\"sum_sent\":\t{\n\t\t\t\"start\":\t0,\n\t\t\t\"end\":\t%d,\n\t\t\t\"seconds\":\t%d,\n\t\t\t\"bytes\":\t%d,\n\t\t\t\"bits_per_second\":\t%.1f,\n\t\t\t\"retransmits\":\t%d,\n\t\t\t\"sender\":\ttrue\n\t\t},\n", secs, secs, sent, float64(sent)*8/float64(secs), streams*234)
	fmt.Fprintf(&b, "\t\t\"sum_received\":\t{\n\t\t\t\"start\":\t0,\n\t\t\t\"end\":\t%d.000412,\n\t\t\t\"seconds\":\t%d,\n\t\t\t\"bytes\":\t%d,\n\t\t\t\"bits_per_second\":\t%.1f,\n\t\t\t\"sender\":\ttrue\n\t\t},\n", secs, secs, rcv, float64(rcv)*8/float64(secs))
	fmt.Fprintf(&b, "\t\t\"cpu_utilization_percent\":\t{\n\t\t\t\"host_total\":\t61.48214071153051,\n\t\t\t\"host_user\":\t1.9823540158062367,\n\t\t\t\"host_system\":\t59.49978669572427,\n\t\t\t\"remote_total\":\t48.03519210823398,\n\t\t\t\"remote_user\":\t2.123007911346209,\n\t\t\t\"remote_system\":\t45.91218419688777\n\t\t},\n")
	fmt.Fprintf(&b, "\t\t\"sender_tcp_congestion\":\t\"cubic\",\n\t\t\"receiver_tcp_congestion\":\t\"cubic\"\n\t}\n}")
	return b.String()
}
