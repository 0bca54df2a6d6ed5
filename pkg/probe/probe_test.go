package probe

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/fake"
)

// kubelet plays the scheduler and the kubelet on cs: each probe pod created in ns gets the
// status status(pod) gives it. It stops with ctx.
func kubelet(ctx context.Context, t *testing.T, cs *fake.Clientset, ns string, status func(*corev1.Pod) corev1.PodStatus) {
	t.Helper()
	w, err := cs.CoreV1().Pods(ns).Watch(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		defer w.Stop()
		for ev := range w.ResultChan() {
			p, ok := ev.Object.(*corev1.Pod)
			if !ok || ev.Type != watch.Added {
				continue
			}
			p = p.DeepCopy()
			p.Status = status(p)
			_, _ = cs.CoreV1().Pods(ns).UpdateStatus(ctx, p, metav1.UpdateOptions{})
		}
	}()
}

// exited is a probe container that ended with code and left message.
func exited(code int32, message string) corev1.PodStatus {
	ph := corev1.PodSucceeded
	if code != 0 {
		ph = corev1.PodFailed
	}
	return corev1.PodStatus{Phase: ph, ContainerStatuses: []corev1.ContainerStatus{{Name: Container,
		State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: code, Message: message}}}}}
}

// framed is a termination message as ResultCommand writes it.
func framed(body string) string { return resultBegin + "\n" + body + "\n" + resultEnd + "\n" }

// runOne runs one probe pod of spec against cs with the fake kubelet's status, and checks that
// no pod is left after the run.
func runOne(t *testing.T, ctx context.Context, timeout time.Duration, spec Spec, status func(*corev1.Pod) corev1.PodStatus) (*Outcome, *fake.Clientset) {
	t.Helper()
	cs := fake.NewClientset()
	serveDeleteCollection(cs, "ns", nil)
	kctx, stop := context.WithCancel(context.Background())
	defer stop()
	kubelet(kctx, t, cs, "ns", status)
	o := Options{Kube: cs, Namespace: "ns", Timeout: timeout}
	run := NewRun()
	spec.Name = "ain-test-" + run
	outs := Run(ctx, o, run, []*corev1.Pod{Pod(o, run, spec)})
	if len(outs) != 1 {
		t.Fatalf("%d outcomes for one pod", len(outs))
	}
	l, err := cs.CoreV1().Pods("ns").List(context.Background(), metav1.ListOptions{})
	if err != nil || len(l.Items) != 0 {
		t.Errorf("left after the run: %d pods (%v)", len(l.Items), err)
	}
	return outs[0], cs
}

// A probe that succeeds hands back its termination message's framed result, read without a
// log request, and no error.
func TestRunSucceeds(t *testing.T) {
	out, cs := runOne(t, context.Background(), time.Minute, Spec{Kind: "test", Node: "n1", Script: "echo hi", ResultMessage: true},
		func(*corev1.Pod) corev1.PodStatus { return exited(0, framed("port 1 ACTIVE")) })
	if err := out.Err(); err != nil || string(out.Log) != "port 1 ACTIVE\n" || !out.FromMessage || !out.Ended {
		t.Fatalf("log %q from message %v ended %v err %v", out.Log, out.FromMessage, out.Ended, err)
	}
	for _, a := range cs.Actions() {
		if a.GetSubresource() == "log" {
			t.Errorf("a log read for a result that came in the termination message: %v", a)
		}
	}
	if out.Pod.Spec.NodeName != "n1" || out.Pod.Labels[LabelProbe] != "test" || out.Pod.Spec.Containers[0].Image != DefaultImage {
		t.Errorf("pod %s on %q, labels %v, image %s", out.Pod.Name, out.Pod.Spec.NodeName, out.Pod.Labels, out.Pod.Spec.Containers[0].Image)
	}
}

// A probe pod the scheduler cannot place stays Pending until the timeout: the error is a
// *PendingError with the scheduler's reason, and NotRun says it too.
func TestRunPending(t *testing.T) {
	const why = "0/3 nodes are available: 3 Insufficient rdma/ib."
	out, _ := runOne(t, context.Background(), time.Second, Spec{Kind: "test", Script: "true", RDMA: true},
		func(p *corev1.Pod) corev1.PodStatus {
			return corev1.PodStatus{Phase: corev1.PodPending, Conditions: []corev1.PodCondition{{
				Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable, Message: why}}}
		})
	var pe *PendingError
	if err := out.Err(); !errors.As(err, &pe) || pe.Reason != corev1.PodReasonUnschedulable || pe.Message != why {
		t.Fatalf("err %#v, want a *PendingError with the scheduler's reason", err)
	}
	if out.Log != nil || !strings.Contains(out.NotRun(), "PodScheduled: "+why) {
		t.Errorf("log %q, not run %q", out.Log, out.NotRun())
	}
}

// A probe whose script exits non-zero is a *ScriptError with its exit code and output; one
// whose image cannot be pulled an *ImagePullError.
func TestRunContainerFails(t *testing.T) {
	out, _ := runOne(t, context.Background(), time.Minute, Spec{Kind: "test", Script: "exit 3", ResultMessage: true},
		func(*corev1.Pod) corev1.PodStatus { return exited(3, framed("no such device")) })
	var se *ScriptError
	if err := out.Err(); !errors.As(err, &se) || se.ExitCode != 3 || string(se.Output) != "no such device\n" {
		t.Fatalf("err %#v, want a *ScriptError with exit code 3 and the output", err)
	}
	out, _ = runOne(t, context.Background(), time.Second, Spec{Kind: "test", Script: "true"},
		func(*corev1.Pod) corev1.PodStatus {
			return corev1.PodStatus{Phase: corev1.PodPending, ContainerStatuses: []corev1.ContainerStatus{{Name: Container,
				State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ImagePullBackOff", Message: "busybox:nope: not found"}}}}}
		})
	var ie *ImagePullError
	if err := out.Err(); !errors.As(err, &ie) || ie.Reason != "ImagePullBackOff" || ie.Image != DefaultImage {
		t.Fatalf("err %#v, want an *ImagePullError", err)
	}
}

// Cancelling the context (Ctrl-C) while the probe runs ends the run at once, and its pods are
// deleted all the same (runOne checks none is left).
func TestRunCancelCleansUp(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	start := time.Now()
	out, cs := runOne(t, ctx, time.Minute, Spec{Kind: "test", Script: "sleep 600"},
		func(*corev1.Pod) corev1.PodStatus {
			defer cancel()
			return corev1.PodStatus{Phase: corev1.PodRunning}
		})
	if d := time.Since(start); d > 30*time.Second {
		t.Errorf("the run took %s after its context was cancelled", d)
	}
	if !out.Created || out.Ended {
		t.Errorf("created %v ended %v", out.Created, out.Ended)
	}
	deleted := false
	for _, a := range cs.Actions() {
		deleted = deleted || a.GetVerb() == "delete-collection"
	}
	if !deleted {
		t.Error("no DeleteCollection after the cancel")
	}
}

// Probe pods pass the restricted standard: non-root, no capabilities, no privilege escalation,
// RuntimeDefault seccomp; an RDMA spec requests the RDMA resource and joins the networks.
func TestPodRestrictedAndRDMA(t *testing.T) {
	o := Options{Namespace: "team-a", RDMA: RDMA{Resource: "rdma/ib", Networks: []string{"ml/rail0"}}}
	p := Pod(o, "r1", Spec{Kind: "ib-ports", Name: "ain-ibprobe-r1-0", Node: "gpu-node-1", Script: "true", RDMA: true})
	ps := p.Spec.SecurityContext
	if ps == nil || ps.RunAsNonRoot == nil || !*ps.RunAsNonRoot || ps.RunAsUser == nil || *ps.RunAsUser == 0 ||
		ps.SeccompProfile == nil || ps.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
		t.Fatalf("pod securityContext %+v", ps)
	}
	c := p.Spec.Containers[0].SecurityContext
	if c == nil || c.AllowPrivilegeEscalation == nil || *c.AllowPrivilegeEscalation || c.Capabilities == nil ||
		len(c.Capabilities.Drop) != 1 || c.Capabilities.Drop[0] != "ALL" || len(c.Capabilities.Add) != 0 {
		t.Fatalf("container securityContext %+v", c)
	}
	if _, ok := p.Spec.Containers[0].Resources.Limits["rdma/ib"]; !ok || p.Annotations["k8s.v1.cni.cncf.io/networks"] != "ml/rail0" {
		t.Errorf("limits %v, annotations %v", p.Spec.Containers[0].Resources.Limits, p.Annotations)
	}
}
