package jobs

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func node(name string, alloc map[string]string) corev1.Node {
	n := corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}, Status: corev1.NodeStatus{Allocatable: corev1.ResourceList{}}}
	for k, v := range alloc {
		n.Status.Allocatable[corev1.ResourceName(k)] = resource.MustParse(v)
	}
	return n
}

func gpuPod(rdma string) *corev1.Pod {
	req := corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("1"), "cpu": resource.MustParse("8")}
	if rdma != "" {
		req[corev1.ResourceName("rdma/rdma_shared_device_a")] = resource.MustParse(rdma)
	}
	return &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Resources: corev1.ResourceRequirements{Requests: req}}}}}
}

func TestExplainUnschedulableNoRDMAPlugin(t *testing.T) {
	nodes := []corev1.Node{
		node("gpu-node-1", map[string]string{"nvidia.com/gpu": "8", "rdma/rdma_shared_device_a": "63"}),
		node("gpu-node-2", map[string]string{"nvidia.com/gpu": "8"}),
		node("gpu-node-3", map[string]string{"nvidia.com/gpu": "8"}),
	}
	msg := "0/3 nodes are available: 1 Insufficient rdma/rdma_shared_device_a, 2 Insufficient rdma/rdma_shared_device_a. preemption: 0/3 nodes are available"
	got := ExplainUnschedulable(gpuPod("64"), msg, nodes)
	for _, want := range []string{"0/3 nodes have 64 free rdma/rdma_shared_device_a", "2 node(s) have 0 allocatable", "RDMA shared device plugin"} {
		if !strings.Contains(got, want) {
			t.Errorf("missing %q in %q", want, got)
		}
	}
	if strings.Contains(got, "nvidia.com/gpu") && strings.Contains(got, "0 allocatable: is the NVIDIA") {
		t.Errorf("GPUs are fine, must not be blamed: %s", got)
	}
}

func TestExplainUnschedulableTaint(t *testing.T) {
	nodes := []corev1.Node{node("n1", map[string]string{"nvidia.com/gpu": "8", "rdma/rdma_shared_device_a": "63"})}
	got := ExplainUnschedulable(gpuPod("1"), "0/1 nodes are available: 1 node(s) had untolerated taint {nvidia.com/gpu: }.", nodes)
	if !strings.Contains(got, "tolerations") {
		t.Errorf("taint not explained: %s", got)
	}
}

func TestExplainPod(t *testing.T) {
	cases := []struct {
		name string
		pod  corev1.Pod
		want string
	}{
		{"pull", corev1.Pod{Status: corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{{Image: "x:1",
			State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ImagePullBackOff", Message: "Back-off pulling image \"x:1\""}}}}}},
			"image pull failing for x:1"},
		{"crash", corev1.Pod{Status: corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{{RestartCount: 4,
			State:                corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}},
			LastTerminationState: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 1, Reason: "Error"}}}}}},
			"crash-looping (4 restarts): last exit code 1 (Error)"},
		{"oom", corev1.Pod{Status: corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{{
			State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 137, Reason: "OOMKilled"}}}}}},
			"OOMKilled"},
		{"unsched", corev1.Pod{Status: corev1.PodStatus{Conditions: []corev1.PodCondition{{Type: corev1.PodScheduled,
			Status: corev1.ConditionFalse, Reason: "Unschedulable", Message: "0/3 nodes are available"}}}},
			"unschedulable: 0/3 nodes are available"},
		{"fine", corev1.Pod{}, ""},
	}
	for _, c := range cases {
		got := ExplainPod(&c.pod)
		if (c.want == "" && got != "") || !strings.Contains(got, c.want) {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
}

func TestTail(t *testing.T) {
	tl := newTail(3)
	tl.Write([]byte("a\nb\nc"))
	tl.Write([]byte("d\ne\nf"))
	got := strings.Join(tl.lines(), ",")
	if got != "cd,e,f" {
		t.Errorf("tail: %s", got)
	}
}

func TestExplainMissingPVC(t *testing.T) {
	p := gpuPod("1")
	p.Namespace = "team"
	got := ExplainUnschedulable(p, `0/3 nodes are available: persistentvolumeclaim "nfs-shared" not found. not found`, nil)
	if !strings.Contains(got, `PersistentVolumeClaim "nfs-shared" does not exist in team`) {
		t.Errorf("missing PVC not explained: %s", got)
	}
}
