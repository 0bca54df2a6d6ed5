package profile

import (
	"errors"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func gpuNode(name string, gpus int64, rdma map[string]int64, labels map[string]string) corev1.Node {
	alloc := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("96")}
	if gpus > 0 {
		alloc["nvidia.com/gpu"] = *resource.NewQuantity(gpus, resource.DecimalSI)
	}
	for r, n := range rdma {
		alloc[corev1.ResourceName(r)] = *resource.NewQuantity(n, resource.DecimalSI)
	}
	return corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}, Status: corev1.NodeStatus{Allocatable: alloc}}
}

// TestDetect: a RoCE cluster (SR-IOV-less shared device plugin + macvlan NAD with a whereabouts
// range), an InfiniBand cluster with link-layer labels and no NAD, a cluster without RDMA, and
// disagreeing nodes. The rendered YAML parses back as a profile with the same spec.
func TestDetect(t *testing.T) {
	roceNAD := NAD{Namespace: "default", Name: "rdma-net", ResourceName: "rdma/rdma_shared_device_a",
		Config: `{"cniVersion":"0.3.1","type":"macvlan","master":"ens1f0np0","mode":"bridge","ipam":{"type":"whereabouts","range":"192.168.100.0/24"}}`}
	otherNAD := NAD{Namespace: "default", Name: "storage", Config: `{"cniVersion":"0.3.1","plugins":[{"type":"bridge","ipam":{"type":"host-local","subnet":"10.9.0.0/16"}}]}`}
	h100 := map[string]string{labelGPUProduct: "NVIDIA-H100-80GB-HBM3", labelRDMACap: "true"}
	tests := []struct {
		name       string
		nodes      []corev1.Node
		nads       []NAD
		nadErr     error
		fabric     string
		rdma       string
		networks   string
		addrRange  string
		origins    map[string]string // path -> substring
		undetected []string
		conflicts  []string
	}{
		{name: "roce", nodes: []corev1.Node{
			gpuNode("gpu-1", 8, map[string]int64{"rdma/rdma_shared_device_a": 63}, h100),
			gpuNode("gpu-2", 8, map[string]int64{"rdma/rdma_shared_device_a": 63}, h100),
			gpuNode("cpu-1", 0, nil, nil),
		}, nads: []NAD{roceNAD, otherNAD}, fabric: FabricRoCE, rdma: "rdma/rdma_shared_device_a", networks: "default/rdma-net", addrRange: "192.168.100.0/24",
			origins:    map[string]string{"spec.fabric": "CNI type (default/rdma-net)", "spec.rdma.resource": "node allocatable (2 of 2 GPU nodes)", "spec.addrRange": "IPAM range (default/rdma-net)", "spec.lineRate": "default"},
			undetected: []string{"spec.hcas", "spec.lineRate", "spec.gidIndex"}},
		// One NAD per rail, all on one whereabouts range: one subnet, no conflict.
		{name: "roce-rails-one-subnet", nodes: []corev1.Node{
			gpuNode("gpu-1", 8, map[string]int64{"rdma/rdma_shared_device_a": 63}, h100),
		}, nads: []NAD{
			{Namespace: "ml", Name: "rail0", ResourceName: "rdma/rdma_shared_device_a", Config: `{"type":"macvlan","master":"ens1f0np0","ipam":{"type":"whereabouts","range":"10.10.0.0/16"}}`},
			{Namespace: "ml", Name: "rail1", ResourceName: "rdma/rdma_shared_device_a", Config: `{"type":"macvlan","master":"ens2f0np0","ipam":{"type":"whereabouts","range":"10.10.0.0/16"}}`},
		}, fabric: FabricRoCE, rdma: "rdma/rdma_shared_device_a", networks: "ml/rail0,ml/rail1", addrRange: "10.10.0.0/16",
			origins: map[string]string{"spec.addrRange": "the RDMA network's IPAM range (ml/rail0, ml/rail1)"}},
		{name: "ib-labels", nodes: []corev1.Node{
			gpuNode("gpu-1", 8, map[string]int64{"nvidia.com/mlnxnics": 8}, map[string]string{labelLinkLayer: "infiniband"}),
			gpuNode("gpu-2", 8, map[string]int64{"nvidia.com/mlnxnics": 8}, map[string]string{labelLinkLayer: "infiniband"}),
		}, fabric: FabricIB, rdma: "nvidia.com/mlnxnics",
			origins:    map[string]string{"spec.fabric": "node label ain.dev/link-layer on 2 of 2"},
			undetected: []string{"spec.networks", "spec.hcas"}},
		{name: "no-rdma", nodes: []corev1.Node{gpuNode("gpu-1", 4, nil, nil)}, nadErr: errors.New("the server could not find the requested resource"),
			fabric: FabricSocket, rdma: DefaultRDMAResource,
			origins:    map[string]string{"spec.fabric": "no RDMA resource", "spec.rdma.resource": "default"},
			undetected: []string{"spec.rdma.resource", "spec.networks"}},
		{name: "disagree", nodes: []corev1.Node{
			gpuNode("gpu-1", 8, map[string]int64{"rdma/a": 1}, map[string]string{labelLinkLayer: "ethernet", labelGPUProduct: "A"}),
			gpuNode("gpu-2", 8, map[string]int64{"rdma/a": 1}, map[string]string{labelLinkLayer: "infiniband", labelGPUProduct: "B"}),
			gpuNode("gpu-3", 8, nil, nil),
		}, fabric: DefaultFabric, rdma: "rdma/a",
			undetected: []string{"spec.fabric"},
			conflicts:  []string{"different products", "rdma/a is allocatable on 2 of 3 GPU nodes", "different link layers"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d := Detect(tc.nodes, tc.nads, tc.nadErr)
			s := d.Profile.Spec
			if s.Fabric != tc.fabric || s.RDMA.Resource != tc.rdma || strings.Join(s.Networks, ",") != tc.networks || s.AddrRange != tc.addrRange {
				t.Errorf("spec %+v", s)
			}
			for path, want := range tc.origins {
				if !strings.Contains(d.Origins[path], want) {
					t.Errorf("origin of %s = %q, want %q", path, d.Origins[path], want)
				}
			}
			for _, u := range tc.undetected {
				if d.Undetected[u] == "" {
					t.Errorf("%s not listed as undetected: %v", u, d.Undetected)
				}
			}
			all := strings.Join(d.Conflicts, "; ")
			for _, c := range tc.conflicts {
				if !strings.Contains(all, c) {
					t.Errorf("conflicts %q lack %q", all, c)
				}
			}
			if len(tc.conflicts) == 0 && len(d.Conflicts) > 0 {
				t.Errorf("unexpected conflicts %q", d.Conflicts)
			}
			y, err := d.YAML("https://127.0.0.1:6443", "2026-12-03T09:30:00Z")
			if err != nil {
				t.Fatal(err)
			}
			back, err := Parse("detected.yaml", y)
			if err != nil {
				t.Fatalf("the rendered profile does not parse: %v\n%s", err, y)
			}
			if back.Spec.Fabric != s.Fabric || back.Spec.RDMA != s.RDMA || back.Spec.AddrRange != s.AddrRange || strings.Join(back.Spec.Networks, ",") != tc.networks {
				t.Errorf("round trip %+v, want %+v", back.Spec, s)
			}
			if !strings.Contains(string(y), "fabric: "+s.Fabric+"  # ") {
				t.Errorf("no origin comment on fabric:\n%s", y)
			}
		})
	}
}
