package profile

import (
	"encoding/json"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/ain-hpc/ain/internal/golden"
	"github.com/ain-hpc/ain/pkg/ibport"
)

// probeDump parses a probe dump of testdata/probe (see its README for what each is).
func probeDump(t *testing.T, name string) *ibport.Report {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", "probe", name))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r, err := ibport.Parse(f)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// podInterfaces reads a Multus network-status file as the CLI passes it on: the non-default
// networks' interfaces and IPv4 addresses.
func podInterfaces(t *testing.T, name string) []PodInterface {
	t.Helper()
	if name == "" {
		return nil
	}
	raw, err := os.ReadFile(filepath.Join("testdata", "probe", name))
	if err != nil {
		t.Fatal(err)
	}
	var nets []struct {
		Name, Interface string
		IPs             []string
		Default         bool
	}
	if err := json.Unmarshal(raw, &nets); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	var out []PodInterface
	for _, n := range nets {
		if n.Default {
			continue
		}
		in := PodInterface{Network: n.Name, Name: n.Interface}
		for _, s := range n.IPs {
			in.Addrs = append(in.Addrs, netip.MustParseAddr(s))
		}
		out = append(out, in)
	}
	return out
}

type probeCase struct {
	name      string
	nodes     []corev1.Node
	nads      []NAD
	every     bool
	dumps     map[string][2]string // probed node -> dump file, network-status file
	pools     int
	fabric    string
	hcas      string
	lineRate  string
	gidIndex  string
	portGIDs  map[string]int    // "node port" -> the pod's GID index
	origins   map[string]string // path -> substring
	conflicts []string
	notes     []string
	undet     []string
}

// TestApplyProbes derives the probed fields from realistic dumps: InfiniBand NDR (with a down
// port and Ethernet storage ports to leave out) and HDR, RoCE on a shared macvlan port (the
// pod's GID found by its address among the host's and another pod's, index kept auto), SR-IOV
// (index 3 everywhere) and SR-IOV with an IPv6 address first (indices differ), labels that say
// InfiniBand over Ethernet ports, and nodes whose ports run at different rates.
func TestApplyProbes(t *testing.T) {
	ib := map[string]string{labelLinkLayer: "infiniband", labelGPUProduct: "NVIDIA-H100-80GB-HBM3", "node.kubernetes.io/instance-type": "hgx-h100"}
	eth := map[string]string{labelLinkLayer: "ethernet", labelGPUProduct: "NVIDIA-H100-80GB-HBM3"}
	rdma := map[string]int64{"rdma/rdma_shared_device_a": 63}
	macvlan := NAD{Namespace: "default", Name: "rdma-net", ResourceName: "rdma/rdma_shared_device_a",
		Config: `{"cniVersion":"0.3.1","type":"macvlan","master":"ens1f0np0","ipam":{"type":"whereabouts","range":"192.168.100.0/24"}}`}
	sriov := map[string]int64{"nvidia.com/sriov_rdma": 8}
	rails := []NAD{
		{Namespace: "ml", Name: "sriov-rail0", ResourceName: "nvidia.com/sriov_rdma", Config: `{"cniVersion":"0.3.1","type":"sriov","ipam":{"type":"whereabouts","range":"10.56.217.0/24"}}`},
		{Namespace: "ml", Name: "sriov-rail1", ResourceName: "nvidia.com/sriov_rdma", Config: `{"cniVersion":"0.3.1","type":"sriov","ipam":{"type":"whereabouts","range":"10.56.218.0/24"}}`},
	}
	cases := []probeCase{
		{name: "ib-ndr-8rail", pools: 1,
			nodes: []corev1.Node{gpuNode("gpu-1", 8, rdma, ib), gpuNode("gpu-2", 8, rdma, ib), gpuNode("gpu-3", 8, rdma, ib)},
			dumps: map[string][2]string{"gpu-1": {"ib-ndr-8rail.txt"}}, fabric: FabricIB,
			hcas: "mlx5_0:1,mlx5_1:1,mlx5_2:1,mlx5_3:1,mlx5_6:1,mlx5_7:1,mlx5_10:1,mlx5_11:1", lineRate: "400Gb", gidIndex: "auto",
			origins: map[string]string{
				"spec.fabric":   "probe pod on node gpu-1: /sys/class/infiniband/mlx5_0/ports/1/link_layer: InfiniBand (1 probe for its pool of 3 node(s))",
				"spec.lineRate": "probe pod on node gpu-1: /sys/class/infiniband/mlx5_0/ports/1/rate: 400 Gb/sec (4X NDR) (8 of 8 ports)",
				"spec.hcas":     "probe pod on node gpu-1: the ACTIVE InfiniBand ports"},
			notes: []string{"node gpu-1: mlx5_8:1 left out of spec.hcas: state DOWN, physical state Polling (cable-or-peer-down)",
				"node gpu-1: mlx5_4:1 left out of spec.hcas: link layer Ethernet on a node whose RDMA ports are InfiniBand (8 of them)"}},
		{name: "ib-hdr-4port", pools: 1,
			nodes: []corev1.Node{gpuNode("gpu-1", 8, rdma, nil)},
			dumps: map[string][2]string{"gpu-1": {"ib-hdr-4port.txt"}}, fabric: FabricIB,
			hcas: "mlx5_0:1,mlx5_1:1,mlx5_2:1,mlx5_3:1", lineRate: "200Gb", gidIndex: "auto",
			// No label said anything: the fabric had been left undetected; the probe settles it.
			origins: map[string]string{"spec.fabric": "link_layer: InfiniBand"}},
		{name: "roce-macvlan-shared", pools: 1,
			nodes: []corev1.Node{gpuNode("gpu-1", 8, rdma, eth), gpuNode("gpu-2", 8, rdma, eth)}, nads: []NAD{macvlan},
			dumps:  map[string][2]string{"gpu-1": {"roce-macvlan-shared.txt", "roce-macvlan-shared.network-status.json"}},
			fabric: FabricRoCE, hcas: "mlx5_0:1", lineRate: "100Gb", gidIndex: "auto",
			portGIDs: map[string]int{"gpu-1 mlx5_0:1": 9},
			origins: map[string]string{
				"spec.gidIndex": "auto: probe pod on node gpu-1: /sys/class/infiniband/mlx5_0/ports/1/gid_attrs/types/9: RoCE v2, gids/9: 0000:0000:0000:0000:0000:ffff:c0a8:6407 (::ffff:192.168.100.7), the address of the pod's net1 (Multus network-status), but the GID table is shared (gpu-1 mlx5_0:1 (2 other address(es))",
				"spec.fabric":   "probe pod on node gpu-1"}},
		// Without Multus' addresses the GID is matched by netdev name (net1), which here is
		// another pod's: the shared table keeps the index auto all the same.
		{name: "roce-macvlan-no-multus", pools: 1,
			nodes: []corev1.Node{gpuNode("gpu-1", 8, rdma, eth)}, nads: []NAD{macvlan},
			dumps:  map[string][2]string{"gpu-1": {"roce-macvlan-shared.txt", ""}},
			fabric: FabricRoCE, hcas: "mlx5_0:1", lineRate: "100Gb", gidIndex: "auto",
			portGIDs: map[string]int{"gpu-1 mlx5_0:1": 7},
			origins:  map[string]string{"spec.gidIndex": "auto: probe pod on node gpu-1: mlx5_0:1's GID table holds 3 RoCE v2 IPv4 GIDs (the host's netdev, other pods' interfaces) and Multus reported no addresses, so the pod's own cannot be told apart (by netdev name net1: index 7)"}},
		// Multus gave the pod an address no port carries: the RDMA network is on another device.
		{name: "roce-not-on-pod-network", pools: 1,
			nodes: []corev1.Node{gpuNode("gpu-1", 8, rdma, eth)}, nads: []NAD{macvlan},
			dumps:  map[string][2]string{"gpu-1": {"roce-sriov-2rail.txt", "roce-macvlan-shared.network-status.json"}},
			fabric: FabricRoCE, lineRate: "400Gb", gidIndex: "auto",
			notes: []string{"node gpu-1: mlx5_12:1 left out of spec.hcas: no RoCE v2 GID with the pod's address (net1 192.168.100.7): the device is not on the pod's RDMA network"},
			undet: []string{"spec.hcas", "spec.gidIndex"}},
		{name: "roce-sriov-2rail", pools: 1,
			nodes: []corev1.Node{gpuNode("gpu-1", 8, sriov, eth), gpuNode("gpu-2", 8, sriov, eth)}, nads: rails,
			dumps:  map[string][2]string{"gpu-1": {"roce-sriov-2rail.txt", "roce-sriov-2rail.network-status.json"}},
			fabric: FabricRoCE, hcas: "mlx5_12:1,mlx5_13:1", lineRate: "400Gb", gidIndex: "3",
			portGIDs: map[string]int{"gpu-1 mlx5_12:1": 3, "gpu-1 mlx5_13:1": 3},
			origins:  map[string]string{"spec.gidIndex": "probe pod on node gpu-1: /sys/class/infiniband/mlx5_12/ports/1/gid_attrs/types/3: RoCE v2, gids/3: 0000:0000:0000:0000:0000:ffff:0a38:d905 (::ffff:10.56.217.5), the address of the pod's net1 (Multus network-status) (2 port(s)"},
			// Two subnets: Detect leaves addrRange unset and says so.
			conflicts: []string{"several RDMA subnets"}},
		{name: "roce-sriov-ipv6-first", pools: 1,
			nodes: []corev1.Node{gpuNode("gpu-1", 8, sriov, eth)}, nads: rails,
			dumps:  map[string][2]string{"gpu-1": {"roce-sriov-ipv6-first.txt", "roce-sriov-2rail.network-status.json"}},
			fabric: FabricRoCE, hcas: "mlx5_12:1,mlx5_13:1", lineRate: "400Gb", gidIndex: "auto",
			portGIDs:  map[string]int{"gpu-1 mlx5_12:1": 3, "gpu-1 mlx5_13:1": 5},
			origins:   map[string]string{"spec.gidIndex": "auto: the pod's RoCE v2 GID is at different indices (3 on gpu-1 mlx5_12:1; 5 on gpu-1 mlx5_13:1)"},
			conflicts: []string{"several RDMA subnets"}},
		{name: "label-says-ib-ports-say-ethernet", pools: 1,
			nodes: []corev1.Node{gpuNode("gpu-1", 8, sriov, ib)}, nads: rails,
			dumps:  map[string][2]string{"gpu-1": {"roce-sriov-2rail.txt", "roce-sriov-2rail.network-status.json"}},
			fabric: FabricRoCE, hcas: "mlx5_12:1,mlx5_13:1", lineRate: "400Gb", gidIndex: "3",
			conflicts: []string{"spec.fabric: node label ain.dev/link-layer on 1 of 1 GPU nodes says ib, but the probe pod on node gpu-1 reads /sys/class/infiniband/mlx5_12/ports/1/link_layer: Ethernet; the profile takes roce"}},
		{name: "rates-differ", pools: 3, every: true,
			nodes:  []corev1.Node{gpuNode("gpu-1", 8, rdma, ib), gpuNode("gpu-2", 8, rdma, ib), gpuNode("gpu-3", 8, rdma, ib)},
			dumps:  map[string][2]string{"gpu-1": {"ib-hdr-4port.txt"}, "gpu-2": {"ib-hdr-4port.txt"}, "gpu-3": {"ib-hdr-4port.txt"}},
			fabric: FabricIB, hcas: "mlx5_0:1,mlx5_1:1,mlx5_2:1,mlx5_3:1", lineRate: "200Gb", gidIndex: "auto",
			origins:   map[string]string{"spec.lineRate": "(10 of 12 ports)"},
			conflicts: []string{"ports run at different rates: 10 at 200 Gb/sec (4X HDR), but 100 Gb/sec (2X HDR) on gpu-2 mlx5_1:1, gpu-2 mlx5_3:1; spec.lineRate takes 200Gb"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d := Detect(tc.nodes, tc.nads, nil)
			pools := d.ProbePools(tc.nodes, tc.every)
			if len(pools) != tc.pools {
				t.Fatalf("%d pools, want %d: %+v", len(pools), tc.pools, pools)
			}
			var results []ProbeResult
			for _, pl := range pools {
				files, ok := tc.dumps[pl.Probe]
				if !ok {
					t.Fatalf("pool %s probes %s, which the case has no dump for", pl.Name, pl.Probe)
				}
				rep := probeDump(t, files[0])
				if tc.name == "rates-differ" && pl.Probe == "gpu-2" {
					// One node's links trained at half width on two ports.
					for _, i := range []int{1, 3} {
						r := "100 Gb/sec (2X HDR)"
						rep.Ports[i].Rate = &r
					}
				}
				results = append(results, ProbeResult{Pool: pl, Node: pl.Probe, Pod: "ain-ibprobe-" + pl.Probe, Report: rep, Interfaces: podInterfaces(t, files[1])})
			}
			d.ApplyProbes(results)
			s := d.Profile.Spec
			if s.Fabric != tc.fabric || strings.Join(s.HCAs, ",") != tc.hcas || s.LineRate != tc.lineRate || s.GIDIndex != tc.gidIndex {
				t.Errorf("fabric %s hcas %s lineRate %s gidIndex %s; want %s %s %s %s", s.Fabric, strings.Join(s.HCAs, ","), s.LineRate, s.GIDIndex, tc.fabric, tc.hcas, tc.lineRate, tc.gidIndex)
			}
			for path, want := range tc.origins {
				if !strings.Contains(d.Origins[path], want) {
					t.Errorf("origin of %s:\n got %q\nwant %q", path, d.Origins[path], want)
				}
				if _, still := d.Undetected[path]; still {
					t.Errorf("%s has an origin and is still listed undetected: %s", path, d.Undetected[path])
				}
			}
			all := strings.Join(d.Conflicts, "\n")
			for _, c := range tc.conflicts {
				if !strings.Contains(all, c) {
					t.Errorf("conflicts lack %q:\n%s", c, all)
				}
			}
			if len(tc.conflicts) == 0 && len(d.Conflicts) > 0 {
				t.Errorf("unexpected conflicts:\n%s", all)
			}
			notes := strings.Join(d.Notes, "\n")
			for _, n := range tc.notes {
				if !strings.Contains(notes, n) {
					t.Errorf("notes lack %q:\n%s", n, notes)
				}
			}
			for key, want := range tc.portGIDs {
				node, port, _ := strings.Cut(key, " ")
				found := false
				for _, dp := range d.Probes {
					for _, pp := range dp.Ports {
						if dp.Node == node && pp.Port == port {
							found = true
							if pp.GIDIndex == nil || *pp.GIDIndex != want {
								t.Errorf("%s: GID index %v, want %d", key, pp.GIDIndex, want)
							}
						}
					}
				}
				if !found {
					t.Errorf("%s not among the probed ports", key)
				}
			}
			for _, f := range tc.undet {
				if d.Undetected[f] == "" {
					t.Errorf("%s not listed as undetected", f)
				}
			}
			for _, f := range []string{"spec.hcas", "spec.lineRate"} {
				if _, ok := d.Undetected[f]; ok && !slices.Contains(tc.undet, f) {
					t.Errorf("%s still undetected: %s", f, d.Undetected[f])
				}
			}
			if s.Fabric == FabricIB && d.Undetected["spec.gidIndex"] != "" {
				t.Errorf("an InfiniBand profile lists the RoCE GID index as undetected")
			}
			// The profile file parses back with the probed values and says where they came from.
			y, err := d.YAML("https://10.0.0.1:6443", "2026-12-03T17:00:00Z")
			if err != nil {
				t.Fatal(err)
			}
			back, err := Parse("detected.yaml", y)
			if err != nil {
				t.Fatalf("%v\n%s", err, y)
			}
			if !slices.Equal(back.Spec.HCAs, s.HCAs) || back.Spec.LineRate != s.LineRate || back.Spec.GIDIndex != s.GIDIndex || back.Spec.Fabric != s.Fabric {
				t.Errorf("round trip %+v, want %+v", back.Spec, s)
			}
			if !strings.Contains(string(y), "lineRate: "+s.LineRate+"  # probe pod on node ") || !strings.Contains(string(y), "# Probe pods (one per pool of alike GPU nodes):") {
				t.Errorf("the probe's origins are not in the file:\n%s", y)
			}
			golden.JSON(t, "probe-"+tc.name, d)
		})
	}
}

// TestNotProbed: --no-probes and a user without the right to create pods leave the probed
// fields undetected, saying why, and the rest of the profile as the API gave it.
func TestNotProbed(t *testing.T) {
	nodes := []corev1.Node{gpuNode("gpu-1", 8, map[string]int64{"rdma/rdma_shared_device_a": 63}, map[string]string{labelLinkLayer: "ethernet"})}
	d := Detect(nodes, nil, nil)
	d.NotProbed("probe pods need create pods in namespace team-a: denied")
	for _, f := range []string{"spec.hcas", "spec.lineRate", "spec.gidIndex"} {
		if !strings.HasPrefix(d.Undetected[f], "not probed (probe pods need create pods in namespace team-a: denied); ") {
			t.Errorf("%s: %q", f, d.Undetected[f])
		}
	}
	if d.Profile.Spec.Fabric != FabricRoCE || d.Profile.Spec.LineRate != DefaultLineRate || d.Origins["spec.lineRate"] != "default" {
		t.Errorf("spec %+v origins %v", d.Profile.Spec, d.Origins)
	}
	// A probe that did not run: a note, and the fields stay undetected with the reason.
	d = Detect(nodes, nil, nil)
	pools := d.ProbePools(nodes, false)
	d.ApplyProbes([]ProbeResult{{Pool: pools[0], Node: "gpu-1", Pod: "ain-ibprobe-x-0", Err: "probe pod ain-ibprobe-x-0 Pending: Unschedulable"}})
	if !strings.Contains(d.Undetected["spec.hcas"], "no probe pod saw an ACTIVE RDMA port (probe pod on node gpu-1") || len(d.Notes) != 1 {
		t.Errorf("undetected %q notes %q", d.Undetected["spec.hcas"], d.Notes)
	}
}

// TestProbePools: alike nodes share one probe (a Ready, schedulable one), nodes without the
// RDMA resource or GPUs are not probed, --every-node probes each.
func TestProbePools(t *testing.T) {
	ready := corev1.NodeCondition{Type: corev1.NodeReady, Status: corev1.ConditionTrue}
	a := map[string]string{"node.kubernetes.io/instance-type": "a3-highgpu-8g", labelGPUProduct: "NVIDIA-H100-80GB-HBM3"}
	b := map[string]string{"node.kubernetes.io/instance-type": "a2-ultragpu-8g", labelGPUProduct: "NVIDIA-A100-SXM4-80GB"}
	rdma := map[string]int64{"rdma/ib": 1}
	n1, n2, n3, n4, n5 := gpuNode("n1", 8, rdma, a), gpuNode("n2", 8, rdma, a), gpuNode("n3", 8, rdma, b), gpuNode("n4", 8, nil, a), gpuNode("cpu", 0, rdma, nil)
	n2.Status.Conditions = []corev1.NodeCondition{ready}
	n3.Status.Conditions = []corev1.NodeCondition{ready}
	nodes := []corev1.Node{n1, n2, n3, n4, n5}
	d := Detect(nodes, nil, nil)
	pools := d.ProbePools(nodes, false)
	if len(pools) != 2 || pools[0].Probe != "n2" || strings.Join(pools[0].Nodes, ",") != "n1,n2" || pools[0].Name != "a3-highgpu-8g, 8x NVIDIA-H100-80GB-HBM3" || pools[1].Probe != "n3" {
		t.Errorf("pools %+v", pools)
	}
	if every := d.ProbePools(nodes, true); len(every) != 3 {
		t.Errorf("--every-node pools %+v", every)
	}
	if none := Detect([]corev1.Node{gpuNode("g", 8, nil, nil)}, nil, nil).ProbePools(nil, false); none != nil {
		t.Errorf("no RDMA resource, still pools: %+v", none)
	}
}
