package ibport

import (
	"math"
	"net/netip"
	"strconv"
	"strings"
)

// GIDTypeRoCEv2 is how the kernel names a RoCE v2 GID in gid_attrs/types/<i> (the other value
// is "IB/RoCE v1": Documentation/ABI/testing/sysfs-class-infiniband) and how ibv_devinfo -v
// prints it after the GID.
const GIDTypeRoCEv2 = "RoCE v2"

// IsRoCEv2 reports whether the GID's type is RoCE v2 (UDP/IP encapsulated, routable).
func (g GID) IsRoCEv2() bool { return strings.EqualFold(strings.TrimSpace(g.Type), GIDTypeRoCEv2) }

// IPv4 returns the IPv4 address of an IPv4-mapped GID (::ffff:a.b.c.d, which sysfs prints as
// 0000:...:ffff:0a0a:010b). The kernel adds such a pair of GIDs (RoCE v1 and v2) for each IPv4
// address of a netdev on a RoCE port (NVIDIA DOCA "RDMA over Converged Ethernet": "IPv4 GID – An
// IPv4-mapped IPv6 address"); link-local fe80:: and global IPv6 GIDs are not IPv4.
func (g GID) IPv4() (netip.Addr, bool) {
	a, err := netip.ParseAddr(strings.TrimSpace(g.GID))
	if err != nil || !a.Is4In6() || a.Unmap().IsUnspecified() {
		return netip.Addr{}, false
	}
	return a.Unmap(), true
}

// RoCEv2GIDOf returns the port's RoCE v2 GID whose address is one of addrs (the IPv4 addresses
// of the pod's own RDMA interfaces), the lowest index when several match. That entry, and no
// other, is what NCCL_IB_GID_INDEX must name: a port shared by pods (the RDMA shared device
// plugin with macvlan) lists every pod's and the host's addresses, often on netdevs with the
// same name (net1), and the index of "the first RoCE v2 IPv4 GID" or "3" may belong to another
// network namespace (QP setup then fails: "ibv_modify_qp failed with 19 No such device").
func (p Port) RoCEv2GIDOf(addrs []netip.Addr) (GID, bool) {
	for _, g := range p.GIDs { // sorted by index (Parse)
		if !g.IsRoCEv2() {
			continue
		}
		a, ok := g.IPv4()
		if !ok {
			continue
		}
		for _, want := range addrs {
			if want.Unmap() == a {
				return g, true
			}
		}
	}
	return GID{}, false
}

// RoCEv2IPv4 lists the port's RoCE v2 GIDs with an IPv4 address, by index.
func (p Port) RoCEv2IPv4() []GID {
	var out []GID
	for _, g := range p.GIDs {
		if _, ok := g.IPv4(); ok && g.IsRoCEv2() {
			out = append(out, g)
		}
	}
	return out
}

// RateGbps reads a port rate as sysfs or ibstatus print it ("400 Gb/sec (4X NDR)", "25 Gb/sec
// (1X EDR)") or ibstat ("200"), in Gb/s.
func RateGbps(s string) (float64, bool) {
	f := strings.Fields(strings.TrimSpace(s))
	if len(f) == 0 {
		return 0, false
	}
	v, err := strconv.ParseFloat(f[0], 64)
	if err != nil || !(v > 0) || math.IsInf(v, 0) {
		return 0, false
	}
	if len(f) > 1 && !strings.HasPrefix(strings.ToLower(f[1]), "gb") {
		return 0, false
	}
	return v, true
}
