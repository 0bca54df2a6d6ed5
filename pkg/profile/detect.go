package profile

import (
	"encoding/json"
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

// NAD is the part of a Multus NetworkAttachmentDefinition detection reads.
type NAD struct {
	Namespace, Name string
	// ResourceName is the k8s.v1.cni.cncf.io/resourceName annotation: the device-plugin resource
	// whose devices the network's interfaces use.
	ResourceName string
	// Config is spec.config, the CNI configuration (JSON).
	Config string
}

// Detected is a profile built from what the cluster says, with the origin of every field and
// what could not be detected.
type Detected struct {
	Profile *Profile `json:"profile"`
	// Origins: field path -> where the value came from (a node label, allocatable, a NAD) or "default".
	Origins map[string]string `json:"origins"`
	// Undetected: field path -> why it could not be detected and how to fill it in.
	Undetected map[string]string `json:"undetected"`
	Nodes      []DetectedNode    `json:"nodes"`
	Networks   []DetectedNetwork `json:"networks"`
	// Conflicts: places where the cluster's sources disagree (nodes with different RDMA
	// resources, GPU products, link layers; labels vs what the probe pods read; ports at
	// different rates).
	Conflicts []string `json:"conflicts"`
	// Probes: what each probe pod (one per pool of alike GPU nodes) saw and what was made of it.
	Probes []DetectedProbe `json:"probes"`
	// Notes: what the probes left out and why (a port not ACTIVE, a probe that did not run).
	Notes []string `json:"notes"`
}

// DetectedNode is one GPU node as its labels and allocatable describe it.
type DetectedNode struct {
	Name         string            `json:"name"`
	GPUs         int64             `json:"gpus"`
	GPUResource  string            `json:"gpuResource,omitempty"`
	GPUProduct   string            `json:"gpuProduct,omitempty"`
	RDMA         map[string]int64  `json:"rdma,omitempty"` // RDMA-looking resources and their allocatable
	LinkLayer    string            `json:"linkLayer,omitempty"`
	RDMALabels   map[string]string `json:"rdmaLabels,omitempty"`
	Unschedulble bool              `json:"unschedulable,omitempty"`
}

// DetectedNetwork is one NAD and what its CNI config says.
type DetectedNetwork struct {
	Ref          string `json:"ref"` // ns/name
	Type         string `json:"type"`
	Master       string `json:"master,omitempty"`
	Subnet       string `json:"subnet,omitempty"`
	ResourceName string `json:"resourceName,omitempty"`
	Fabric       string `json:"fabric,omitempty"` // what the CNI type implies, if anything
	RDMA         bool   `json:"rdma"`             // tied to an RDMA resource, or an RDMA-only CNI type
}

// Node labels read. The GPU labels are GPU feature discovery's, the rdma/pci ones NFD's (the
// NVIDIA Network Operator keys on pci-15b3.present: Mellanox/network-operator
// pkg/nodeinfo/attributes.go). No operator publishes a port's link layer as a label (the Network
// Operator's own labels are network.nvidia.com/operator.*), so the fabric comes from CoreWeave's
// flavor label, from ain.dev/link-layer, which an admin sets (`kubectl label node N
// ain.dev/link-layer=infiniband`; the sandbox's nodes carry it), or from the RDMA network's CNI type.
const (
	labelGPUProduct = "nvidia.com/gpu.product" // GPU feature discovery
	labelGPUCount   = "nvidia.com/gpu.count"
	labelRDMACap    = "feature.node.kubernetes.io/rdma.capable" // NFD rdma source
	labelRDMAAvail  = "feature.node.kubernetes.io/rdma.available"
	labelMellanox   = "feature.node.kubernetes.io/pci-15b3.present" // NFD pci source: a Mellanox/NVIDIA NIC
	labelLinkLayer  = "ain.dev/link-layer"
	labelCWFlavor   = "backend.coreweave.cloud/flavor" // CoreWeave: infiniband or roce
)

// gpuResources ain recognises as GPUs.
var gpuResources = []string{"nvidia.com/gpu", "amd.com/gpu"}

// isRDMAResource: the shared RDMA device plugin's "rdma/<name>", and SR-IOV / host-device
// resources whose name says RDMA, HCA, SR-IOV or a Mellanox NIC.
func isRDMAResource(name string) bool {
	if strings.HasPrefix(name, "rdma/") {
		return true
	}
	i := strings.Index(name, "/")
	if i < 0 {
		return false
	}
	vendor, n := name[:i], strings.ToLower(name[i+1:])
	if n == "gpu" || strings.HasPrefix(n, "mig-") || strings.HasPrefix(n, "gpu") {
		return false
	}
	switch vendor {
	case "nvidia.com", "mellanox.com", "intel.com", "openshift.io", "networking.k8s.io":
		for _, w := range []string{"rdma", "hca", "sriov", "mlnx", "mellanox", "roce", "ib"} {
			if strings.Contains(n, w) {
				return true
			}
		}
	}
	return false
}

// Detect builds a profile from nodes and NADs. Fields the API cannot tell (HCAs, the RoCE GID
// index, the line rate, the socket interface) keep their defaults and are listed in Undetected:
// they need a probe pod on a GPU node (`ain preflight`, `ain doctor ib-ports`).
func Detect(nodes []corev1.Node, nads []NAD, nadErr error) *Detected {
	p := Default()
	p.Metadata.Name = "detected"
	d := &Detected{Profile: p, Origins: map[string]string{}, Undetected: map[string]string{}, Nodes: []DetectedNode{}, Networks: []DetectedNetwork{}, Conflicts: []string{}, Probes: []DetectedProbe{}, Notes: []string{}}
	for k, v := range p.Origins {
		d.Origins[k] = v
	}
	set := func(path, origin string) { d.Origins[path] = origin; p.Origins[path] = origin }

	// GPU nodes and what they offer.
	gpuRes := map[string]int{}
	rdmaRes := map[string][]string{} // resource -> nodes
	products := map[string][]string{}
	links := map[string][]string{}
	for _, n := range nodes {
		dn := DetectedNode{Name: n.Name, Unschedulble: n.Spec.Unschedulable}
		for _, g := range gpuResources {
			if q, ok := n.Status.Allocatable[corev1.ResourceName(g)]; ok && q.Value() > 0 {
				dn.GPUs, dn.GPUResource = q.Value(), g
			}
		}
		if dn.GPUs == 0 {
			continue
		}
		gpuRes[dn.GPUResource]++
		for r, q := range n.Status.Allocatable {
			if isRDMAResource(string(r)) && q.Value() > 0 {
				if dn.RDMA == nil {
					dn.RDMA = map[string]int64{}
				}
				dn.RDMA[string(r)] = q.Value()
				rdmaRes[string(r)] = append(rdmaRes[string(r)], n.Name)
			}
		}
		dn.GPUProduct = n.Labels[labelGPUProduct]
		if dn.GPUProduct != "" {
			products[dn.GPUProduct] = append(products[dn.GPUProduct], n.Name)
		}
		for _, l := range []string{labelRDMACap, labelRDMAAvail, labelMellanox} {
			if v, ok := n.Labels[l]; ok {
				if dn.RDMALabels == nil {
					dn.RDMALabels = map[string]string{}
				}
				dn.RDMALabels[l] = v
			}
		}
		switch ll := strings.ToLower(n.Labels[labelLinkLayer] + n.Labels[labelCWFlavor]); {
		case strings.Contains(ll, "infiniband"):
			dn.LinkLayer = FabricIB
		case strings.Contains(ll, "ethernet"), strings.Contains(ll, "roce"):
			dn.LinkLayer = FabricRoCE
		}
		if dn.LinkLayer != "" {
			links[dn.LinkLayer] = append(links[dn.LinkLayer], n.Name)
		}
		d.Nodes = append(d.Nodes, dn)
	}
	gpuNodes := len(d.Nodes)
	if gpuNodes == 0 {
		d.Undetected["spec.gpuResource"] = "no node has GPUs allocatable (nvidia.com/gpu, amd.com/gpu): is the GPU device plugin running?"
	} else {
		g := topKey(gpuRes)
		p.Spec.GPUResource = g
		set("spec.gpuResource", fmt.Sprintf("node allocatable (%d of %d GPU nodes)", gpuRes[g], gpuNodes))
	}
	if len(products) > 1 {
		d.Conflicts = append(d.Conflicts, "GPU nodes have different products: "+describeGroups(products))
	}

	// The RDMA resource: the one most GPU nodes offer.
	if len(rdmaRes) == 0 {
		if gpuNodes > 0 {
			d.Undetected["spec.rdma.resource"] = "no GPU node has an RDMA resource allocatable (rdma/..., or an SR-IOV resource): install the RDMA shared device plugin or SR-IOV device plugin (NVIDIA Network Operator)"
		}
	} else {
		counts := map[string]int{}
		for r, ns := range rdmaRes {
			counts[r] = len(ns)
		}
		r := topKey(counts)
		p.Spec.RDMA.Resource = r
		set("spec.rdma.resource", fmt.Sprintf("node allocatable (%d of %d GPU nodes)", counts[r], gpuNodes))
		if counts[r] < gpuNodes {
			d.Conflicts = append(d.Conflicts, fmt.Sprintf("%s is allocatable on %d of %d GPU nodes: jobs will only fit those", r, counts[r], gpuNodes))
		}
		if len(rdmaRes) > 1 {
			d.Conflicts = append(d.Conflicts, "several RDMA resources: "+describeGroups(rdmaRes)+"; the profile takes "+r)
		}
	}

	// Networks.
	if nadErr != nil {
		d.Undetected["spec.networks"] = "NetworkAttachmentDefinitions could not be read: " + nadErr.Error()
	}
	var refs []string
	var subnets []string
	nadFabric := map[string][]string{}
	for _, n := range nads {
		dn := parseNAD(n)
		if dn.ResourceName != "" && (dn.ResourceName == p.Spec.RDMA.Resource || isRDMAResource(dn.ResourceName)) {
			dn.RDMA = true
		}
		d.Networks = append(d.Networks, dn)
		if !dn.RDMA {
			continue
		}
		refs = append(refs, dn.Ref)
		if dn.Subnet != "" {
			subnets = append(subnets, dn.Subnet+" ("+dn.Ref+")")
		}
		if dn.Fabric != "" {
			nadFabric[dn.Fabric] = append(nadFabric[dn.Fabric], dn.Ref)
		}
	}
	sort.Strings(refs)
	// Rails on one subnet (one NAD per NIC, one whereabouts range) are one subnet.
	subnets = dedupeSubnets(subnets)
	if len(refs) > 0 {
		p.Spec.Networks = refs
		set("spec.networks", "NetworkAttachmentDefinitions tied to the RDMA resource or of an RDMA CNI type")
	} else if nadErr == nil {
		d.Undetected["spec.networks"] = "no NetworkAttachmentDefinition uses the RDMA resource: fine for InfiniBand with the shared device plugin (no secondary network needed); RoCE pods need one"
	}

	// Fabric: node labels first, then what the networks' CNI types imply.
	switch {
	case len(links) == 1:
		f := firstKey(links)
		p.Spec.Fabric = f
		set("spec.fabric", fmt.Sprintf("node label %s on %d of %d GPU nodes", linkLabel(nodes), len(links[f]), gpuNodes))
	case len(links) > 1:
		d.Conflicts = append(d.Conflicts, "GPU nodes report different link layers: "+describeGroups(links))
		d.Undetected["spec.fabric"] = "the nodes disagree on the link layer; set it by hand per node pool"
	case len(nadFabric) == 1:
		f := firstKey(nadFabric)
		p.Spec.Fabric = f
		set("spec.fabric", "the RDMA network's CNI type ("+strings.Join(nadFabric[f], ", ")+")")
	case len(p.Spec.RDMA.Resource) > 0 && d.Origins["spec.rdma.resource"] != "default":
		d.Undetected["spec.fabric"] = "an RDMA resource exists but nothing says InfiniBand or Ethernet: a probe pod reads /sys/class/infiniband/*/ports/*/link_layer (detect runs one unless --no-probes); label the GPU nodes " + labelLinkLayer + "=infiniband or =ethernet to let detect read it"
	default:
		if gpuNodes > 0 {
			p.Spec.Fabric = FabricSocket
			set("spec.fabric", "no RDMA resource on any GPU node: TCP sockets")
		}
	}
	if len(nadFabric) == 1 && len(links) == 1 && firstKey(nadFabric) != firstKey(links) {
		d.Conflicts = append(d.Conflicts, fmt.Sprintf("node labels say %s, the network's CNI type says %s", firstKey(links), firstKey(nadFabric)))
	}
	if len(subnets) == 1 && p.Spec.Fabric == FabricRoCE {
		sub, refs, _ := strings.Cut(subnets[0], " ")
		p.Spec.AddrRange = sub
		set("spec.addrRange", "the RDMA network's IPAM range "+refs)
	} else if len(subnets) > 1 {
		d.Conflicts = append(d.Conflicts, "several RDMA subnets: "+strings.Join(subnets, ", ")+"; spec.addrRange left unset")
	}

	// What only a probe pod can read (ApplyProbes fills these in and drops them from here).
	probe := "a probe pod on a GPU node reads it (detect runs one unless --no-probes)"
	d.Undetected["spec.hcas"] = "the HCA names are not in the API: " + probe + "; empty lets NCCL discover them"
	d.Undetected["spec.lineRate"] = "the port rate (/sys/class/infiniband/*/ports/*/rate) is not in the API: " + probe + "; default " + DefaultLineRate + " kept"
	if p.Spec.Fabric == FabricRoCE || p.Spec.Fabric == DefaultFabric && d.Origins["spec.fabric"] == "default" {
		d.Undetected["spec.gidIndex"] = "the RoCE v2 GID index of the pod's interface is not in the API: " + probe + "; \"auto\" (NCCL >= 2.21 picks it, with spec.addrRange) kept"
	}
	d.Undetected["spec.trafficClass"] = "the lossless traffic class is switch and NIC QoS configuration (mlnx_qos), not in the API"
	d.Undetected["spec.socketIfname"] = "the pod's bootstrap interface (eth0 on most CNIs) is not in the API"
	return d
}

// parseNAD reads a NAD's CNI config: its type, master, IPAM range, and the fabric its type
// implies (ipoib and ib-sriov are InfiniBand; macvlan, sriov and host-device over an RDMA
// resource carry RoCE on Ethernet, but host-device and sriov also serve IB, so they imply nothing).
func parseNAD(n NAD) DetectedNetwork {
	dn := DetectedNetwork{Ref: n.Namespace + "/" + n.Name, ResourceName: n.ResourceName}
	var cfg struct {
		Type    string `json:"type"`
		Master  string `json:"master"`
		Plugins []struct {
			Type   string          `json:"type"`
			Master string          `json:"master"`
			IPAM   json.RawMessage `json:"ipam"`
		} `json:"plugins"`
		IPAM json.RawMessage `json:"ipam"`
	}
	if err := json.Unmarshal([]byte(n.Config), &cfg); err != nil {
		dn.Type = "unreadable config: " + err.Error()
		return dn
	}
	ipam := cfg.IPAM
	if cfg.Type == "" && len(cfg.Plugins) > 0 {
		cfg.Type, cfg.Master, ipam = cfg.Plugins[0].Type, cfg.Plugins[0].Master, cfg.Plugins[0].IPAM
	}
	dn.Type, dn.Master = cfg.Type, cfg.Master
	dn.Subnet = ipamSubnet(ipam)
	switch cfg.Type {
	case "ipoib", "ib-sriov":
		dn.Fabric, dn.RDMA = FabricIB, true
	case "macvlan":
		dn.Fabric = FabricRoCE
	}
	return dn
}

// ipamSubnet: whereabouts' "range", host-local's "subnet" or "ranges"[0][0].subnet, nv-ipam's
// pool is not a subnet (left out).
func ipamSubnet(raw json.RawMessage) string {
	if len(raw) == 0 {
		return ""
	}
	var ipam struct {
		Range  string `json:"range"`
		Subnet string `json:"subnet"`
		Ranges [][]struct {
			Subnet string `json:"subnet"`
		} `json:"ranges"`
	}
	if json.Unmarshal(raw, &ipam) != nil {
		return ""
	}
	for _, s := range []string{ipam.Range, ipam.Subnet} {
		if s == "" {
			continue
		}
		// whereabouts allows a range with an end: 192.168.1.0/24 or 192.168.1.10-192.168.1.50/24.
		if pfx, err := netip.ParsePrefix(s); err == nil {
			return pfx.Masked().String()
		}
	}
	if len(ipam.Ranges) > 0 && len(ipam.Ranges[0]) > 0 {
		if pfx, err := netip.ParsePrefix(ipam.Ranges[0][0].Subnet); err == nil {
			return pfx.Masked().String()
		}
	}
	return ""
}

func topKey(m map[string]int) string {
	best, bn := "", -1
	for k, n := range m {
		if n > bn || (n == bn && k < best) {
			best, bn = k, n
		}
	}
	return best
}

func firstKey[V any](m map[string]V) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	if len(keys) == 0 {
		return ""
	}
	return keys[0]
}

func describeGroups(m map[string][]string) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		parts = append(parts, k+" on "+strconv.Itoa(len(m[k]))+" node(s)")
	}
	return strings.Join(parts, ", ")
}

// linkLabel names the label the link layer came from.
func linkLabel(nodes []corev1.Node) string {
	for _, n := range nodes {
		if _, ok := n.Labels[labelLinkLayer]; ok {
			return labelLinkLayer
		}
		if _, ok := n.Labels[labelCWFlavor]; ok {
			return labelCWFlavor
		}
	}
	return "(link layer)"
}

// YAML renders the detected profile as a profile file: each field carries a comment saying
// where its value came from, and the header lists what could not be detected and the conflicts.
func (d *Detected) YAML(server, when string) ([]byte, error) {
	out, err := yaml.Marshal(d.Profile)
	if err != nil {
		return nil, err
	}
	var b strings.Builder
	fmt.Fprintf(&b, "# Fabric profile built by `ain profile detect` from %s at %s.\n", server, when)
	b.WriteString("# Each field says where its value came from; \"default\" means the cluster did not say.\n")
	probes := make([]string, len(d.Probes))
	for i, pr := range d.Probes {
		probes[i] = pr.Summary()
	}
	var undetected []string
	for _, k := range slices.Sorted(maps.Keys(d.Undetected)) {
		undetected = append(undetected, k+": "+d.Undetected[k])
	}
	commentSection(&b, "Conflicts (the cluster's sources disagree):", d.Conflicts)
	commentSection(&b, "Probe pods (one per pool of alike GPU nodes):", probes)
	commentSection(&b, "Notes:", d.Notes)
	commentSection(&b, "Not detected:", undetected)
	// Annotate "key: value" lines with their field's origin, tracking the key path by indent.
	var stack []string
	for _, line := range strings.Split(strings.TrimRight(string(out), "\n"), "\n") {
		trim := strings.TrimLeft(line, " ")
		indent := (len(line) - len(trim)) / 2
		if strings.HasPrefix(trim, "- ") {
			b.WriteString(line + "\n")
			continue
		}
		key := strings.SplitN(trim, ":", 2)[0]
		if indent < len(stack) {
			stack = stack[:indent]
		}
		stack = append(stack, key)
		path := strings.Join(stack, ".")
		if o, ok := d.Origins[path]; ok {
			line += "  # " + commentSafe(o)
		}
		b.WriteString(line + "\n")
	}
	return []byte(b.String()), nil
}

// dedupeSubnets merges "subnet (ref)" entries of the same subnet: "10.10.0.0/16 (a, b)".
func dedupeSubnets(in []string) []string {
	var order []string
	refs := map[string][]string{}
	for _, e := range in {
		sub, ref, _ := strings.Cut(e, " ")
		if _, ok := refs[sub]; !ok {
			order = append(order, sub)
		}
		refs[sub] = append(refs[sub], strings.TrimSuffix(strings.TrimPrefix(ref, "("), ")"))
	}
	out := make([]string, 0, len(order))
	for _, sub := range order {
		out = append(out, sub+" ("+strings.Join(refs[sub], ", ")+")")
	}
	return out
}

// commentSection writes a titled list into the header comment of a detected profile, nothing
// when the list is empty.
func commentSection(b *strings.Builder, title string, items []string) {
	if len(items) == 0 {
		return
	}
	b.WriteString("#\n# " + title + "\n")
	for _, it := range items {
		b.WriteString("#   " + commentSafe(it) + "\n")
	}
}

// commentSafe makes text from the cluster (sysfs values, node names, API errors) fit in one
// YAML comment: invalid UTF-8 and control characters would end the file's validity, and a line
// break (YAML 1.1 counts NEL, LS and PS as ones) would end the comment.
func commentSafe(s string) string {
	return strings.Map(func(r rune) rune {
		// Outside YAML's printable set (C0, DEL, C1, U+FFFE/FFFF) or a line break.
		if r < 0x20 || r >= 0x7f && r <= 0x9f || r == 0x2028 || r == 0x2029 || r >= 0xfffd && r <= 0xffff || r == utf8.RuneError {
			return '?'
		}
		return r
	}, strings.ToValidUTF8(s, "?"))
}
