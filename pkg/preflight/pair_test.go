package preflight

import "testing"

func TestNetworkAddress(t *testing.T) {
	for _, c := range []struct{ status, ip, net string }{
		// Multus lists the cluster network first ("default": true), then the attachments.
		{`[{"name":"k8s-pod-network","ips":["10.244.1.5"],"default":true},{"name":"default/rdma-net","interface":"net1","ips":["192.168.100.5"]}]`, "192.168.100.5", "default/rdma-net"},
		{`[{"name":"default/rdma-net","interface":"net1","ips":["fd00::5"]}]`, "fd00::5", "default/rdma-net"},
		{`[{"name":"k8s-pod-network","ips":["10.244.1.5"],"default":true}]`, "", ""},
		{`[{"name":"x","ips":["not-an-ip"]}]`, "", ""},
		{`not json`, "", ""},
		{``, "", ""},
	} {
		ip, n := NetworkAddress(c.status)
		if ip != c.ip || n != c.net {
			t.Errorf("%s: %q %q, want %q %q", c.status, ip, n, c.ip, c.net)
		}
	}
}
