package main

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ain-hpc/ain/pkg/sandbox/sandboxtest"
)

// Issue 19, faults: control-plane components restarted under ain's watches. Each test stops the
// sandbox's real process by pid, keeps it down a few seconds, starts it again with the same
// command line (sandboxtest.Stop), and checks that ain resumes and reports the real end state,
// with no client-go log line on the terminal.

// noise is what must not reach the terminal during an outage.
var noise = []string{"reflector.go", "watch ended with error", "cannot reach the API server"}

// etcd restarted while `ain train` watches a running job: the API server loses its storage,
// its watches to etcd break and are re-established, ain's informers re-list; the job's end is
// reported as it happened.
func TestTrainSurvivesEtcdRestart(t *testing.T) {
	c := newCluster(t)
	var t0 time.Time
	r := trainThrough(t, c, "etcd-restart", func() {
		t0 = time.Now()
		start := sandboxtest.Stop(t, c.sb.Dir, "etcd")
		time.Sleep(3 * time.Second)
		start()
		// A quorum read (a Get is not served from the watch cache) answers again: storage is back.
		for {
			if _, err := c.cs.CoreV1().Namespaces().Get(context.Background(), c.ns, metav1.GetOptions{}); err == nil {
				break
			}
			if time.Since(t0) > 60*time.Second {
				t.Fatal("the API server does not read from etcd 60 s after its restart")
			}
			time.Sleep(100 * time.Millisecond)
		}
		t.Logf("etcd down and back: storage answers %s after the stop", time.Since(t0).Round(100*time.Millisecond))
	})
	t.Logf("ain ended %s after the stop", time.Since(t0).Round(100*time.Millisecond))
	if r.code != 0 || !strings.Contains(r.out, "etcd-restart Succeeded") {
		t.Errorf("after an etcd restart ain must resume and report the end state: exit %d", r.code)
	}
}

type trainResult struct {
	out, errOut string
	code        int
}

// trainThrough runs `ain train qlora --name NAME` on a long simulated job (about 60 s), calls
// fault once its three ranks run, and returns how ain ended, checking that no client-go log line
// reached the terminal.
func trainThrough(t *testing.T, c *cluster, name string, fault func()) trainResult {
	t.Helper()
	done := make(chan trainResult, 1)
	go func() {
		o, e, code := c.ain(t, "train", "qlora", "--name", name, "--set", "metadata.labels.ain-sim=long", "--timeout", "4m")
		done <- trainResult{o, e, code}
	}()
	if _, ok := sandboxtest.Poll(90*time.Second, 500*time.Millisecond, func() bool {
		running := 0
		for _, p := range c.pods(t, "training.kubeflow.org/job-name="+name) {
			if p.Status.Phase == corev1.PodRunning {
				running++
			}
		}
		return running == 3
	}); !ok {
		t.Fatal("the job's pods did not start")
	}
	fault()
	r := <-done
	t.Logf("exit %d\n%s\n%s", r.code, r.out, r.errOut)
	for _, bad := range noise {
		if strings.Contains(r.out+r.errOut, bad) {
			t.Errorf("output must not show %q", bad)
		}
	}
	return r
}

// The API server restarted during `ain serve`'s rolling update of a running model server: ain's
// watch of the Deployments resumes and the rollout ends with both replicas on the new spec.
func TestServeRolloutSurvivesAPIServerRestart(t *testing.T) {
	c := newCluster(t)
	if _, errOut, code := c.ain(t, "serve", "vllm", "--name", "rr", "--replicas", "2", "--no-wait"); code != 0 {
		t.Fatalf("serve rr: exit %d\n%s", code, errOut)
	}
	// --no-wait: the rolling update still waits for each changed replica before the next (the part
	// under test); only the wait for the endpoint afterwards is left out (it needs an ingress
	// address this sandbox does not publish).
	p := c.start(t, "serve", "vllm", "--name", "rr", "--replicas", "2", "--model", "/shared/models/other", "--timeout", "3m", "--no-wait")
	if !p.waitLine("rolling replica", time.Minute) {
		t.Fatalf("no rolling update:\n%s", p.errText())
	}
	t0 := time.Now()
	restartAPIServer(t, c.sb.Dir)
	select {
	case <-p.done:
		t.Logf("note: ain ended %s into the restart", time.Since(t0).Round(100*time.Millisecond))
	default:
	}
	code, stderr := p.wait(t, 3*time.Minute)
	t.Logf("exit %d, %s after the restart began\n%s", code, time.Since(t0).Round(100*time.Millisecond), stderr)
	if code != 0 || !strings.Contains(stderr, "replica rr-0 ready again; next replica") || !strings.Contains(stderr, "applied Deployment "+c.ns+"/rr-1") {
		t.Errorf("after an API server restart mid-rollout serve must finish it: exit %d", code)
	}
	if !strings.Contains(stderr, "the API server does not answer") {
		t.Errorf("the outage fell outside the rollout's wait: the test proves nothing")
	}
	for _, bad := range noise {
		if strings.Contains(stderr, bad) {
			t.Errorf("output must not show %q", bad)
		}
	}
	specs := map[string]int{}
	for _, name := range []string{"rr-0", "rr-1"} {
		var d *appsv1.Deployment
		for t1 := time.Now(); ; time.Sleep(500 * time.Millisecond) {
			var err error
			if d, err = c.cs.AppsV1().Deployments(c.ns).Get(context.Background(), name, metav1.GetOptions{}); err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			if d.Status.ObservedGeneration >= d.Generation && d.Status.UpdatedReplicas == 1 && d.Status.AvailableReplicas == 1 || time.Since(t1) > 60*time.Second {
				break
			}
		}
		ctr := d.Spec.Template.Spec.Containers[0]
		spec := fmt.Sprint(ctr.Command, ctr.Args, ctr.Env)
		if !strings.Contains(spec, "/shared/models/other") {
			t.Errorf("%s is not on the new model after the rollout: %s", name, spec)
		}
		if d.Status.UpdatedReplicas != 1 || d.Status.AvailableReplicas != 1 {
			t.Errorf("%s: updated %d, available %d", name, d.Status.UpdatedReplicas, d.Status.AvailableReplicas)
		}
		specs[spec]++
	}
	if len(specs) != 1 {
		t.Errorf("the replicas have %d distinct specs after the rollout, want 1", len(specs))
	}
}
