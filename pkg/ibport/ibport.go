// Package ibport reads the state of InfiniBand/RoCE ports from the output of the usual tools
// (`ibstat`, `ibv_devinfo`, `ibv_devinfo -v`, `ibstatus`) or from a sysfs dump, and says whether
// each port can carry NCCL traffic, and if not, why.
//
// # The sysfs dump
//
// A probe pod (any image with a POSIX shell and grep, busybox included) prints the port
// attributes as `path:value` lines with SysfsDumpCommand:
//
//	/sys/class/infiniband/mlx5_0/ports/1/state:4: ACTIVE
//	/sys/class/infiniband/mlx5_0/ports/1/phys_state:5: LinkUp
//	/sys/class/infiniband/mlx5_0/ports/1/link_layer:Ethernet
//	/sys/class/infiniband/mlx5_0/ports/1/rate:400 Gb/sec (4X NDR)
//	/sys/class/infiniband/mlx5_0/ports/1/lid:0x0
//	/sys/class/infiniband/mlx5_0/ports/1/sm_lid:0x0
//	/sys/class/infiniband/mlx5_0/ports/1/gids/3:0000:0000:0000:0000:0000:ffff:0a00:0003
//	/sys/class/infiniband/mlx5_0/ports/1/gid_attrs/types/3:RoCE v2
//	/sys/class/infiniband/mlx5_0/ports/1/gid_attrs/ndevs/3:net1
//
//	/sys/class/net/net1/ifindex:3
//
// The /sys/class/net lines name the network interfaces of the namespace the command runs in
// (a pod sees only its own: eth0, net1 ...). Everything up to the first ':' is the path (sysfs paths hold no ':'), the rest is the file's
// first line as the kernel prints it. Lines may carry a prefix (kubectl --prefix, indentation):
// parsing starts at "/sys/class/infiniband/". All-zero GIDs are filtered out by the command;
// unused GID type files, which the kernel refuses to read, print nothing.
//
// # Readiness
//
// A port is ready when its logical state is ACTIVE (and its physical state, when known, LinkUp).
// NCCL skips non-ACTIVE ports silently, so this is the check that tells "port not ready" from
// the other causes of `NET/IB : No device found`. Reasons: LinkUp + INIT means the link is fine
// but no subnet manager has configured the port (no-subnet-manager); Polling or Down means the
// cable, transceiver or the switch port (cable-or-peer-down); Disabled means administratively
// down (disabled); ARMED means the SM configured it but has not activated it yet (armed).
//
// For RoCE ports the package finds the RoCE v2 GID whose address is IPv4-mapped
// (::ffff:a.b.c.d), the value NCCL_IB_GID_INDEX should have. When the dump names the
// interfaces the probe saw (/sys/class/net), only a GID whose netdev is one of them counts: with
// a Multus macvlan or host-device network the GID table also lists GIDs of host netdevs and of
// other pods' interfaces, and a GID whose netdev is outside the pod's network namespace fails
// QP setup ("ibv_modify_qp failed with 19 No such device").
package ibport

import (
	"bufio"
	"fmt"
	"io"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/ain-hpc/ain/pkg/input"
)

// SysfsDumpCommand prints the sysfs dump this package parses (see the package doc). It needs
// only sh and grep (busybox is enough: no brace expansion), prints no /sys/class/infiniband line
// when there is no RDMA device (only the interfaces it sees), and never fails on unreadable files.
// $AIN_SYSFS_ROOT (unset in pods) moves /sys for the sandbox, which runs this exact command over a
// simulated tree; the output's paths then carry that prefix, which Parse skips.
const SysfsDumpCommand = `grep -H . ` +
	`${AIN_SYSFS_ROOT:-}/sys/class/infiniband/*/ports/*/state ` +
	`${AIN_SYSFS_ROOT:-}/sys/class/infiniband/*/ports/*/phys_state ` +
	`${AIN_SYSFS_ROOT:-}/sys/class/infiniband/*/ports/*/link_layer ` +
	`${AIN_SYSFS_ROOT:-}/sys/class/infiniband/*/ports/*/rate ` +
	`${AIN_SYSFS_ROOT:-}/sys/class/infiniband/*/ports/*/lid ` +
	`${AIN_SYSFS_ROOT:-}/sys/class/infiniband/*/ports/*/sm_lid ` +
	`${AIN_SYSFS_ROOT:-}/sys/class/infiniband/*/ports/*/gids/* ` +
	`${AIN_SYSFS_ROOT:-}/sys/class/infiniband/*/ports/*/gid_attrs/types/* ` +
	`${AIN_SYSFS_ROOT:-}/sys/class/infiniband/*/ports/*/gid_attrs/ndevs/* ` +
	`${AIN_SYSFS_ROOT:-}/sys/class/net/*/ifindex ` +
	`2>/dev/null | grep -v ':0000:0000:0000:0000:0000:0000:0000:0000$'`

// SysfsDumpCommandShown is SysfsDumpCommand as a person types it on a node or in a pod: without
// the sandbox's $AIN_SYSFS_ROOT prefix, which is noise outside the sandbox.
func SysfsDumpCommandShown() string {
	return strings.ReplaceAll(SysfsDumpCommand, "${AIN_SYSFS_ROOT:-}", "")
}

// Reasons a port is not ready.
const (
	ReasonNone         = ""
	ReasonNoSM         = "no-subnet-manager"
	ReasonCableOrPeer  = "cable-or-peer-down"
	ReasonDisabled     = "disabled"
	ReasonArmed        = "armed"
	ReasonUnknownState = "unknown-state"
)

// Formats Parse recognises.
const (
	FormatIbstat     = "ibstat"
	FormatDevinfo    = "ibv_devinfo"
	FormatIbstatus   = "ibstatus"
	FormatSysfs      = "sysfs"
	FormatUnknown    = "unknown"
	maxPorts         = 1024
	maxGIDsPerPort   = 256
	maxScanLineBytes = 1 << 20
)

// GID is one entry of a port's GID table.
type GID struct {
	Index  int    `json:"index"`
	GID    string `json:"gid"`
	Type   string `json:"type,omitempty"` // "IB/RoCE v1", "RoCE v2"
	Netdev string `json:"netdev,omitempty"`
}

// Port is the state of one device port. The JSON names are a stable interface.
type Port struct {
	Device    string  `json:"device"`
	Port      int     `json:"port"`
	State     string  `json:"state"`     // ACTIVE, INIT, ARMED, DOWN, or as printed
	PhysState string  `json:"physState"` // LinkUp, Polling, Disabled, ... ("" when the tool does not say)
	LinkLayer string  `json:"linkLayer"` // InfiniBand, Ethernet
	Rate      *string `json:"rate"`
	Ready     bool    `json:"ready"`
	Reason    string  `json:"reason"`
	// RoCEv2GIDIndex is the RoCE v2 IPv4-mapped GID's index (NCCL_IB_GID_INDEX), RoCE ports only.
	RoCEv2GIDIndex *int   `json:"roceV2GidIndex,omitempty"`
	RoCEv2Address  string `json:"roceV2Address,omitempty"`
	GIDs           []GID  `json:"gids,omitempty"`
	Line           int    `json:"line"`
}

// Report is the result of Parse.
type Report struct {
	Format string `json:"format"`
	Ports  []Port `json:"ports"`
	Ready  bool   `json:"ready"`
	// GIDIndex is the RoCE v2 GID index shared by every RoCE port, when they agree.
	GIDIndex *int `json:"gidIndex,omitempty"`
	// Netdevs are the network interfaces the dump saw (/sys/class/net), sorted; empty when the
	// input does not say. GID selection is limited to them when known.
	Netdevs []string `json:"netdevs,omitempty"`
	// ForeignGIDs lists RoCE ports whose RoCE v2 IPv4 GIDs all belong to netdevs outside Netdevs
	// ("mlx5_0:1 (eth2)"): the device is not attached to this pod's network.
	ForeignGIDs []string `json:"foreignGids,omitempty"`
}

// Merge adds the ports of o, the report of another input, to r: ready when both are, the formats
// joined with + when they differ, and a GID index only when both agree on it.
func (r *Report) Merge(o *Report) {
	r.Ports = append(r.Ports, o.Ports...)
	r.Ready = r.Ready && o.Ready
	if r.Format != o.Format {
		r.Format += "+" + o.Format
	}
	if r.GIDIndex != nil && (o.GIDIndex == nil || *o.GIDIndex != *r.GIDIndex) {
		r.GIDIndex = nil
	}
}

// Parse reads the output of ibstat, ibv_devinfo [-v], ibstatus or the sysfs dump; the format
// is recognised from the content, and several outputs may be concatenated.
func Parse(r io.Reader) (*Report, error) {
	p := &parser{idx: map[string]int{}}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), maxScanLineBytes)
	for sc.Scan() {
		p.lineNo++
		p.line(sc.Text())
	}
	if err := sc.Err(); err != nil {
		return nil, input.ScanError(err, p.lineNo+1, maxScanLineBytes)
	}
	return p.report(), nil
}

type parser struct {
	netdevs map[string]bool
	lineNo  int
	format  string
	ports   []*Port
	idx     map[string]int
	dev     string // current CA / hca_id
	cur     *Port  // current port block
	inGIDs  bool
}

func (p *parser) setFormat(f string) {
	if p.format == "" {
		p.format = f
	} else if p.format != f && !strings.Contains(p.format, f) {
		p.format += "+" + f
	}
}

func (p *parser) port(dev string, n int) *Port {
	key := dev + "\x00" + strconv.Itoa(n)
	if i, ok := p.idx[key]; ok {
		return p.ports[i]
	}
	if len(p.ports) >= maxPorts {
		return &Port{} // discarded
	}
	pt := &Port{Device: dev, Port: n, Line: p.lineNo}
	p.idx[key] = len(p.ports)
	p.ports = append(p.ports, pt)
	return pt
}

func (p *parser) line(raw string) {
	s := stripTag(strings.TrimSpace(raw))
	if s == "" {
		return
	}
	if i := strings.Index(s, "/sys/class/infiniband/"); i >= 0 {
		p.sysfsLine(s[i:])
		return
	}
	if i := strings.Index(s, "/sys/class/net/"); i >= 0 {
		// /sys/class/net/<if>/ifindex:<n>: an interface of the prober's network namespace.
		if ifn, rest, ok := strings.Cut(s[i+len("/sys/class/net/"):], "/"); ok && strings.HasPrefix(rest, "ifindex:") && ifn != "" && len(p.netdevs) < maxPorts {
			if p.netdevs == nil {
				p.netdevs = map[string]bool{}
			}
			p.netdevs[ifn] = true
		}
		return
	}
	if p.rdmaLinkLine(s) {
		return
	}
	// Block headers.
	switch {
	case strings.HasPrefix(s, "CA '"):
		p.setFormat(FormatIbstat)
		p.dev = strings.TrimSuffix(strings.TrimPrefix(s, "CA '"), "'")
		p.cur, p.inGIDs = nil, false
		return
	case strings.HasPrefix(s, "hca_id:"):
		p.setFormat(FormatDevinfo)
		p.dev = strings.TrimSpace(strings.TrimPrefix(s, "hca_id:"))
		p.cur, p.inGIDs = nil, false
		return
	case strings.HasPrefix(s, "Infiniband device '"):
		// ibstatus: Infiniband device 'mlx5_0' port 1 status:
		p.setFormat(FormatIbstatus)
		rest := strings.TrimPrefix(s, "Infiniband device '")
		q := strings.IndexByte(rest, '\'')
		if q < 0 {
			return
		}
		p.dev = rest[:q]
		f := strings.Fields(rest[q+1:])
		if len(f) >= 2 && f[0] == "port" {
			if n, err := strconv.Atoi(f[1]); err == nil {
				p.cur = p.port(p.dev, n)
			}
		}
		p.inGIDs = false
		return
	}
	key, val, ok := splitKV(s)
	if !ok {
		return
	}
	lk := strings.ToLower(key)
	// ibstat "Port 1:" and ibv_devinfo "port:   1".
	if p.dev != "" && (lk == "port" && val != "" || strings.HasPrefix(lk, "port ") && val == "") {
		num := val
		if num == "" {
			num = strings.TrimSpace(key[len("port "):])
		}
		if n, err := strconv.Atoi(num); err == nil {
			p.cur = p.port(p.dev, n)
			p.inGIDs = false
		}
		return
	}
	if p.cur == nil {
		return
	}
	pt := p.cur
	switch {
	case lk == "state":
		pt.State = normState(val)
	case lk == "physical state" || lk == "phys_state" || lk == "phys state":
		pt.PhysState = normPhys(val)
	case lk == "link layer" || lk == "link_layer":
		pt.LinkLayer = normLinkLayer(val)
	case lk == "rate":
		r := val
		if _, err := strconv.ParseFloat(val, 64); err == nil {
			r = val + " Gb/sec" // ibstat prints the bare number
		}
		pt.Rate = &r
	case strings.HasPrefix(lk, "gid["):
		p.devinfoGID(pt, key, val)
	}
}

// stripTag removes a collector's tag in front of the tool's output: "[pod/probe-x/c] ",
// "node-3: " (pdsh/clush), "0: " (srun --label).
func stripTag(s string) string {
	if strings.HasPrefix(s, "[") {
		if i := strings.Index(s, "] "); i > 0 && i < 160 {
			return strings.TrimSpace(s[i+2:])
		}
	}
	if i := strings.Index(s, ": "); i > 0 && i < 64 && !strings.ContainsAny(s[:i], " \t'[") {
		rest := strings.TrimSpace(s[i+2:])
		if strings.HasPrefix(rest, "CA '") || strings.HasPrefix(rest, "hca_id:") || strings.HasPrefix(rest, "Infiniband device '") || tagged(rest) {
			return rest
		}
	}
	return s
}

// tagged reports whether s, once a tag is removed, is a line of a port block (a "Key: value"
// whose key the parser reads), so "State: Active" is not mistaken for a tag "State".
func tagged(s string) bool {
	k, _, ok := splitKV(s)
	if !ok {
		return false
	}
	switch strings.ToLower(k) {
	case "state", "physical state", "phys_state", "phys state", "link layer", "link_layer", "rate", "port":
		return true
	}
	return strings.HasPrefix(strings.ToLower(k), "port ") || strings.HasPrefix(k, "GID[")
}

// splitKV splits "Key: value" / "key:\tvalue" / "key:" (value-less).
func splitKV(s string) (key, val string, ok bool) {
	i := strings.IndexByte(s, ':')
	if i <= 0 {
		return "", "", false
	}
	return strings.TrimSpace(s[:i]), strings.TrimSpace(s[i+1:]), true
}

// devinfoGID reads ibv_devinfo -v GID lines: "GID[  3]:  ::ffff:10.0.0.3, RoCE v2" (newer) or
// "GID[  3]:  0000:0000:0000:0000:0000:ffff:0a00:0003, RoCE v2" (older, no type on very old).
func (p *parser) devinfoGID(pt *Port, key, val string) {
	in := strings.TrimSpace(strings.TrimSuffix(key[strings.IndexByte(key, '[')+1:], "]"))
	n, err := strconv.Atoi(in)
	if err != nil {
		return
	}
	// The key/value split cut at the first ':' of the line, which is the one after "GID[ n]".
	gid, typ := val, ""
	if c := strings.LastIndexByte(val, ','); c >= 0 {
		gid, typ = strings.TrimSpace(val[:c]), strings.TrimSpace(val[c+1:])
	}
	p.addGID(pt, n, gid, typ, "")
}

func (p *parser) addGID(pt *Port, n int, gid, typ, ndev string) {
	for i := range pt.GIDs {
		if pt.GIDs[i].Index == n {
			g := &pt.GIDs[i]
			if gid != "" {
				g.GID = gid
			}
			if typ != "" {
				g.Type = typ
			}
			if ndev != "" {
				g.Netdev = ndev
			}
			return
		}
	}
	if len(pt.GIDs) >= maxGIDsPerPort {
		return
	}
	pt.GIDs = append(pt.GIDs, GID{Index: n, GID: gid, Type: typ, Netdev: ndev})
}

// sysfsLine reads "/sys/class/infiniband/<dev>/ports/<n>/<attr>[/<i>]:<value>".
func (p *parser) sysfsLine(s string) {
	c := strings.IndexByte(s, ':')
	if c < 0 {
		return
	}
	path, val := s[:c], strings.TrimSpace(s[c+1:])
	parts := strings.Split(strings.TrimPrefix(path, "/sys/class/infiniband/"), "/")
	if len(parts) < 4 || parts[1] != "ports" {
		return
	}
	n, err := strconv.Atoi(parts[2])
	if err != nil {
		return
	}
	p.setFormat(FormatSysfs)
	pt := p.port(parts[0], n)
	attr := parts[3:]
	switch {
	case len(attr) == 1 && attr[0] == "state":
		pt.State = normState(val)
	case len(attr) == 1 && attr[0] == "phys_state":
		pt.PhysState = normPhys(val)
	case len(attr) == 1 && attr[0] == "link_layer":
		pt.LinkLayer = normLinkLayer(val)
	case len(attr) == 1 && attr[0] == "rate":
		v := val
		pt.Rate = &v
	case len(attr) == 2 && attr[0] == "gids":
		if i, err := strconv.Atoi(attr[1]); err == nil {
			p.addGID(pt, i, val, "", "")
		}
	case len(attr) == 3 && attr[0] == "gid_attrs" && attr[1] == "types":
		if i, err := strconv.Atoi(attr[2]); err == nil {
			p.addGID(pt, i, "", val, "")
		}
	case len(attr) == 3 && attr[0] == "gid_attrs" && attr[1] == "ndevs":
		if i, err := strconv.Atoi(attr[2]); err == nil {
			p.addGID(pt, i, "", "", val)
		}
	}
}

// normState maps "4: ACTIVE", "Active", "PORT_ACTIVE (4)" to ACTIVE, and so on.
func normState(v string) string {
	u := strings.ToUpper(v)
	switch {
	case strings.Contains(u, "ACTIVE") && !strings.Contains(u, "DEFER"):
		return "ACTIVE"
	case strings.Contains(u, "INIT"):
		return "INIT"
	case strings.Contains(u, "ARMED"):
		return "ARMED"
	case strings.Contains(u, "DOWN"):
		return "DOWN"
	}
	return byCode(v, portStates)
}

// The IB spec's numeric port states and physical states, as sysfs prints them ("4: ACTIVE",
// "5: LinkUp"); 5 (ACTIVE_DEFER) counts as ACTIVE.
var (
	portStates = map[string]string{"1": "DOWN", "2": "INIT", "3": "ARMED", "4": "ACTIVE", "5": "ACTIVE"}
	physStates = map[string]string{"1": "Sleep", "2": "Polling", "3": "Disabled", "4": "PortConfigurationTraining", "5": "LinkUp", "6": "LinkErrorRecovery"}
)

// byCode names v by its leading number ("5: LinkUp" -> codes["5"]); v itself, trimmed, when it
// has no known number.
func byCode(v string, codes map[string]string) string {
	if name, ok := codes[strings.TrimSpace(strings.SplitN(v, ":", 2)[0])]; ok {
		return name
	}
	return strings.TrimSpace(v)
}

// normPhys maps "5: LinkUp", "LINK_UP (5)", "LinkUp" to LinkUp, and so on.
func normPhys(v string) string {
	u := strings.ToUpper(strings.ReplaceAll(strings.ReplaceAll(v, "_", ""), " ", ""))
	names := []struct{ key, name string }{
		{"LINKUP", "LinkUp"}, {"POLLING", "Polling"}, {"DISABLED", "Disabled"}, {"SLEEP", "Sleep"},
		{"PORTCONFIGURATIONTRAINING", "PortConfigurationTraining"}, {"LINKERRORRECOVERY", "LinkErrorRecovery"},
		{"PHYTEST", "PhyTest"},
	}
	for _, n := range names {
		if strings.Contains(u, n.key) {
			return n.name
		}
	}
	return byCode(v, physStates)
}

func normLinkLayer(v string) string {
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "infiniband", "ib":
		return "InfiniBand"
	case "ethernet", "eth":
		return "Ethernet"
	}
	return strings.TrimSpace(v)
}

// roceV2Index returns the lowest index of a RoCE v2 GID with an IPv4-mapped address, among
// the GIDs on the netdevs in mine when mine is not empty (and a GID's netdev is known). foreign
// lists the netdevs of the RoCE v2 IPv4 GIDs skipped for being outside mine.
func roceV2Index(gids []GID, mine map[string]bool) (idx int, addr string, ok bool, foreign []string) {
	best := -1
	for _, g := range gids {
		if !g.IsRoCEv2() {
			continue
		}
		// Both "::ffff:10.0.0.3" and the sysfs form "0000:...:ffff:0a00:0003" parse.
		a, ok := g.IPv4()
		if !ok {
			continue
		}
		if len(mine) > 0 && g.Netdev != "" && !mine[g.Netdev] {
			foreign = append(foreign, g.Netdev)
			continue
		}
		if best < 0 || g.Index < best {
			best, addr = g.Index, a.String()
		}
	}
	return best, addr, best >= 0, foreign
}

func (p *parser) report() *Report {
	r := &Report{Format: p.format, Ports: []Port{}, Ready: true}
	if r.Format == "" {
		r.Format = FormatUnknown
	}
	for n := range p.netdevs {
		r.Netdevs = append(r.Netdevs, n)
	}
	sort.Strings(r.Netdevs)
	agree := true
	for _, pt := range p.ports {
		evaluate(pt)
		sort.Slice(pt.GIDs, func(i, j int) bool { return pt.GIDs[i].Index < pt.GIDs[j].Index })
		if pt.LinkLayer == "Ethernet" {
			i, a, ok, foreign := roceV2Index(pt.GIDs, p.netdevs)
			if !ok && len(foreign) > 0 {
				slices.Sort(foreign)
				r.ForeignGIDs = append(r.ForeignGIDs, fmt.Sprintf("%s:%d (%s)", pt.Device, pt.Port, strings.Join(slices.Compact(foreign), ",")))
			}
			if ok {
				idx := i
				pt.RoCEv2GIDIndex = &idx
				pt.RoCEv2Address = a
				switch {
				case r.GIDIndex == nil && agree:
					r.GIDIndex = &idx
				case r.GIDIndex != nil && *r.GIDIndex != idx:
					r.GIDIndex, agree = nil, false
				}
			}
		}
		if !pt.Ready {
			r.Ready = false
		}
		r.Ports = append(r.Ports, *pt)
	}
	if len(r.Ports) == 0 {
		r.Ready = false
	}
	return r
}

// evaluate sets Ready and Reason from the states.
func evaluate(pt *Port) {
	switch pt.State {
	case "ACTIVE":
		pt.Ready = pt.PhysState == "" || pt.PhysState == "LinkUp"
		if !pt.Ready {
			pt.Reason = ReasonCableOrPeer
		}
	case "INIT":
		switch pt.PhysState {
		case "LinkUp", "":
			pt.Reason = ReasonNoSM
		case "Disabled":
			pt.Reason = ReasonDisabled
		default:
			pt.Reason = ReasonCableOrPeer
		}
	case "ARMED":
		pt.Reason = ReasonArmed
	case "DOWN":
		if pt.PhysState == "Disabled" {
			pt.Reason = ReasonDisabled
		} else {
			pt.Reason = ReasonCableOrPeer
		}
	default:
		pt.Reason = ReasonUnknownState
	}
}

// Fix says what to do about a reason, for people.
func Fix(reason, linkLayer string) string {
	switch reason {
	case ReasonNoSM:
		if linkLayer == "Ethernet" {
			return "a RoCE port should not stay in INIT: check the netdev is up (`ip link`) and the NIC firmware/driver"
		}
		return "the cable is up but no subnet manager has configured the port: start opensm (or UFM), or enable the switch's SM, then check `sminfo`"
	case ReasonCableOrPeer:
		return "no physical link: check the cable/transceiver, the switch port and the peer (`ibportstate`, switch logs); Polling means the port is looking for a peer"
	case ReasonDisabled:
		return "the port is administratively disabled: enable it (`ibportstate <lid> <port> enable` or on the switch) or with `mlxlink`"
	case ReasonArmed:
		return "the subnet manager armed the port but has not activated it: wait for the sweep to complete or restart the SM"
	case ReasonUnknownState:
		return "the port's state was not printed: rerun the tool with its full output"
	}
	return ""
}

// Summary is a one-line verdict for people.
func (r *Report) Summary() string {
	if len(r.Ports) == 0 {
		return "no RDMA port found in the input"
	}
	ready := 0
	for _, p := range r.Ports {
		if p.Ready {
			ready++
		}
	}
	if r.Ready {
		return fmt.Sprintf("all %d port(s) ACTIVE and ready", len(r.Ports))
	}
	return fmt.Sprintf("%d of %d port(s) not ready", len(r.Ports)-ready, len(r.Ports))
}

// Unsteered lists the RoCE ports on which NCCL, left to choose (NCCL_IB_GID_INDEX unset) and
// not told the pod's subnet (NCCL_IB_ADDR_RANGE unset), would take another netdev's GID than
// the pod's own RoCE v2 GID: NCCL (2.21 transport/net_ib.cc ncclUpdateGidIndex) walks the GID
// table in order and keeps the first valid IPv4 RoCE v2 GID in the range, 0.0.0.0/0 by default,
// so a host netdev's GID at a lower index wins over the pod's macvlan GID. Each entry reads
// "mlx5_0:1 (index 3 of ens1f0np0 before the pod's index 5)".
func (r *Report) Unsteered() []string {
	var out []string
	for _, pt := range r.Ports {
		if pt.LinkLayer != "Ethernet" || pt.RoCEv2GIDIndex == nil {
			continue
		}
		for _, g := range pt.GIDs {
			if g.Index >= *pt.RoCEv2GIDIndex {
				break // sorted by index (report)
			}
			if _, ok := g.IPv4(); ok && g.IsRoCEv2() {
				out = append(out, fmt.Sprintf("%s:%d (index %d of %s before the pod's index %d)", pt.Device, pt.Port, g.Index, orUnknown(g.Netdev), *pt.RoCEv2GIDIndex))
				break
			}
		}
	}
	return out
}

func orUnknown(s string) string {
	if s == "" {
		return "an unknown netdev"
	}
	return s
}
