package main

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/ain-hpc/ain/pkg/sandbox"
)

// nodeReady is the status of a node's Ready condition ("" when it has none).
func nodeReady(n *corev1.Node) corev1.ConditionStatus {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status
		}
	}
	return ""
}

// nodeTainted says whether the node lifecycle controller's NotReady/unreachable taints are on n.
func nodeTainted(n *corev1.Node) bool {
	for _, t := range n.Spec.Taints {
		if t.Key == corev1.TaintNodeNotReady || t.Key == corev1.TaintNodeUnreachable {
			return true
		}
	}
	return false
}

// setNodeDown adds (down) or removes sandbox.AnnoNodeDown on a node: with it, the sandbox's
// node-down kwok stage sets the node's conditions Unknown as the node lifecycle controller does
// for a kubelet that stopped posting status, and keeps them so; without it, kwok makes the node
// Ready again.
func setNodeDown(t *testing.T, c *cluster, name string, down bool) {
	t.Helper()
	v := `null`
	if down {
		v = `"true"`
	}
	patch := []byte(`{"metadata":{"annotations":{"` + sandbox.AnnoNodeDown + `":` + v + `}}}`)
	if _, err := c.cs.CoreV1().Nodes().Patch(context.Background(), name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Errorf("node %s: set %s=%v: %v", name, sandbox.AnnoNodeDown, down, err)
	}
}

// TestNodeNotReadyExplained: a worker's node stops reporting while the job runs. The node must
// stay NotReady (Unknown) for as long as it is marked down, past kwok's heartbeat delay (20-30 s,
// data/stages/node.yaml), which set it Ready again before the node-down stage existed; the watch
// view of `ain train` and `ain status` name the node, since when and why instead of showing a
// silent not-Ready pod; train reports the job's outcome as the API gives it (the PyTorchJob
// succeeds with its master, on another node); removing the mark makes the node Ready and
// schedulable again. Eviction (the unreachable taint's 300 s toleration) is not waited for.
func TestNodeNotReadyExplained(t *testing.T) {
	c := newCluster(t)
	const job = "nodedown"
	type result struct {
		out, errOut string
		code        int
	}
	done := make(chan result, 1)
	go func() {
		o, e, code := c.ain(t, "train", "qlora", "--name", job, "--set", "metadata.labels.ain-sim=long", "--timeout", "3m")
		done <- result{o, e, code}
	}()
	// A worker's node: the master's completion still ends the job (the training-operator's
	// PyTorchJob succeeds with its master), so the watch ends without waiting for the lost rank.
	var node, pod, masterNode string
	deadline := time.Now().Add(90 * time.Second)
	for node == "" {
		pods := c.pods(t, "training.kubeflow.org/job-name="+job)
		for _, p := range pods {
			if p.Labels["training.kubeflow.org/replica-type"] == "master" {
				masterNode = p.Spec.NodeName
			}
		}
		for _, p := range pods {
			// The scheduler may put two ranks on one node: take a worker away from the master.
			if p.Labels["training.kubeflow.org/replica-type"] == "worker" && p.Status.Phase == corev1.PodRunning &&
				p.Spec.NodeName != "" && masterNode != "" && p.Spec.NodeName != masterNode {
				node, pod = p.Spec.NodeName, p.Name
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no worker of the job ran on a node other than the master's (%q) within 90 s", masterNode)
		}
		if node == "" {
			time.Sleep(500 * time.Millisecond)
		}
	}
	nodes := c.cs.CoreV1().Nodes()
	t0 := time.Now()
	setNodeDown(t, c, node, true)
	restored := false
	defer func() {
		if !restored {
			setNodeDown(t, c, node, false)
		}
	}()

	// Watch the node from here on: once NotReady it must not be Ready again while marked down.
	type sample struct {
		at     time.Duration
		status corev1.ConditionStatus
		reason string
	}
	var downAt time.Duration
	var flips []sample
	var status, st corev1.ConditionStatus
	stopPoll := make(chan struct{})
	polled := make(chan struct{})
	go func() {
		defer close(polled)
		for {
			select {
			case <-stopPoll:
				return
			case <-time.After(250 * time.Millisecond):
			}
			n, err := nodes.Get(context.Background(), node, metav1.GetOptions{})
			if err != nil {
				continue
			}
			st = nodeReady(n)
			if st != status {
				reason := ""
				for _, cnd := range n.Status.Conditions {
					if cnd.Type == corev1.NodeReady {
						reason = cnd.Reason + ": " + cnd.Message
					}
				}
				flips = append(flips, sample{time.Since(t0), st, reason})
				if downAt == 0 && st == corev1.ConditionUnknown {
					downAt = time.Since(t0)
				}
				status = st
			}
		}
	}()

	want := "node " + node + " is NotReady since "
	var out string
	for {
		out, _, _ = c.ain(t, "status", job)
		if strings.Contains(out, want) {
			break
		}
		if time.Since(t0) > 45*time.Second {
			close(stopPoll)
			<-polled
			n, _ := nodes.Get(context.Background(), node, metav1.GetOptions{})
			t.Fatalf("ain status did not explain the NotReady node %s within 45 s (its Ready transitions: %+v; node now: %+v %+v):\n%s", node, flips, n.Status.Conditions, n.Spec.Taints, out)
		}
		time.Sleep(time.Second)
	}
	explainedAt := time.Since(t0)
	t.Logf("ain status explained it after %s:\n%s", explainedAt.Round(100*time.Millisecond), out)
	if !strings.Contains(out, "NodeStatusUnknown: Kubelet stopped posting node status.") || !strings.Contains(out, pod) {
		t.Errorf("ain status must give the node's reason on the pod's row %s:\n%s", pod, out)
	}
	r := <-done
	t.Logf("train exit %d\n%s\n%s", r.code, r.out, r.errOut)
	if !strings.Contains(r.out+r.errOut, want) {
		t.Errorf("the watch view of ain train must say %q", want)
	}
	if r.code != 0 || !strings.Contains(r.out, "PyTorchJob "+c.ns+"/"+job+" Succeeded") {
		t.Errorf("train must report the job's success (its master completed on %s): exit %d", masterNode, r.code)
	}
	// Hold the mark past kwok's longest heartbeat delay (30 s, stages/node.yaml) before judging it kept.
	if d := 35*time.Second - time.Since(t0); d > 0 {
		time.Sleep(d)
	}
	close(stopPoll)
	<-polled
	held := time.Since(t0)
	t.Logf("node %s Ready transitions after the mark: %+v", node, flips)
	if downAt == 0 {
		t.Fatalf("node %s never went NotReady (Unknown) in %s", node, held.Round(time.Second))
	}
	if status != corev1.ConditionUnknown || len(flips) != 1 {
		t.Errorf("node %s must go Unknown once and stay so while marked down (%s): %+v", node, held.Round(time.Second), flips)
	}
	t.Logf("NotReady %s after the mark, explained after %s, held %s", downAt.Round(100*time.Millisecond), explainedAt.Round(100*time.Millisecond), (held - downAt).Round(time.Second))

	// Hand it back: kwok's node-initialize makes it Ready, the node lifecycle controller lifts
	// its taints, and the node serves the package's later tests.
	tb := time.Now()
	setNodeDown(t, c, node, false)
	restored = true
	for {
		n, err := nodes.Get(context.Background(), node, metav1.GetOptions{})
		if err == nil && nodeReady(n) == corev1.ConditionTrue && !nodeTainted(n) {
			break
		}
		if time.Since(tb) > 60*time.Second {
			t.Fatalf("node %s not Ready and untainted within 60 s of removing the mark (%v)", node, err)
		}
		time.Sleep(500 * time.Millisecond)
	}
	t.Logf("node %s Ready and untainted %s after the mark was removed", node, time.Since(tb).Round(100*time.Millisecond))
	// Its long-lived pods (the GPU Operator's DaemonSet pods) were marked not Ready while it was
	// down; back up, they are Ready again, as a kubelet reports them (a later preflight found
	// them not Ready for good).
	for {
		pods, err := c.cs.CoreV1().Pods(sandbox.GPUOperatorNamespace).List(context.Background(), metav1.ListOptions{FieldSelector: "spec.nodeName=" + node})
		if err != nil {
			t.Fatal(err)
		}
		var unready []string
		for _, p := range pods.Items {
			for _, cond := range p.Status.Conditions {
				if cond.Type == corev1.PodReady && cond.Status != corev1.ConditionTrue {
					unready = append(unready, p.Name)
				}
			}
		}
		if len(pods.Items) > 0 && len(unready) == 0 {
			break
		}
		if time.Since(tb) > 90*time.Second {
			t.Fatalf("pods on %s not Ready again within 90 s of its return: %v (of %d)", node, unready, len(pods.Items))
		}
		time.Sleep(500 * time.Millisecond)
	}
}
