package realtest

import (
	"bytes"
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ain-hpc/ain/pkg/sandbox/sandboxtest"
)

// TestIntegrationRealPodLogGrowsAsWritten: a real pod's log, as the API server serves it (kwok
// reading the CRI file with k8s.io/cri-client's ReadLogs, a kubelet's reader), has each line
// while the process still runs, and a follower that started early reads every line exactly once:
// the file is appended to, never rewritten under a reader. A line longer than containerd's 16
// KiB record comes back whole (P records joined), and a last line without its newline is kept.
// Checked to fail with the file rewritten by rename each time (the follower reopens the new file
// and reads it from its start: every line twice).
func TestIntegrationRealPodLogGrowsAsWritten(t *testing.T) {
	sb := NeedReal(t)
	cs := sb.Clientset(t)
	ns := sb.Namespace(t)
	long := strings.Repeat("x", 40000)
	script := "echo first; sleep 6; printf 'part-'; sleep 1; echo one; head -c 40000 /dev/zero | tr '\\0' x; echo; sleep 2; printf 'no newline at the end'"
	if _, err := cs.CoreV1().Pods(ns).Create(context.Background(), realPod("logs", script), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitPod(t, cs, sb, ns, "logs", 60*time.Second, func(p *corev1.Pod) bool { return p.Status.Phase == corev1.PodRunning })

	// The first line, while the process sleeps (a log request before the agent has started the
	// process, and served its file, is an error).
	var early string
	if _, ok := sandboxtest.Poll(15*time.Second, 100*time.Millisecond, func() bool {
		b, err := cs.CoreV1().Pods(ns).GetLogs("logs", &corev1.PodLogOptions{}).DoRaw(context.Background())
		early = string(b)
		return err == nil && strings.Contains(early, "first\n")
	}); !ok {
		t.Fatalf("no first line while the pod runs: %q", early)
	}
	if strings.Contains(early, "one") {
		t.Fatalf("the log has the line written 6 s after the first already: %q", early)
	}

	// A follower from now on; kwok's follow never ends (its runtime stub says the container
	// runs), so it is stopped once the pod has ended and the log is complete.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	rc, err := cs.CoreV1().Pods(ns).GetLogs("logs", &corev1.PodLogOptions{Follow: true}).Stream(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var followed bytes.Buffer
	done := make(chan struct{})
	go func() {
		defer close(done)
		buf := make([]byte, 8<<10)
		for {
			n, err := rc.Read(buf)
			mu.Lock()
			followed.Write(buf[:n])
			mu.Unlock()
			if err != nil {
				return
			}
		}
	}()
	waitPod(t, cs, sb, ns, "logs", 60*time.Second, func(p *corev1.Pod) bool { return p.Status.Phase == corev1.PodSucceeded })

	want := "first\npart-one\n" + long + "\nno newline at the end\n"
	if got := podLog(t, cs, ns, "logs"); got != want {
		t.Errorf("the ended pod's log: %d bytes %q...%q, want %d bytes %q...%q", len(got), head(got), tail(got), len(want), head(want), tail(want))
	}
	var got string
	sandboxtest.Poll(10*time.Second, 100*time.Millisecond, func() bool {
		mu.Lock()
		defer mu.Unlock()
		got = followed.String()
		return len(got) >= len(want)
	})
	time.Sleep(500 * time.Millisecond) // anything more (a line twice) would come now
	cancel()
	_ = rc.Close()
	<-done
	mu.Lock()
	got = followed.String()
	mu.Unlock()
	if got != want {
		t.Errorf("the follower read %d bytes %q...%q, want %d bytes %q...%q", len(got), head(got), tail(got), len(want), head(want), tail(want))
	}
}

func head(s string) string { return s[:min(len(s), 40)] }
func tail(s string) string { return s[max(0, len(s)-40):] }
