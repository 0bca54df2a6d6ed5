package sandbox

import (
	"encoding/json"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestNetworkStatus: a pod asking for networks gets Multus' network-status, with the addresses
// the RoCE sample's GID tables carry; a pod asking for none gets none.
func TestNetworkStatus(t *testing.T) {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Annotations: map[string]string{annoNetworks: "roce-rail0, ml/roce-rail1@rdma1"}},
		Spec: corev1.PodSpec{NodeName: "gpu-node-2"}, Status: corev1.PodStatus{PodIP: "10.244.2.7"}}
	var got []struct {
		Name, Interface string
		IPs             []string
		Default         bool
	}
	if err := json.Unmarshal([]byte(networkStatus(pod)), &got); err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 || !got[0].Default || got[0].IPs[0] != "10.244.2.7" ||
		got[1].Name != "team/roce-rail0" || got[1].Interface != "net1" || got[1].IPs[0] != "10.10.2.11" ||
		got[2].Name != "ml/roce-rail1" || got[2].Interface != "rdma1" || got[2].IPs[0] != "10.10.2.12" {
		t.Errorf("%+v", got)
	}
	// Written before the pod has an IP (with the plan), then again once it has one; a
	// network-status someone else wrote is left alone.
	early := pod.DeepCopy()
	early.Status.PodIP = ""
	pod.Annotations[annoNetworkStatus] = networkStatus(early)
	if !ownNetworkStatus(pod) || strings.Contains(pod.Annotations[annoNetworkStatus], "10.244.2.7") {
		t.Errorf("the early network-status is the agent's own and has no pod IP: %s", pod.Annotations[annoNetworkStatus])
	}
	pod.Annotations[annoNetworkStatus] = `[{"name":"other","interface":"eth0","default":true}]`
	if ownNetworkStatus(pod) {
		t.Error("a network-status written by someone else would be overwritten")
	}
	pod.Annotations = nil
	if !ownNetworkStatus(pod) {
		t.Error("no network-status yet: the agent may write one")
	}
	if s := networkStatus(pod); s != "" {
		t.Errorf("no networks asked, got %s", s)
	}
}
