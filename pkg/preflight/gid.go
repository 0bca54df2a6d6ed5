package preflight

import (
	"fmt"
	"net/netip"
	"strings"

	"github.com/ain-hpc/ain/pkg/ibport"
	"github.com/ain-hpc/ain/pkg/probe"
)

// gidChoice is the RoCE v2 GID index the ib-ports check judges a node by, and how it was found.
type gidChoice struct {
	// Index is the index every matched RoCE port agrees on; nil when none matched or they differ.
	Index *int
	// ByAddr: chosen by the probe pod's own addresses (Multus network-status), not by netdev name.
	ByAddr bool
	// Rule is the evidence line that says which rule chose and what it found per port.
	Rule string
	// Unmatched: no RoCE port has a RoCE v2 IPv4 GID of the pod (by address, or by name: only
	// GIDs on netdevs outside the pod). Missing names those ports.
	Unmatched bool
	Missing   []string
}

// podIPv4 lists the IPv4 addresses Multus gave the pod's secondary networks.
func podIPv4(nets []probe.PodNetwork) []netip.Addr {
	var out []netip.Addr
	for _, n := range nets {
		if !n.Default {
			out = append(out, n.IPv4()...)
		}
	}
	return out
}

// chooseGID picks the RoCE v2 GID index of the probe pod on rep's Ethernet ports. With the RDMA
// shared device plugin and macvlan one port's GID table holds the host's and every pod's
// addresses, often on netdevs with the same name (net1), so the pod's own entry is the one with
// its address (Port.RoCEv2GIDOf), as `ain profile detect` chooses. Without Multus addresses the
// name rule of ibport.Parse is all there is (the lowest RoCE v2 IPv4 GID on a netdev the pod
// has), and the evidence says so.
func chooseGID(rep *ibport.Report, nets []probe.PodNetwork) gidChoice {
	addrs := podIPv4(nets)
	if len(addrs) == 0 {
		c := gidChoice{Index: rep.GIDIndex, Unmatched: rep.GIDIndex == nil && len(rep.ForeignGIDs) > 0, Missing: rep.ForeignGIDs}
		var per []string
		for _, pt := range rep.Ports {
			if pt.RoCEv2GIDIndex != nil {
				per = append(per, fmt.Sprintf("%s:%d index %d (%s)", pt.Device, pt.Port, *pt.RoCEv2GIDIndex, pt.RoCEv2Address))
			}
		}
		c.Rule = "GID chosen by netdev name (the probe pod has no Multus network-status address; on a shared port another pod's interface of the same name can match)"
		if len(per) > 0 {
			c.Rule += ": " + strings.Join(per, "; ")
		}
		return c
	}
	c := gidChoice{ByAddr: true}
	var per []string
	agree := true
	for _, pt := range rep.Ports {
		if pt.LinkLayer != "Ethernet" {
			continue
		}
		g, ok := pt.RoCEv2GIDOf(addrs)
		if !ok {
			if len(pt.RoCEv2IPv4()) > 0 {
				c.Missing = append(c.Missing, fmt.Sprintf("%s:%d", pt.Device, pt.Port))
			}
			continue
		}
		a, _ := g.IPv4()
		desc := fmt.Sprintf("%s:%d index %d (%s", pt.Device, pt.Port, g.Index, a)
		if g.Netdev != "" {
			desc += " on " + g.Netdev
		}
		per = append(per, desc+")")
		idx := g.Index
		switch {
		case c.Index == nil && agree:
			c.Index = &idx
		case c.Index != nil && *c.Index != idx:
			c.Index, agree = nil, false
		}
	}
	c.Unmatched = len(per) == 0 && len(c.Missing) > 0
	shown := make([]string, len(addrs))
	for i, a := range addrs {
		shown[i] = a.String()
	}
	c.Rule = "GID chosen by the probe pod's address (" + strings.Join(shown, ", ") + ", Multus network-status)"
	if len(per) > 0 {
		c.Rule += ": " + strings.Join(per, "; ")
	}
	if len(c.Missing) > 0 {
		c.Rule += "; no GID with the pod's address on " + strings.Join(c.Missing, ", ")
	}
	return c
}
