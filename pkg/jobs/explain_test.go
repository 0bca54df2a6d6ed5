package jobs

import (
	"context"
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

// A pod that goes not Ready before its node's condition says why gets no explanation at first;
// it is asked about again a little later (and the watch looks again then), and the answer kept.
func TestWatchExplainsAgainLater(t *testing.T) {
	asked := 0
	answer := ""
	w := &watcher{changed: make(chan struct{}, 1), explained: map[string]explanation{},
		o: WatchOptions{Explain: func(context.Context, *corev1.Pod) string { asked++; return answer }}}
	defer func() {
		if w.reexplain != nil {
			w.reexplain.Stop()
		}
	}()
	pods := []corev1.Pod{{ObjectMeta: metav1.ObjectMeta{Name: "w-1"}}}
	snap := func() *Snapshot {
		return &Snapshot{Pods: []PodInfo{{Name: "w-1", Node: "gpu-node-1", Phase: string(corev1.PodRunning)}}}
	}
	s := snap()
	w.explain(context.Background(), s, pods)
	if asked != 1 || s.Pods[0].Why != "" || w.reexplain == nil {
		t.Fatalf("first look: asked %d, why %q, look again armed %v", asked, s.Pods[0].Why, w.reexplain != nil)
	}
	w.explain(context.Background(), snap(), pods)
	if asked != 1 {
		t.Fatalf("asked again at once: %d", asked)
	}
	for k, e := range w.explained {
		e.at = e.at.Add(-explainAgain)
		w.explained[k] = e
	}
	answer = "node gpu-node-1 is NotReady since ..."
	s = snap()
	w.explain(context.Background(), s, pods)
	if asked != 2 || s.Pods[0].Why != answer {
		t.Fatalf("later look: asked %d, why %q", asked, s.Pods[0].Why)
	}
	w.explain(context.Background(), snap(), pods)
	if asked != 2 {
		t.Errorf("an answer was asked for again: %d", asked)
	}
}
