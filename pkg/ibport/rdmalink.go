package ibport

import (
	"encoding/json"
	"strconv"
	"strings"
)

// FormatRdmaLink is iproute2's `rdma link [show]` output, text or JSON (`rdma -j link`).
//
// The text form is one line per port (iproute2 rdma/link.c):
//
//	link mlx5_0/1 subnet_prefix fe80:0000:0000:0000 lid 3 sm_lid 1 lmc 0 state ACTIVE physical_state LINK_UP netdev ib0
//	link mlx5_4/1 state ACTIVE physical_state LINK_UP netdev enp97s0f0
//
// The IB-only attributes (subnet_prefix, lid, sm_lid, lmc) are printed only for InfiniBand ports,
// which is how the link layer is told apart: rdma link does not print it. The JSON form holds the
// same keys: [{"ifindex":0,"ifname":"mlx5_0","port":1,"state":"ACTIVE","physical_state":"LINK_UP",...}].
// Both feed the same verdict as ibstat: LINK_UP + INIT is a port no subnet manager configured.
const FormatRdmaLink = "rdma-link"

// rdmaLinkLine reads one line of `rdma link` output; it reports whether the line was one.
func (p *parser) rdmaLinkLine(s string) bool {
	if t, ok := oldRdmaLinkText(s); ok {
		s = t
	}
	switch {
	case strings.HasPrefix(s, "link ") && strings.Contains(s, " state "):
		p.rdmaLinkText(s)
		return true
	case strings.HasPrefix(s, "[{") && strings.Contains(s, `"ifname"`) && strings.Contains(s, `"state"`):
		p.rdmaLinkJSON(s)
		return true
	}
	return false
}

// oldRdmaLinkText rewrites a line of iproute2 before rdma/link.c moved to json_print (the 4.x
// releases, e.g. 4.15 in Ubuntu 18.04), "1/1: mlx5_0/1: state ACTIVE ...", as today's
// "link mlx5_0/1 state ACTIVE ..." (checked against both versions of link_parse_cb).
func oldRdmaLinkText(s string) (string, bool) {
	idx, rest, ok := strings.Cut(s, ": ")
	if !ok || !strings.Contains(rest, " state ") {
		return "", false
	}
	if a, b, ok := strings.Cut(idx, "/"); !ok || !isDigits(a) || !isDigits(b) {
		return "", false
	}
	name, rest, ok := strings.Cut(rest, ": ")
	if !ok {
		return "", false
	}
	return "link " + name + " " + rest, true
}

func isDigits(s string) bool {
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return s != ""
}

func (p *parser) rdmaLinkText(s string) {
	f := strings.Fields(s)
	if len(f) < 2 {
		return
	}
	dev, port, ok := splitDevPort(f[1])
	if !ok {
		return
	}
	p.setFormat(FormatRdmaLink)
	pt := p.port(dev, port)
	p.cur, p.dev, p.inGIDs = nil, "", false // a later ibstat block must not write into this port
	ib := false
	netdev := ""
	for i := 2; i+1 < len(f); i += 2 {
		k, v := f[i], f[i+1]
		switch k {
		case "state":
			pt.State = normState(v)
		case "physical_state":
			pt.PhysState = normPhys(v)
		case "subnet_prefix", "lid", "sm_lid", "lmc":
			ib = true
		case "netdev":
			netdev = v
		default:
			// "caps: <...>" (rdma -d) and attributes newer iproute2 adds: skip one token, and
			// resynchronise on the next known key if the value was several tokens.
			if !rdmaLinkKey(k) && rdmaLinkKey(v) {
				i--
			}
		}
	}
	pt.LinkLayer = rdmaLinkLayer(pt.LinkLayer, ib, netdev)
}

func rdmaLinkKey(s string) bool {
	switch s {
	case "state", "physical_state", "subnet_prefix", "lid", "sm_lid", "lmc", "netdev", "netdev_index":
		return true
	}
	return false
}

// rdmaLinkLayer infers the link layer: IB-only attributes mean InfiniBand; without them a port
// with a netdev is Ethernet (RoCE, or Soft-RoCE rxe); an IPoIB netdev (ib*) is InfiniBand.
func rdmaLinkLayer(known string, ib bool, netdev string) string {
	switch {
	case known != "":
		return known
	case ib || strings.HasPrefix(netdev, "ib"):
		return "InfiniBand"
	case netdev != "":
		return "Ethernet"
	}
	return ""
}

// splitDevPort splits "mlx5_0/1".
func splitDevPort(s string) (string, int, bool) {
	i := strings.LastIndexByte(s, '/')
	if i <= 0 {
		return "", 0, false
	}
	n, err := strconv.Atoi(s[i+1:])
	if err != nil || n < 0 {
		return "", 0, false
	}
	return s[:i], n, true
}

// rdmaLinkJSON reads `rdma -j link show`, one JSON array on one line.
func (p *parser) rdmaLinkJSON(s string) {
	var links []struct {
		Ifname        string `json:"ifname"`
		Port          *int   `json:"port"`
		State         string `json:"state"`
		PhysicalState string `json:"physical_state"`
		Netdev        string `json:"netdev"`
		Lid           *int   `json:"lid"`
		SubnetPrefix  string `json:"subnet_prefix"`
	}
	if err := json.Unmarshal([]byte(s), &links); err != nil {
		return
	}
	for _, l := range links {
		if l.Ifname == "" || l.Port == nil || *l.Port < 0 {
			continue
		}
		p.setFormat(FormatRdmaLink)
		// Old iproute2 (4.x) wrote "ifname":"mlx5_0/1" beside "port":1; today's writes "mlx5_0".
		name := strings.TrimSuffix(l.Ifname, "/"+strconv.Itoa(*l.Port))
		pt := p.port(name, *l.Port)
		pt.State = normState(l.State)
		pt.PhysState = normPhys(l.PhysicalState)
		pt.LinkLayer = rdmaLinkLayer(pt.LinkLayer, l.Lid != nil || l.SubnetPrefix != "", l.Netdev)
	}
	p.cur, p.dev, p.inGIDs = nil, "", false
}
