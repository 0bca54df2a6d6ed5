package sandbox

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// Multus is not in the sandbox, but what it leaves on a pod is: a pod that asks for networks
// (k8s.v1.cni.cncf.io/networks: "a,ns/b") gets the network-status annotation Multus writes
// after the CNI ADD of each (name, interface, ips, default), so tools that read the pod's RDMA
// address from it (ain bench rdma, ain profile detect) see one.
const (
	annoNetworks      = "k8s.v1.cni.cncf.io/networks"
	annoNetworkStatus = "k8s.v1.cni.cncf.io/network-status"
)

// SecondaryIP is the address the sandbox gives the k-th (0-based) secondary network of a pod on
// gpu-node-N: 10.10.N.(11+k). The RoCE probe sample (samples/probe/sysfs-roce-active.txt) puts
// the same addresses in its GID tables (net1 on mlx5_0, net2 on mlx5_1), as the kernel does for
// a netdev's IPv4 address on a RoCE port.
func SecondaryIP(nodeIndex, k int) string {
	return fmt.Sprintf("10.10.%d.%d", nodeIndex, 11+k)
}

// networkStatus is the network-status annotation Multus would write for pod, or "" when the pod
// asks for no network. Interfaces are named net1, net2 ... in request order, as Multus does when
// the request names none ("name@ifname" keeps its own).
func networkStatus(pod *corev1.Pod) string {
	req := strings.TrimSpace(pod.Annotations[annoNetworks])
	if req == "" || strings.HasPrefix(req, "[") { // the JSON form is not emulated
		return ""
	}
	node, _ := strconv.Atoi(strings.TrimPrefix(pod.Spec.NodeName, "gpu-node-"))
	type entry struct {
		Name      string   `json:"name"`
		Interface string   `json:"interface"`
		IPs       []string `json:"ips,omitempty"`
		Default   bool     `json:"default,omitempty"`
		DNS       struct{} `json:"dns"`
	}
	status := []entry{{Name: "kwok", Interface: "eth0", Default: true}}
	if pod.Status.PodIP != "" {
		status[0].IPs = []string{pod.Status.PodIP}
	}
	for k, n := range strings.Split(req, ",") {
		n = strings.TrimSpace(n)
		name, ifname, ok := strings.Cut(n, "@")
		if !ok {
			ifname = fmt.Sprintf("net%d", k+1)
		}
		if !strings.Contains(name, "/") {
			name = pod.Namespace + "/" + name
		}
		status = append(status, entry{Name: name, Interface: ifname, IPs: []string{SecondaryIP(node, k)}})
	}
	b, _ := json.Marshal(status)
	return string(b)
}

// ownNetworkStatus says whether pod's network-status is absent or the one the agent wrote before
// the pod had an IP, so it may be (re)written; one someone else wrote is kept.
func ownNetworkStatus(pod *corev1.Pod) bool {
	cur := pod.Annotations[annoNetworkStatus]
	if cur == "" {
		return true
	}
	early := pod.DeepCopy()
	early.Status.PodIP = ""
	return cur == networkStatus(early)
}
