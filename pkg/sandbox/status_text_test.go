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
		Config: Config{Scenario: "healthy", Fabric: "ib", Nodes: 1, GPUsPerNode: 8, RDMAResource: "rdma/ib", RDMACount: 4, SimulatePods: true}, RealPodsOff: RealPodsOffHint,
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
		"  real pods:  off: " + RealPodsOffHint + "\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("status text lacks %q:\n%s", want, got)
		}
	}
}

// The status says which pods ran real programs and which were simulated, and why, and why the
// sandbox runs none for real when it does not.
func TestStatusWriteTextPodRuns(t *testing.T) {
	s := &Status{Dir: "/s", Stack: StackCurrent, Running: true, Config: Config{Fabric: "ib", RDMAResource: "rdma/ib"},
		PodRuns: []PodRunGroup{
			{Real: true, Image: "mpioperator/openmpi:v0.8.0", Pods: []string{"default/ar-launcher", "default/ar-worker-0", "default/ar-worker-1"}},
			{Image: "busybox:1.36", Why: "image not mapped to this machine's programs", Pods: []string{"default/probe-1"}},
		}}
	var b bytes.Buffer
	s.WriteText(&b, "")
	want := "  real pods:  on (the mapped images' pods run their real programs where they can; the table below says which did, and why not)\n" +
		"  server:     \n  kubeconfig: \n  webhook:    off: \n\n" +
		"Pods so far: 3 ran their real programs, 1 simulated\n" +
		"RAN        PODS  IMAGE                       WHY                                          FOR EXAMPLE\n" +
		"real       3     mpioperator/openmpi:v0.8.0  -                                            default/ar-launcher default/ar-worker-0 ...\n" +
		"simulated  1     busybox:1.36                image not mapped to this machine's programs  default/probe-1\n"
	if got := b.String(); !strings.Contains(got, want) {
		t.Errorf("status text:\n%s\nwant it to hold:\n%s", got, want)
	}
	s.RealPodsOff, s.PodRuns = "this machine lacks sshd (run scripts/debian-packages.sh as root)", nil
	b.Reset()
	s.WriteText(&b, "")
	if got := b.String(); !strings.Contains(got, "  real pods:  off: this machine lacks sshd (run scripts/debian-packages.sh as root)\n") || strings.Contains(got, "Pods so far") {
		t.Errorf("status text:\n%s", got)
	}
}
