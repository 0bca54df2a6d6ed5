package sandbox

import (
	"bytes"
	"strings"
	"testing"
)

// TestStatusWriteText pins the status text: a partly running sandbox says so with the caller's
// hint, and the process and node tables carry what the operator reads (pids, ports, RSS total,
// allocatable by resource, taints).
func TestStatusWriteText(t *testing.T) {
	s := &Status{Dir: "/s", Stack: StackCurrent, APIs: []string{"kubeflow.org/v2beta1"},
		Config:     Config{Scenario: "healthy", Fabric: "ib", Nodes: 1, GPUsPerNode: 8, RDMAResource: "rdma/ib", RDMACount: 4},
		Components: []ComponentStatus{{Name: "etcd", Version: "v3.6", PID: 42, Running: true, Ports: map[string]int{"peer": 2, "client": 1}, RSSKiB: 2048}, {Name: "kwok", PID: 43}},
		Nodes:      []NodeStatus{{Name: "gpu-node-1", Ready: true, Allocatable: map[string]string{"nvidia.com/gpu": "8", "rdma/ib": "4"}, Taints: []string{"nvidia.com/gpu:NoSchedule"}}},
		Simulated:  "kwok", Logs: "/s/logs"}
	var b bytes.Buffer
	s.WriteText(&b, "HINT")
	got := b.String()
	for _, want := range []string{
		"Sandbox /s: partly running (HINT)\n",
		"etcd       v3.6     42   running  2 MiB  client=1 peer=2",
		"kwok       -        43   stopped  -",
		"total                             2 MiB",
		"NODE        READY  GPU  RDMA/IB  CPU  MEMORY  EPHEMERAL  PODS  TAINTS",
		"gpu-node-1  true   8    4        0    0       0          0     nvidia.com/gpu:NoSchedule",
		"Component logs: /s/logs",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("status text lacks %q:\n%s", want, got)
		}
	}
}
