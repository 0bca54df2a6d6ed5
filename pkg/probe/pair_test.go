package probe

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

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

func archNode(name, arch string) *corev1.Node {
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{corev1.LabelArchStable: arch}}}
}

// TestRunPairRefusesOtherArch: a pair whose client node is arm64 while the image is ain's
// amd64-only nccl-tests build ends before any pod is created, naming the node, its label and
// both ways out; with an image ain knows nothing of, the check does not stand in the way.
func TestRunPairRefusesOtherArch(t *testing.T) {
	cs := fake.NewClientset(archNode("h100-1", "amd64"), archNode("gh200-1", "arm64"))
	creates := 0
	cs.PrependReactor("create", "pods", func(k8stesting.Action) (bool, runtime.Object, error) { creates++; return false, nil, nil })
	o := Options{Kube: cs, Namespace: "default", Timeout: time.Second}
	spec := PairSpec{Kind: "perftest", Server: "h100-1", Client: "gh200-1",
		Image:        "ghcr.io/coreweave/nccl-tests:12.4.1-cudnn-devel-ubuntu22.04-nccl2.21.5-1-85f9143",
		ServerScript: "true", ClientScript: func(string) string { return "true" }}
	res := RunPair(context.Background(), o, spec)
	if res.Err == nil || !strings.Contains(res.Err.Error(), "node gh200-1 is kubernetes.io/arch=arm64") || !strings.Contains(res.Err.Error(), "--nodes") || creates != 0 {
		t.Fatalf("err %v, %d pods created", res.Err, creates)
	}
	spec.Image = "registry.example.com/perftest:24.10"
	if err := checkPairArches(context.Background(), Options{Kube: cs, Image: spec.Image}, spec); err != nil {
		t.Errorf("unknown image: %v", err)
	}
}
