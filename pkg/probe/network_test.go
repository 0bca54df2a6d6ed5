package probe

import "testing"

// TestParseNetworkStatus: Multus' annotation as the SR-IOV CNI leaves it (device-info included)
// gives each network's interface and addresses; junk gives nothing.
func TestParseNetworkStatus(t *testing.T) {
	s := `[{"name":"cbr0","interface":"eth0","ips":["10.244.2.31"],"mac":"ee:7b:31:40:aa:12","default":true,"dns":{}},` +
		`{"name":"ml/sriov-rail0","interface":"net1","ips":["10.56.217.5","fd00:56:217::5"],"mac":"b8:ce:f6:1c:9d:02","dns":{},"device-info":{"type":"pci","version":"1.1.0","pci":{"pci-address":"0000:1a:00.2","rdma-device":"mlx5_12"}}}]`
	nets := ParseNetworkStatus(s)
	if len(nets) != 2 || !nets[0].Default || nets[1].Name != "ml/sriov-rail0" || nets[1].Interface != "net1" || len(nets[1].IPs) != 2 || nets[1].IPs[0] != "10.56.217.5" {
		t.Errorf("%+v", nets)
	}
	for _, bad := range []string{"", "  ", "{", `{"name":"x"}`} {
		if got := ParseNetworkStatus(bad); got != nil {
			t.Errorf("%q: %+v", bad, got)
		}
	}
}
