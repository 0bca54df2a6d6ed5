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

// markNodeNotReady keeps kwok's node stages off a node (sandbox.AnnoNodeDown: else its
// node-initialize stage sets Ready back to True at once; removing kwok's manage annotation is not
// enough, as tried: the node was Ready again within 20 s) and sets its Ready condition False, as
// a kubelet reporting a failure does; the node lifecycle controller then marks the node's pods
// not Ready. The returned func removes the annotation, and kwok makes the node Ready again.
func markNodeNotReady(t *testing.T, c *cluster, name string) (restore func()) {
	t.Helper()
	ctx := context.Background()
	nodes := c.cs.CoreV1().Nodes()
	patch := []byte(`{"metadata":{"annotations":{"` + sandbox.AnnoNodeDown + `":"true"}}}`)
	if _, err := nodes.Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	restore = func() {
		back := []byte(`{"metadata":{"annotations":{"` + sandbox.AnnoNodeDown + `":null}}}`)
		if _, err := nodes.Patch(context.Background(), name, types.MergePatchType, back, metav1.PatchOptions{}); err != nil {
			t.Errorf("give node %s back to kwok: %v", name, err)
		}
	}
	// kwok may be writing a heartbeat as the annotation goes: retry on conflicts.
	for i := 0; ; i++ {
		n, err := nodes.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			restore()
			t.Fatal(err)
		}
		now := metav1.Now()
		for j := range n.Status.Conditions {
			if n.Status.Conditions[j].Type == corev1.NodeReady {
				n.Status.Conditions[j] = corev1.NodeCondition{Type: corev1.NodeReady, Status: corev1.ConditionFalse,
					Reason: "KubeletNotReady", Message: "container runtime is down (test)", LastHeartbeatTime: now, LastTransitionTime: now}
			}
		}
		if _, err = nodes.UpdateStatus(ctx, n, metav1.UpdateOptions{}); err == nil {
			return restore
		}
		if i == 10 {
			restore()
			t.Fatal(err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// TestNodeNotReadyExplained: a node of a running job goes NotReady; the watch view of `ain train`
// and `ain status` name the node and say since when, instead of showing a silent not-Ready pod.
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
	var node, pod string
	deadline := time.Now().Add(90 * time.Second)
	for node == "" {
		for _, p := range c.pods(t, "training.kubeflow.org/job-name="+job) {
			if p.Labels["training.kubeflow.org/replica-type"] == "worker" && p.Status.Phase == corev1.PodRunning && p.Spec.NodeName != "" {
				node, pod = p.Spec.NodeName, p.Name
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatal("no worker of the job ran within 90 s")
		}
		time.Sleep(500 * time.Millisecond)
	}
	t0 := time.Now()
	restore := markNodeNotReady(t, c, node)
	defer restore()

	want := "node " + node + " is NotReady since "
	var status string
	for {
		status, _, _ = c.ain(t, "status", job)
		if strings.Contains(status, want) {
			break
		}
		if time.Since(t0) > 45*time.Second {
			t.Fatalf("ain status did not explain the NotReady node %s within 45 s:\n%s", node, status)
		}
		time.Sleep(time.Second)
	}
	t.Logf("ain status explained it after %s:\n%s", time.Since(t0).Round(100*time.Millisecond), status)
	if !strings.Contains(status, "KubeletNotReady: container runtime is down (test)") || !strings.Contains(status, pod) {
		t.Errorf("ain status must give the node's reason on the pod's row:\n%s", status)
	}
	r := <-done
	t.Logf("train exit %d\n%s\n%s", r.code, r.out, r.errOut)
	if !strings.Contains(r.out+r.errOut, want) {
		t.Errorf("the watch view of ain train must say %q", want)
	}
}
