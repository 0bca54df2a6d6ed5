package profile

import (
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"sort"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/ain-hpc/ain/pkg/ibport"
	"github.com/ain-hpc/ain/pkg/lazyre"
)

// What the API cannot tell, the probe pods can: one pod per pool of alike GPU nodes, holding the
// RDMA resource and joining the RDMA networks (so it sees the devices, ports and GID table a rank
// sees), dumps /sys/class/infiniband (ibport.SysfsDumpCommand). From that dump:
//
//   - spec.hcas (NCCL_IB_HCA): the ACTIVE ports of the pool's link layer, and for RoCE only
//     those with a GID on the pod's network;
//   - spec.fabric: the ports' link_layer (InfiniBand: ib, Ethernet: roce);
//   - spec.lineRate: the ports' rate ("400 Gb/sec (4X NDR)" -> 400Gb);
//   - spec.gidIndex (RoCE): the index whose type is RoCE v2 and whose GID is the IPv4-mapped
//     address of the pod's RDMA interface (from Multus' network-status). The kernel adds a RoCE
//     v1 and a v2 GID per IP address of every netdev on the port (kernel
//     Documentation/ABI/testing/sysfs-class-infiniband; NVIDIA DOCA "RDMA over Converged
//     Ethernet"), so index 3 is only "the IPv4 one" on a port with one netdev with one IPv4
//     address and nothing else; NVIDIA's own forum answer ("Configure CX-7 400GE not to change
//     GID index") says the index cannot be relied on. A table that also holds other addresses
//     (the host's netdev, other pods' macvlan interfaces on a shared port) gives each pod its own
//     index: a fixed NCCL_IB_GID_INDEX then fits one pod only, and auto (NCCL >= 2.21, with
//     spec.addrRange as NCCL_IB_ADDR_RANGE) is the right setting.

// Pool is a set of GPU nodes alike (instance type, GPU product and count, RDMA resources, the
// link-layer label): one probe pod per pool tells what its nodes' ports look like.
type Pool struct {
	Name  string   `json:"name"`
	Nodes []string `json:"nodes"`
	// Probe is the node probed: the first Ready, schedulable one by name.
	Probe string `json:"probe"`
}

// ProbePools groups the GPU nodes that offer the profile's RDMA resource into pools (every: one
// pool per node, to find the node that differs). Nothing to probe (no RDMA resource): nil.
func (d *Detected) ProbePools(nodes []corev1.Node, every bool) []Pool {
	res := d.Profile.Spec.RDMA.Resource
	if !d.Profile.RDMA() || d.Origins["spec.rdma.resource"] == "default" {
		return nil
	}
	type member struct {
		name  string
		ready bool
	}
	groups := map[string][]member{}
	names := map[string]string{}
	for _, n := range nodes {
		if q, ok := n.Status.Allocatable[corev1.ResourceName(res)]; !ok || q.Value() < 1 {
			continue
		}
		gpus := int64(0)
		for _, g := range gpuResources {
			if q, ok := n.Status.Allocatable[corev1.ResourceName(g)]; ok {
				gpus += q.Value()
			}
		}
		if gpus == 0 {
			continue
		}
		var rdma []string
		for r := range n.Status.Allocatable {
			if isRDMAResource(string(r)) {
				rdma = append(rdma, string(r))
			}
		}
		sort.Strings(rdma)
		it := n.Labels["node.kubernetes.io/instance-type"]
		key := strings.Join([]string{it, n.Labels[labelGPUProduct], strconv.FormatInt(gpus, 10), strings.Join(rdma, ","), n.Labels[labelLinkLayer], n.Labels[labelCWFlavor]}, "\x00")
		name := fmt.Sprintf("%d GPU(s)", gpus)
		if p := n.Labels[labelGPUProduct]; p != "" {
			name = fmt.Sprintf("%dx %s", gpus, p)
		}
		if it != "" {
			name = it + ", " + name
		}
		if every {
			key, name = n.Name, n.Name
		}
		names[key] = name
		groups[key] = append(groups[key], member{n.Name, nodeReady(n) && !n.Spec.Unschedulable})
	}
	var pools []Pool
	for key, ms := range groups {
		sort.Slice(ms, func(i, j int) bool { return ms[i].name < ms[j].name })
		p := Pool{Name: names[key], Probe: ms[0].name}
		for _, m := range ms {
			p.Nodes = append(p.Nodes, m.name)
		}
		for _, m := range ms {
			if m.ready {
				p.Probe = m.name
				break
			}
		}
		pools = append(pools, p)
	}
	sort.Slice(pools, func(i, j int) bool { return pools[i].Nodes[0] < pools[j].Nodes[0] })
	return pools
}

func nodeReady(n corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// hcaName: the kernel's RDMA device names (mlx5_0, irdma0, bnxt_re0, rxe0, hfi1_0, qedr0); other
// text in a dump is not a device NCCL_IB_HCA could name.
var hcaName = lazyre.New(`^[A-Za-z][A-Za-z0-9_.-]{0,63}$`)

// ProbeResult is one probe pod's view of its node (pkg/preflight.ProbeFabric runs it).
type ProbeResult struct {
	Pool      Pool
	Node, Pod string
	// Report is the parsed sysfs dump (nil when the probe gave none: Err says why).
	Report *ibport.Report
	// Interfaces are the pod's secondary network interfaces as Multus reported them
	// (network-status); nil when it reported none.
	Interfaces []PodInterface
	Err        string
}

// PodInterface is one of the probe pod's network interfaces on an RDMA network.
type PodInterface struct {
	Network string       `json:"network"`
	Name    string       `json:"name"`
	Addrs   []netip.Addr `json:"addrs"`
}

// DetectedProbe is what detection made of one probe pod.
type DetectedProbe struct {
	Pool       string         `json:"pool"`
	Nodes      []string       `json:"nodes"`
	Node       string         `json:"node"`
	Pod        string         `json:"pod,omitempty"`
	Fabric     string         `json:"fabric,omitempty"`
	HCAs       []string       `json:"hcas"`
	Ports      []ProbedPort   `json:"ports"`
	Interfaces []PodInterface `json:"interfaces,omitempty"`
	Err        string         `json:"error,omitempty"`
}

// ProbedPort is one port the probe saw and whether the profile uses it.
type ProbedPort struct {
	Port      string  `json:"port"` // mlx5_0:1
	State     string  `json:"state"`
	LinkLayer string  `json:"linkLayer"`
	Rate      string  `json:"rate,omitempty"`
	Gbps      float64 `json:"gbps,omitempty"`
	Use       bool    `json:"use"`
	Why       string  `json:"why,omitempty"` // why not used
	// RoCE: the GID of the pod's interface, and how many other RoCE v2 IPv4 GIDs the port's table
	// holds (the host's netdev, other pods' interfaces: the index then differs per pod).
	GIDIndex  *int   `json:"gidIndex,omitempty"`
	GID       string `json:"gid,omitempty"`
	Netdev    string `json:"netdev,omitempty"`
	OtherGIDs int    `json:"otherGids,omitempty"`
	GIDByAddr bool   `json:"gidByAddress,omitempty"` // matched by the pod's address (else by netdev name)
	sysfsBase string
	// fabricPort: ACTIVE and of the node's link layer (its rate is the fabric's, used or not).
	fabricPort bool
}

// NotProbed records why no probe pod ran (--no-probes, no right to create pods): the fields
// only a probe can fill say so.
func (d *Detected) NotProbed(why string) {
	for _, f := range []string{"spec.hcas", "spec.lineRate", "spec.gidIndex"} {
		if u, ok := d.Undetected[f]; ok {
			d.Undetected[f] = "not probed (" + why + "); " + u
		}
	}
	if u, ok := d.Undetected["spec.fabric"]; ok {
		d.Undetected["spec.fabric"] = "not probed (" + why + "); " + u
	}
}

// ApplyProbes fills the fields the probes can tell (fabric, HCAs, line rate, RoCE GID index),
// each with the sysfs file it came from, and records where they disagree with each other or with
// the labels and networks Detect read.
func (d *Detected) ApplyProbes(results []ProbeResult) {
	var good []*DetectedProbe
	for _, r := range results {
		dp := derivePool(r)
		d.Probes = append(d.Probes, dp)
		if dp.Err != "" {
			d.Notes = append(d.Notes, fmt.Sprintf("probe pod on node %s (pool %s): %s", r.Node, r.Pool.Name, dp.Err))
			continue
		}
		for _, pp := range dp.Ports {
			if !pp.Use {
				d.Notes = append(d.Notes, fmt.Sprintf("node %s: %s left out of spec.hcas: %s", dp.Node, pp.Port, pp.Why))
			}
		}
		if dp.Fabric == "" {
			d.Notes = append(d.Notes, fmt.Sprintf("probe pod on node %s (pool %s): no ACTIVE RDMA port", dp.Node, dp.Pool))
			continue
		}
		good = append(good, &d.Probes[len(d.Probes)-1])
	}
	if len(good) == 0 {
		why := "no probe pod saw an ACTIVE RDMA port"
		if len(d.Notes) > 0 {
			why += " (" + d.Notes[0] + ")"
		}
		d.NotProbed(why)
		return
	}
	d.applyFabric(good)
	d.applyHCAs(good)
	d.applyRate(good)
	if d.Profile.Spec.Fabric == FabricRoCE {
		d.applyGID(good)
	} else {
		delete(d.Undetected, "spec.gidIndex")
	}
}

func (d *Detected) set(path, origin string) {
	d.Origins[path] = origin
	d.Profile.Origins[path] = origin
	delete(d.Undetected, path)
}

// derivePool judges each port of one probe's dump.
func derivePool(r ProbeResult) DetectedProbe {
	dp := DetectedProbe{Pool: r.Pool.Name, Nodes: r.Pool.Nodes, Node: r.Node, Pod: r.Pod, Interfaces: r.Interfaces, HCAs: []string{}, Ports: []ProbedPort{}, Err: r.Err}
	if r.Report == nil {
		if dp.Err == "" {
			dp.Err = "the probe printed nothing"
		}
		return dp
	}
	var mine []netip.Addr
	for _, in := range r.Interfaces {
		mine = append(mine, in.Addrs...)
	}
	// A node's RDMA ports share one link layer: the one most ACTIVE ports have. The odd ones
	// out (an Ethernet storage NIC on an InfiniBand node, say) are not the fabric's.
	count := map[string]int{}
	for _, pt := range r.Report.Ports {
		if pt.Ready {
			count[pt.LinkLayer]++
		}
	}
	ll := "InfiniBand"
	if count["Ethernet"] > count["InfiniBand"] {
		ll = "Ethernet"
	}
	if count[ll] > 0 {
		dp.Fabric = map[string]string{"InfiniBand": FabricIB, "Ethernet": FabricRoCE}[ll]
	}
	for _, pt := range r.Report.Ports {
		pp := ProbedPort{Port: fmt.Sprintf("%s:%d", pt.Device, pt.Port), State: pt.State, LinkLayer: pt.LinkLayer,
			sysfsBase: fmt.Sprintf("/sys/class/infiniband/%s/ports/%d/", pt.Device, pt.Port)}
		if pt.Rate != nil {
			pp.Rate = *pt.Rate
			pp.Gbps, _ = ibport.RateGbps(pp.Rate)
		}
		switch {
		case !hcaName().MatchString(pt.Device):
			pp.Why = fmt.Sprintf("%q is not a device name NCCL_IB_HCA can take", pt.Device)
		case !pt.Ready:
			pp.Why = fmt.Sprintf("state %s, physical state %s (%s)", pt.State, orNone(pt.PhysState), pt.Reason)
		case pt.LinkLayer != ll:
			pp.Why = fmt.Sprintf("link layer %s on a node whose RDMA ports are %s (%d of them): not the fabric's", orNone(pt.LinkLayer), ll, count[ll])
		case ll == "Ethernet":
			pp.fabricPort = true
			switch g, ok := pt.RoCEv2GIDOf(mine); {
			case len(mine) > 0 && ok:
				idx := g.Index
				pp.GIDIndex, pp.GID, pp.Netdev, pp.GIDByAddr = &idx, g.GID, g.Netdev, true
			case len(mine) > 0:
				pp.Why = fmt.Sprintf("no RoCE v2 GID with the pod's address (%s): the device is not on the pod's RDMA network", ifaceList(r.Interfaces))
			case pt.RoCEv2GIDIndex != nil:
				// No Multus addresses: the RoCE v2 IPv4 GID on one of the pod's own netdevs (ibport).
				idx := *pt.RoCEv2GIDIndex
				pp.GIDIndex = &idx
				for _, g := range pt.GIDs {
					if g.Index == idx {
						pp.GID, pp.Netdev = g.GID, g.Netdev
					}
				}
			default:
				pp.Why = "no RoCE v2 IPv4 GID on the pod's interfaces (" + strings.Join(r.Report.Netdevs, ", ") + "): the RoCE network is not attached to the pod"
			}
			if pp.GIDIndex != nil {
				pp.OtherGIDs = len(pt.RoCEv2IPv4()) - 1
			}
		default:
			pp.fabricPort = true
		}
		pp.Use = pp.Why == ""
		if pp.Use {
			dp.HCAs = append(dp.HCAs, pp.Port)
		}
		dp.Ports = append(dp.Ports, pp)
	}
	slices.SortFunc(dp.HCAs, naturalCmp)
	return dp
}

// applyFabric sets spec.fabric from the ports' link layer.
func (d *Detected) applyFabric(good []*DetectedProbe) {
	p := d.Profile
	byFabric := map[string][]string{}
	for _, dp := range good {
		byFabric[dp.Fabric] = append(byFabric[dp.Fabric], dp.Node)
	}
	if len(byFabric) > 1 {
		d.Conflicts = append(d.Conflicts, "probe pods read different link layers: "+describeGroups(byFabric)+"; spec.fabric not set from them (one profile per pool)")
		return
	}
	first := good[0]
	var pp ProbedPort
	for _, x := range first.Ports {
		if x.fabricPort {
			pp = x
			break
		}
	}
	f := first.Fabric
	prev, prevOrigin := p.Spec.Fabric, d.Origins["spec.fabric"]
	if prevOrigin != "default" && prevOrigin != "" && prev != f {
		d.Conflicts = append(d.Conflicts, fmt.Sprintf("spec.fabric: %s says %s, but the probe pod on node %s reads %slink_layer: %s; the profile takes %s, what the ports are",
			prevOrigin, prev, first.Node, pp.sysfsBase, pp.LinkLayer, f))
	}
	if _, ok := d.Undetected["spec.fabric"]; ok && len(labelFabrics(d)) > 1 {
		d.Conflicts = append(d.Conflicts, "the probes settle the nodes' disagreement on the link layer for the probed pool(s): "+f)
	}
	p.Spec.Fabric = f
	d.set("spec.fabric", fmt.Sprintf("probe pod on node %s: %slink_layer: %s (%s)", first.Node, pp.sysfsBase, pp.LinkLayer, poolsSaid(good)))
}

func labelFabrics(d *Detected) map[string]bool {
	m := map[string]bool{}
	for _, n := range d.Nodes {
		if n.LinkLayer != "" {
			m[n.LinkLayer] = true
		}
	}
	return m
}

// applyHCAs sets spec.hcas when every probed pool uses the same ports.
func (d *Detected) applyHCAs(good []*DetectedProbe) {
	byList := map[string][]string{}
	for _, dp := range good {
		if len(dp.HCAs) == 0 {
			d.Undetected["spec.hcas"] = fmt.Sprintf("the probe pod on node %s sees %s ports but none it could use (see the notes); empty lets NCCL discover them", dp.Node, dp.Fabric)
			return
		}
		k := strings.Join(dp.HCAs, ",")
		byList[k] = append(byList[k], dp.Node)
	}
	if len(byList) > 1 {
		d.Conflicts = append(d.Conflicts, "the probed pools use different HCAs: "+describeLists(byList)+"; spec.hcas left empty (NCCL discovers them; one profile per pool sets them)")
		d.Undetected["spec.hcas"] = "the pools differ (see the conflicts)"
		return
	}
	first := good[0]
	d.Profile.Spec.HCAs = slices.Clone(first.HCAs)
	what := "ACTIVE InfiniBand ports"
	if first.Fabric == FabricRoCE {
		what = "ACTIVE Ethernet ports with a RoCE v2 GID on the pod's network"
	}
	d.set("spec.hcas", fmt.Sprintf("probe pod on node %s: the %s (/sys/class/infiniband/*/ports/*/state, link_layer, gid_attrs) (%s)", first.Node, what, poolsSaid(good)))
}

// applyRate sets spec.lineRate from the used ports' rate: the most common one; ports at another
// rate are a conflict (a link that trained at lower width or speed, or a mixed pool).
func (d *Detected) applyRate(good []*DetectedProbe) {
	type rated struct{ node, port, rate string }
	byGbps := map[float64][]rated{}
	for _, dp := range good {
		for _, pp := range dp.Ports {
			if pp.fabricPort && pp.Gbps > 0 {
				byGbps[pp.Gbps] = append(byGbps[pp.Gbps], rated{dp.Node, pp.Port, pp.Rate})
			}
		}
	}
	if len(byGbps) == 0 {
		d.Undetected["spec.lineRate"] = "the probed ports printed no readable rate (/sys/class/infiniband/*/ports/*/rate); default " + DefaultLineRate + " kept"
		return
	}
	rates := make([]float64, 0, len(byGbps))
	for g := range byGbps {
		rates = append(rates, g)
	}
	// Most ports first; a tie goes to the higher rate (the design rate, the slower being the fault).
	sort.Slice(rates, func(i, j int) bool {
		if len(byGbps[rates[i]]) != len(byGbps[rates[j]]) {
			return len(byGbps[rates[i]]) > len(byGbps[rates[j]])
		}
		return rates[i] > rates[j]
	})
	top := rates[0]
	ex := byGbps[top][0]
	d.Profile.Spec.LineRate = strconv.FormatFloat(top, 'f', -1, 64) + "Gb"
	total := 0
	for _, rs := range byGbps {
		total += len(rs)
	}
	d.set("spec.lineRate", fmt.Sprintf("probe pod on node %s: /sys/class/infiniband/%s/ports/%s/rate: %s (%d of %d ports)",
		ex.node, strings.Split(ex.port, ":")[0], strings.Split(ex.port, ":")[1], ex.rate, len(byGbps[top]), total))
	if len(rates) > 1 {
		var parts []string
		for _, g := range rates[1:] {
			var where []string
			for _, r := range byGbps[g] {
				where = append(where, r.node+" "+r.port)
			}
			parts = append(parts, fmt.Sprintf("%s on %s", byGbps[g][0].rate, strings.Join(where, ", ")))
		}
		d.Conflicts = append(d.Conflicts, fmt.Sprintf("ports run at different rates: %d at %s, but %s; spec.lineRate takes %s: check the slower links (cable, transceiver, width/speed negotiation) or give that pool its own profile",
			len(byGbps[top]), ex.rate, strings.Join(parts, "; "), d.Profile.Spec.LineRate))
	}
}

// applyGID sets spec.gidIndex (RoCE) when one index names the pod's RoCE v2 IPv4 GID on every
// used port and the tables hold no other pod's or host's addresses; otherwise it keeps auto and
// says why.
func (d *Detected) applyGID(good []*DetectedProbe) {
	p := d.Profile
	type at struct {
		dp *DetectedProbe
		pp ProbedPort
	}
	var all []at
	byIdx := map[int][]string{}
	shared := []string{}
	for _, dp := range good {
		for _, pp := range dp.Ports {
			if !pp.Use || pp.GIDIndex == nil {
				continue
			}
			all = append(all, at{dp, pp})
			byIdx[*pp.GIDIndex] = append(byIdx[*pp.GIDIndex], dp.Node+" "+pp.Port)
			if pp.OtherGIDs > 0 {
				shared = append(shared, fmt.Sprintf("%s %s (%d other address(es))", dp.Node, pp.Port, pp.OtherGIDs))
			}
		}
	}
	if len(all) == 0 {
		d.Undetected["spec.gidIndex"] = "no RoCE port has a RoCE v2 GID with the pod's IPv4 address; \"auto\" kept"
		return
	}
	ex := all[0]
	idx := *ex.pp.GIDIndex
	how := "on " + orNone(ex.pp.Netdev) + ", one of the pod's interfaces (Multus reported no addresses)"
	if ex.pp.GIDByAddr {
		how = "the address of the pod's " + orNone(ex.pp.Netdev) + " (Multus network-status)"
	}
	evidence := fmt.Sprintf("probe pod on node %s: %sgid_attrs/types/%d: RoCE v2, gids/%d: %s (::ffff:%s), %s", ex.dp.Node, ex.pp.sysfsBase, idx, idx, ex.pp.GID, addrOf(ex.pp.GID), how)
	// The GIDs must be on the RDMA network's subnet when the profile names one.
	if pf, err := netip.ParsePrefix(p.Spec.AddrRange); err == nil {
		for _, a := range all {
			if ip, ok := (ibport.GID{GID: a.pp.GID}).IPv4(); ok && !pf.Contains(ip) {
				d.Conflicts = append(d.Conflicts, fmt.Sprintf("the pod's RoCE GID on node %s %s (%s) is outside spec.addrRange %s (%s): NCCL_IB_ADDR_RANGE would exclude it",
					a.dp.Node, a.pp.Port, ip, p.Spec.AddrRange, d.Origins["spec.addrRange"]))
				break
			}
		}
	}
	switch {
	case len(shared) > 0 && !ex.pp.GIDByAddr:
		p.Spec.GIDIndex = DefaultGIDIndex
		d.set("spec.gidIndex", fmt.Sprintf("auto: probe pod on node %s: %s's GID table holds %d RoCE v2 IPv4 GIDs (the host's netdev, other pods' interfaces) and Multus reported no addresses, so the pod's own cannot be told apart (by netdev name %s: index %d); NCCL >= 2.21 picks the GID in spec.addrRange",
			ex.dp.Node, ex.pp.Port, ex.pp.OtherGIDs+1, orNone(ex.pp.Netdev), idx))
	case len(shared) > 0:
		p.Spec.GIDIndex = DefaultGIDIndex
		d.set("spec.gidIndex", fmt.Sprintf("auto: %s, but the GID table is shared (%s: the host's netdev, other pods' interfaces), so each pod gets its own index; NCCL >= 2.21 picks the GID in spec.addrRange",
			evidence, strings.Join(limitList(shared, 3), "; ")))
		if p.Spec.AddrRange == "" {
			d.Undetected["spec.addrRange"] = "needed with a shared RoCE port (gidIndex auto): set it to the RDMA network's subnet (the pod's address is " + addrOf(ex.pp.GID) + ")"
		}
	case len(byIdx) > 1:
		p.Spec.GIDIndex = DefaultGIDIndex
		var parts []string
		for _, i := range slices.Sorted(maps.Keys(byIdx)) {
			parts = append(parts, fmt.Sprintf("%d on %s", i, strings.Join(limitList(byIdx[i], 4), ", ")))
		}
		d.set("spec.gidIndex", "auto: the pod's RoCE v2 GID is at different indices ("+strings.Join(parts, "; ")+"), and NCCL_IB_GID_INDEX is one number for every HCA; NCCL >= 2.21 picks per port")
	default:
		p.Spec.GIDIndex = strconv.Itoa(idx)
		d.set("spec.gidIndex", fmt.Sprintf("%s (%d port(s), %s)", evidence, len(all), poolsSaid(good)))
	}
}

func addrOf(gid string) string {
	if a, ok := (ibport.GID{GID: gid}).IPv4(); ok {
		return a.String()
	}
	return gid
}

// poolsSaid: "1 pool of 3 nodes" / "2 pools agree".
func poolsSaid(good []*DetectedProbe) string {
	n := 0
	for _, dp := range good {
		n += len(dp.Nodes)
	}
	if len(good) == 1 {
		return fmt.Sprintf("1 probe for its pool of %d node(s)", n)
	}
	return fmt.Sprintf("%d probes agree, pools of %d node(s) in all", len(good), n)
}

func ifaceList(ifs []PodInterface) string {
	var parts []string
	for _, in := range ifs {
		var as []string
		for _, a := range in.Addrs {
			as = append(as, a.String())
		}
		parts = append(parts, in.Name+" "+strings.Join(as, ","))
	}
	return strings.Join(parts, "; ")
}

func describeLists(m map[string][]string) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var parts []string
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("[%s] on %s", k, strings.Join(limitList(m[k], 4), ", ")))
	}
	return strings.Join(parts, "; ")
}

func limitList(s []string, n int) []string {
	if len(s) <= n {
		return s
	}
	return append(slices.Clone(s[:n]), fmt.Sprintf("and %d more", len(s)-n))
}

func orNone(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// naturalCmp orders mlx5_2 before mlx5_10.
func naturalCmp(a, b string) int {
	for a != "" && b != "" {
		da, db := digits(a), digits(b)
		if da > 0 && db > 0 {
			na, _ := strconv.Atoi(a[:da])
			nb, _ := strconv.Atoi(b[:db])
			if na != nb {
				return na - nb
			}
			a, b = a[da:], b[db:]
			continue
		}
		if a[0] != b[0] {
			return int(a[0]) - int(b[0])
		}
		a, b = a[1:], b[1:]
	}
	return len(a) - len(b)
}

func digits(s string) int {
	i := 0
	for i < len(s) && i < 9 && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	return i
}

// Summary is one line for people: "pool X (3 nodes): node gpu-node-1: ib, mlx5_0:1 mlx5_1:1 at 200 Gb/sec (4X HDR)".
func (dp DetectedProbe) Summary() string {
	s := fmt.Sprintf("%s (%d node(s)): probe pod on %s", dp.Pool, len(dp.Nodes), dp.Node)
	if dp.Err != "" {
		return s + ": " + dp.Err
	}
	rates := map[string]bool{}
	for _, pp := range dp.Ports {
		if pp.Use && pp.Rate != "" {
			rates[pp.Rate] = true
		}
	}
	r := make([]string, 0, len(rates))
	for k := range rates {
		r = append(r, k)
	}
	sort.Strings(r)
	s += fmt.Sprintf(": %s, %d of %d port(s) used: %s", orNone(dp.Fabric), len(dp.HCAs), len(dp.Ports), strings.Join(dp.HCAs, " "))
	if len(r) > 0 {
		s += " at " + strings.Join(r, ", ")
	}
	return s
}
