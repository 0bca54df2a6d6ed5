package preflight

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ain-hpc/ain/pkg/ibport"
	"github.com/ain-hpc/ain/pkg/probe"
)

// probeSample reads a probe dump and, when it has one, its Multus network-status from
// pkg/profile/testdata/probe (written for `ain profile detect`; README.md there says how the
// sysfs trees were made and what each holds).
func probeSample(t *testing.T, name string) (*ibport.Report, string) {
	t.Helper()
	dir := filepath.Join("..", "profile", "testdata", "probe")
	f, err := os.Open(filepath.Join(dir, name+".txt"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rep, err := ibport.Parse(f)
	if err != nil {
		t.Fatal(err)
	}
	st, err := os.ReadFile(filepath.Join(dir, name+".network-status.json"))
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	return rep, string(st)
}

// TestChooseGID: on a port shared by pods (RDMA shared device plugin + macvlan) the name rule
// picks another pod's net1 (index 7, 192.168.100.9) and the address rule the probe pod's own
// (index 9, 192.168.100.7, what its network-status says); without an address the name rule is
// used and the evidence says so; SR-IOV rails agree on 3; a pod whose address is on no port
// fails; two ports at different indices give no single index.
func TestChooseGID(t *testing.T) {
	shared, sharedStatus := probeSample(t, "roce-macvlan-shared")
	sriov, sriovStatus := probeSample(t, "roce-sriov-2rail")
	ipv6First, _ := probeSample(t, "roce-sriov-ipv6-first")
	other := `[{"name":"k8s-pod-network","interface":"eth0","ips":["10.244.1.17"],"default":true},{"name":"default/rdma-net","interface":"net1","ips":["192.168.100.9"]}]`
	elsewhere := `[{"name":"default/rdma-net","interface":"net1","ips":["172.16.0.4"]}]`
	// roce-sriov-ipv6-first has no status file: its addresses as the dump's GIDs hold them.
	ipv6Status := `[{"name":"default/rail1","interface":"net1","ips":["10.56.217.5"]},{"name":"default/rail2","interface":"net2","ips":["fd00:56:218::5","10.56.218.5"]}]`

	if shared.GIDIndex == nil || *shared.GIDIndex != 7 {
		t.Fatalf("the name rule (ibport.Parse) on the shared port gave %v; this test is about it picking 7, the other pod's net1", shared.GIDIndex)
	}
	cases := []struct {
		name      string
		rep       *ibport.Report
		status    string
		want      int // -1: no single index
		byAddr    bool
		unmatched bool
		rule      string
	}{
		{"shared port, by address", shared, sharedStatus, 9, true, false, "by the probe pod's address (192.168.100.7, Multus network-status): mlx5_0:1 index 9 (192.168.100.7 on net1)"},
		{"shared port, no status: by name", shared, "", 7, false, false, "by netdev name (the probe pod has no Multus network-status address"},
		{"shared port, the other pod's address", shared, other, 7, true, false, "mlx5_0:1 index 7 (192.168.100.9 on net1)"},
		{"address on no port", shared, elsewhere, -1, true, true, "no GID with the pod's address on mlx5_0:1"},
		{"sriov rails agree", sriov, sriovStatus, 3, true, false, "mlx5_12:1 index 3 (10.56.217.5 on net1); mlx5_13:1 index 3 (10.56.218.5 on net2)"},
		{"rails differ", ipv6First, ipv6Status, -1, true, false, "mlx5_12:1 index 3 (10.56.217.5 on net1); mlx5_13:1 index 5 (10.56.218.5 on net2)"},
		{"unreadable status: by name", shared, "{not json", 7, false, false, "by netdev name"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			gc := chooseGID(c.rep, probe.ParseNetworkStatus(c.status))
			got := -1
			if gc.Index != nil {
				got = *gc.Index
			}
			if got != c.want || gc.ByAddr != c.byAddr || gc.Unmatched != c.unmatched || !strings.Contains(gc.Rule, c.rule) {
				t.Errorf("index %d byAddr %v unmatched %v rule %q\nwant %d %v %v, rule containing %q", got, gc.ByAddr, gc.Unmatched, gc.Rule, c.want, c.byAddr, c.unmatched, c.rule)
			}
		})
	}
}
