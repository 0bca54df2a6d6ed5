package realtest

import (
	"context"
	"os/exec"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ain-hpc/ain/pkg/sandbox"
	"github.com/ain-hpc/ain/pkg/sandbox/sandboxtest"
)

// nccltestsImage is ain's default nccl-tests image, one of the real-image table's rows.
const nccltestsImage = "ghcr.io/coreweave/nccl-tests:12.4.1-cudnn-devel-ubuntu22.04-nccl2.21.5-1-85f9143"

// TestIntegrationRealBadInputAndDelete: bad input never crashes the agent and a deleted pod
// leaves nothing behind. A command that is not found ends the pod Failed with a StartError
// (exit 128, runc's message); a process that exits at once ends it Failed with its code; a
// running pod's log is served while it runs; deleted mid-run it is stopped: its network namespace is gone; an image outside the
// table stays simulated. At the end the agent still runs. Checked to fail with real mode off (AIN_REALTEST_OFF=1: the
// simulated pods never fail).
func TestIntegrationRealBadInputAndDelete(t *testing.T) {
	sb := NeedReal(t)
	ns := sb.Namespace(t)
	cs := sb.Clientset(t)
	ctx := context.Background()
	pod := func(name string, cmd ...string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, Spec: corev1.PodSpec{
			RestartPolicy:                corev1.RestartPolicyNever,
			AutomountServiceAccountToken: new(bool),
			Containers:                   []corev1.Container{{Name: "c", Image: nccltestsImage, Command: cmd}},
		}}
	}
	for _, p := range []*corev1.Pod{pod("notfound", "/no/such/program"), pod("exits", "/bin/sh", "-c", "echo bye; exit 7"), pod("sleeps", "/bin/sh", "-c", "echo started at $(hostname); exec sleep 300")} {
		if _, err := cs.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	terminated := func(name string) *corev1.ContainerStateTerminated {
		var got *corev1.ContainerStateTerminated
		sandboxtest.Poll(60*time.Second, 200*time.Millisecond, func() bool {
			p, err := cs.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
			if err == nil && p.Status.Phase == corev1.PodFailed && len(p.Status.ContainerStatuses) > 0 {
				got = p.Status.ContainerStatuses[0].State.Terminated
			}
			return got != nil
		})
		if got == nil {
			t.Fatalf("pod %s never Failed\nagent:\n%s", name, sb.ComponentLog("agent", 30))
		}
		return got
	}
	if st := terminated("notfound"); st.ExitCode != 128 || st.Reason != "StartError" {
		t.Errorf("notfound: %+v, want StartError 128", st)
	}
	if st := terminated("exits"); st.ExitCode != 7 || st.Reason != "Error" {
		t.Errorf("exits: %+v, want Error 7", st)
	}
	if _, ok := sandboxtest.Poll(60*time.Second, 200*time.Millisecond, func() bool {
		p, err := cs.CoreV1().Pods(ns).Get(ctx, "sleeps", metav1.GetOptions{})
		if err != nil {
			return false
		}
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue {
				return true
			}
		}
		return false
	}); !ok {
		t.Fatalf("pod sleeps never Ready\nagent:\n%s", sb.ComponentLog("agent", 30))
	}
	m := regexp.MustCompile(ns + `/sleeps: running .* \(netns (ainpod-[0-9a-f]+)\)`).FindStringSubmatch(sb.ComponentLog("agent", 200))
	if m == nil {
		t.Fatalf("the agent did not say which netns sleeps runs in:\n%s", sb.ComponentLog("agent", 30))
	}
	if !netnsExists(m[1]) {
		t.Fatalf("netns %s of the running pod is not there", m[1])
	}
	// Its log is served while it runs.
	if _, ok := sandboxtest.Poll(10*time.Second, 300*time.Millisecond, func() bool {
		b, err := cs.CoreV1().Pods(ns).GetLogs("sleeps", &corev1.PodLogOptions{}).DoRaw(ctx)
		return err == nil && strings.Contains(string(b), "started at sleeps")
	}); !ok {
		t.Errorf("the running pod's log never showed its output")
	}
	if err := cs.CoreV1().Pods(ns).Delete(ctx, "sleeps", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, ok := sandboxtest.Poll(30*time.Second, 200*time.Millisecond, func() bool { return !netnsExists(m[1]) }); !ok {
		t.Errorf("netns %s still there after the pod was deleted", m[1])
	}
	// An image outside the table keeps the simulation: kwok's stages make it Ready, no process.
	sim := pod("simulated", "sleep", "300")
	sim.Spec.Containers[0].Image = "busybox:1.36"
	if _, err := cs.CoreV1().Pods(ns).Create(ctx, sim, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var simulated *corev1.Pod
	sandboxtest.Poll(60*time.Second, 200*time.Millisecond, func() bool {
		p, err := cs.CoreV1().Pods(ns).Get(ctx, "simulated", metav1.GetOptions{})
		if err != nil {
			return false
		}
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue {
				simulated = p
			}
		}
		return simulated != nil
	})
	if simulated == nil {
		t.Errorf("the busybox pod never became Ready (simulated)")
	} else if _, real := simulated.Annotations[sandbox.AnnoReal]; real {
		t.Errorf("the busybox pod, not in the image table, was run for real")
	}
	if p := sb.State.Proc("agent"); p == nil || syscall.Kill(p.PID, 0) != nil {
		t.Errorf("the agent is not running any more:\n%s", sb.ComponentLog("agent", 30))
	}
}

func netnsExists(name string) bool {
	out, _ := exec.Command("ip", "netns", "list").Output()
	for _, l := range strings.Split(string(out), "\n") {
		if strings.Fields(l + " x")[0] == name {
			return true
		}
	}
	return false
}
