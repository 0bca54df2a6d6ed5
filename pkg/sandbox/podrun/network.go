package podrun

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"os/exec"
	"strings"
)

// Network is one Linux bridge that the pods of a small cluster attach to, with an address of
// its own in the host's network namespace: the "node" side, from which probes connect (a
// kubelet probes from the node's namespace) and which stands as the pods' gateway.
type Network struct {
	Bridge  string     // the bridge's interface name
	Gateway net.IP     // the host's address on the bridge
	Subnet  *net.IPNet // the pods' subnet
}

// ipCmd runs ip(8) with args and returns its error with what ip printed.
func ipCmd(args ...string) error {
	out, err := exec.Command("ip", args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("ip %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}

// randomID is 8 hex digits, for interface and namespace names (an interface name has at most
// 15 characters: IFNAMSIZ 16 with the NUL).
func randomID() string {
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// NewNetwork makes a bridge for the pods of cidr (for example "10.231.7.0/24") and gives the
// host the subnet's first address on it. Close removes it.
func NewNetwork(cidr string) (*Network, error) { return NewNetworkGateway(cidr, nil) }

// NewNetworkGateway is NewNetwork with the host's address on the bridge given (nil: the
// subnet's first address): the sandbox's agent puts it where its IP allocator (kwok's) does not
// hand out pod IPs.
func NewNetworkGateway(cidr string, gw net.IP) (*Network, error) {
	_, subnet, err := net.ParseCIDR(cidr)
	if err != nil {
		return nil, err
	}
	if subnet.IP.To4() == nil {
		return nil, fmt.Errorf("%s: only IPv4 pod subnets for now", cidr)
	}
	if gw == nil {
		gw = make(net.IP, 4)
		copy(gw, subnet.IP.To4())
		gw[3]++
	} else if gw = gw.To4(); gw == nil || !subnet.Contains(gw) {
		return nil, fmt.Errorf("gateway outside %s", cidr)
	}
	n := &Network{Bridge: "ainbr" + randomID(), Gateway: gw, Subnet: subnet}
	ones, _ := subnet.Mask.Size()
	steps := [][]string{
		{"link", "add", n.Bridge, "type", "bridge"},
		{"addr", "add", fmt.Sprintf("%s/%d", gw, ones), "dev", n.Bridge},
		{"link", "set", n.Bridge, "up"},
	}
	for i, s := range steps {
		if err := ipCmd(s...); err != nil {
			if i > 0 {
				_ = n.Close()
			}
			return nil, err
		}
	}
	return n, nil
}

// Close deletes the bridge (the pods' veths must be gone first: Pod.Stop deletes them).
func (n *Network) Close() error { return ipCmd("link", "del", n.Bridge) }

// podNet is one pod's network namespace and veth.
type podNet struct {
	ns   string // ip-netns name; /run/netns/<ns>
	veth string // host end, on the bridge
}

// setupPodNet makes a network namespace with lo up and eth0 at ip, the peer of a veth whose
// other end is on the bridge, and a default route through the host's bridge address (what a
// bridge CNI plugin does for a pod).
func setupPodNet(n *Network, ip net.IP) (*podNet, error) {
	if !n.Subnet.Contains(ip) {
		return nil, fmt.Errorf("pod IP %s is outside the network's %s", ip, n.Subnet)
	}
	id := randomID()
	p := &podNet{ns: "ainpod-" + id, veth: "ainv" + id}
	ones, _ := n.Subnet.Mask.Size()
	if err := ipCmd("netns", "add", p.ns); err != nil {
		return nil, err
	}
	steps := [][]string{
		{"link", "add", p.veth, "type", "veth", "peer", "name", "eth0", "netns", p.ns},
		{"link", "set", p.veth, "master", n.Bridge},
		{"link", "set", p.veth, "up"},
		{"-n", p.ns, "link", "set", "lo", "up"},
		{"-n", p.ns, "addr", "add", fmt.Sprintf("%s/%d", ip, ones), "dev", "eth0"},
		{"-n", p.ns, "link", "set", "eth0", "up"},
		{"-n", p.ns, "route", "add", "default", "via", n.Gateway.String()},
	}
	for _, s := range steps {
		if err := ipCmd(s...); err != nil {
			_ = p.teardown()
			return nil, err
		}
	}
	return p, nil
}

// teardown deletes the namespace, which destroys eth0 and with it its veth peer on the bridge.
// The namespace itself lives on while a process is still in it: Stop kills them first.
func (p *podNet) teardown() error {
	err := ipCmd("netns", "del", p.ns)
	// The veth went with the namespace; delete it here only if it survived (a failed setup).
	if exec.Command("ip", "link", "show", p.veth).Run() == nil {
		_ = ipCmd("link", "del", p.veth)
	}
	return err
}
