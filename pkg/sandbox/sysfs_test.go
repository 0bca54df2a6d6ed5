package sandbox

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/ain-hpc/ain/pkg/ibport"
)

// The sandbox's IB port probe output is what ain's probe command prints over each scenario's
// simulated sysfs tree, run for real with sh and grep: port states, rates, GID tables with their
// types and netdevs come out of files, not out of a canned text.
func TestProbeRunsOverSimulatedSysfs(t *testing.T) {
	pod := &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Command: []string{"/bin/sh", "-c", ibport.SysfsDumpCommand}}}}}
	script, ok := runsProbe(pod)
	if !ok {
		t.Fatal("the preflight's probe pod is not recognised")
	}
	for _, c := range []struct {
		sample, state, rate string
		ready               bool
		gid                 int
	}{
		{"probe/sysfs-ib-active.txt", "ACTIVE", "200 Gb/sec (4X HDR)", true, -1},
		{"probe/sysfs-ib-init.txt", "INIT", "200 Gb/sec (4X HDR)", false, -1},
		{"probe/sysfs-roce-active.txt", "ACTIVE", "200 Gb/sec (4X HDR)", true, 3},
	} {
		desc, err := RenderSample(c.sample, SampleData{Pod: "p", Namespace: "ns", Env: map[string]string{}})
		if err != nil {
			t.Fatal(err)
		}
		out, err := runProbe(context.Background(), script, desc, t.TempDir())
		if err != nil {
			t.Fatalf("%s: %v", c.sample, err)
		}
		if !strings.Contains(out, "/sys/class/infiniband/mlx5_0/ports/1/state:") {
			t.Fatalf("%s: the script printed no port: %q", c.sample, out)
		}
		rep, err := ibport.Parse(strings.NewReader(out))
		if err != nil || len(rep.Ports) == 0 {
			t.Fatalf("%s: %v %+v", c.sample, err, rep)
		}
		p := rep.Ports[0]
		if p.State != c.state || p.Rate == nil || *p.Rate != c.rate || rep.Ready != c.ready {
			t.Errorf("%s: state %s rate %v ready %v", c.sample, p.State, p.Rate, rep.Ready)
		}
		if (c.gid < 0) != (rep.GIDIndex == nil) || (rep.GIDIndex != nil && *rep.GIDIndex != c.gid) {
			t.Errorf("%s: gid %v want %d", c.sample, rep.GIDIndex, c.gid)
		}
	}
	// RoCE GIDs only on a host netdev: no usable GID for the pod, and the report says whose.
	desc, err := RenderSample("probe/sysfs-roce-host-gids.txt", SampleData{Pod: "p", Namespace: "ns", Env: map[string]string{}})
	if err != nil {
		t.Fatal(err)
	}
	out, err := runProbe(context.Background(), script, desc, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	rep, err := ibport.Parse(strings.NewReader(out))
	if err != nil || !rep.Ready || rep.GIDIndex != nil || len(rep.ForeignGIDs) != 1 || !strings.Contains(rep.ForeignGIDs[0], "ens1f0np0") {
		t.Errorf("host GIDs: %v %+v", err, rep)
	}
	// A node with no RDMA device: the script prints no port, and that is not an error.
	out, err = runProbe(context.Background(), script, "/sys/class/net/eth0/ifindex:2\n", t.TempDir())
	if err != nil || strings.Contains(out, "infiniband") || !strings.Contains(out, "/sys/class/net/eth0/ifindex:2") {
		t.Errorf("no device: %v %q", err, out)
	}
}
