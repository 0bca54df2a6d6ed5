package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/ain-hpc/ain/pkg/bench"
)

// TestBenchSurvivesAPIServerRestart restarts the API server while `ain bench allreduce` watches
// its MPIJob (launcher running): the informers re-list and resume, and the run ends with the
// variant's real outcome and a valid result, with no client-go log line on the terminal.
func TestBenchSurvivesAPIServerRestart(t *testing.T) {
	c := newCluster(t)
	prof := filepath.Join(t.TempDir(), "profile.yaml")
	if err := os.WriteFile(prof, []byte("apiVersion: ain.dev/v1alpha1\nkind: FabricProfile\nmetadata: {name: hdr}\nspec:\n  fabric: ib\n  lineRate: 200Gb\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "results")
	type result struct {
		out, errOut string
		code        int
	}
	done := make(chan result, 1)
	t0 := time.Now()
	go func() {
		o, e, code := c.ain(t, "bench", "allreduce", "--profile", prof, "--out", out, "--timeout", "4m")
		done <- result{o, e, code}
	}()
	deadline := time.Now().Add(120 * time.Second)
	restarted := false
	for !restarted {
		for _, p := range c.pods(t, "training.kubeflow.org/replica-type=launcher") {
			if p.Status.Phase == corev1.PodRunning || p.Status.Phase == corev1.PodPending && p.Spec.NodeName != "" {
				t.Logf("restarting the API server %s after the start, launcher %s %s", time.Since(t0).Round(100*time.Millisecond), p.Name, p.Status.Phase)
				restartAPIServer(t, c.sb.Dir)
				restarted = true
				break
			}
		}
		if !restarted && time.Now().After(deadline) {
			t.Fatal("no launcher within 120 s")
		}
		time.Sleep(200 * time.Millisecond)
	}
	r := <-done
	t.Logf("exit %d after %s\n%s\n%s", r.code, time.Since(t0).Round(100*time.Millisecond), r.out, r.errOut)
	if r.code != 0 || !strings.Contains(r.errOut, "Succeeded in") {
		t.Fatalf("after an API server restart bench must resume and report the variant's end: exit %d", r.code)
	}
	for _, bad := range []string{"reflector.go", "watch ended with error", "cannot reach the API server"} {
		if strings.Contains(r.errOut+r.out, bad) {
			t.Errorf("output must not show %q", bad)
		}
	}
	res, err := bench.Load(out)
	if err != nil {
		t.Fatal(err)
	}
	if !res.Valid || len(res.Variants) != 1 || res.Variants[0].Phase != "Succeeded" || len(res.Variants[0].Perf.Rows) == 0 {
		t.Errorf("result: valid %v variants %d problems %v", res.Valid, len(res.Variants), res.Problems)
	}
}
