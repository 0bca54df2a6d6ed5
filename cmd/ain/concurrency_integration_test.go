package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/ain-hpc/ain/internal/ainerr"
	"github.com/ain-hpc/ain/pkg/bench"
	"github.com/ain-hpc/ain/pkg/jobs"
)

// Issue 19, concurrency: two `ain train --name same` with different specs started together both
// said "applied" and the second spec silently replaced the first's. Now exactly one submits;
// the other fails naming the existing job and the ways out, and the job keeps the winner's spec.
// With the same spec, the second attaches to the first's job.
func TestConcurrentTrainSameName(t *testing.T) {
	c := newCluster(t)
	for round := range 3 {
		name := fmt.Sprintf("same-%d", round)
		specs := []string{"nodes=2", "nodes=3"}
		procs := make([]*proc, 2)
		for i, set := range specs {
			procs[i] = c.start(t, "train", "qlora", "--name", name, "--set", set, "--skip-preflight", "--no-wait")
		}
		won := -1
		for i, p := range procs {
			code, stderr := p.wait(t, time.Minute)
			switch code {
			case 0:
				if won >= 0 {
					t.Errorf("%s: both runs submitted (the second spec silently replaced the first's)", name)
				}
				won = i
			case 2:
				for _, want := range []string{"PyTorchJob " + c.ns + "/" + name + " already exists", "different spec", "--name " + name + "-2", "ain delete " + name + " -n " + c.ns} {
					if !strings.Contains(stderr, want) {
						t.Errorf("%s: the refused run does not say %q:\n%s", name, want, stderr)
					}
				}
			default:
				t.Errorf("%s: run %d (%s): exit %d\n%s", name, i, specs[i], code, stderr)
			}
		}
		if won < 0 {
			t.Fatalf("%s: neither run submitted", name)
		}
		job, err := c.sb.Dynamic(t).Resource(jobs.PyTorchJobGVR).Namespace(c.ns).Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		workers, _, _ := unstructured.NestedInt64(job.Object, "spec", "pytorchReplicaSpecs", "Worker", "replicas")
		if want := map[int]int64{0: 1, 1: 2}[won]; workers != want {
			t.Errorf("%s: the job has %d worker(s), but the run told it won asked for %s", name, workers, specs[won])
		}
		t.Logf("%s: run %d (%s) submitted, the other was refused; the job has %d worker(s)", name, won, specs[won], workers)
	}
	// The same spec twice at once: one submits, the other finds it already submitted.
	procs := []*proc{
		c.start(t, "train", "qlora", "--name", "twin", "--skip-preflight", "--no-wait"),
		c.start(t, "train", "qlora", "--name", "twin", "--skip-preflight", "--no-wait"),
	}
	said := 0
	for _, p := range procs {
		code, stderr := p.wait(t, time.Minute)
		if code != 0 {
			t.Errorf("same spec: exit %d\n%s", code, stderr)
		}
		if strings.Contains(stderr, "already submitted with this spec") {
			said++
		}
	}
	if said != 1 {
		t.Errorf("same spec twice: %d run(s) said it was already submitted, want 1", said)
	}
}

// Two `ain bench allreduce` started in the same second used the same job names: one job was
// reported as two results (one with an --iters it did not use). Each bench now has its own jobs.
// Whether their pods overlapped depends on timing; where a bench says another workload shared
// its nodes (issue 32), that workload is the other bench's workers, and nothing else makes it
// INVALID (TestBenchAllreduceSandboxSharedNodes covers the detection itself).
func TestConcurrentBench(t *testing.T) {
	c := newCluster(t)
	dirs := []string{filepath.Join(t.TempDir(), "a"), filepath.Join(t.TempDir(), "b")}
	procs := []*proc{
		c.start(t, "bench", "allreduce", "--algo", "ring", "--skip-preflight", "--out", dirs[0], "--timeout", "4m"),
		c.start(t, "bench", "allreduce", "--algo", "ring", "--skip-preflight", "--out", dirs[1], "--timeout", "4m", "--iters", "5"),
	}
	var names, problems []string
	for i, p := range procs {
		code, stderr := p.wait(t, 5*time.Minute)
		if code != 0 && code != int(ainerr.CheckFailed) {
			t.Errorf("bench %d: exit %d\n%s", i, code, stderr)
		}
		raw, err := os.ReadFile(filepath.Join(dirs[i], bench.ResultJSON))
		if err != nil {
			t.Fatal(err)
		}
		var res bench.Result
		if err := json.Unmarshal(raw, &res); err != nil {
			t.Fatal(err)
		}
		if len(res.Variants) != 1 || res.Variants[0].Perf == nil {
			t.Fatalf("bench %d: %d variant(s)", i, len(res.Variants))
		}
		if (code == 0) != res.Valid {
			t.Errorf("bench %d: exit %d but valid=%v", i, code, res.Valid)
		}
		names = append(names, res.Variants[0].Job)
		problems = append(problems, strings.Join(res.Variants[0].Problems, "; "))
	}
	if len(names) == 2 && names[0] == names[1] {
		t.Errorf("two benches at once shared MPIJob %s", names[0])
	}
	for i, p := range problems {
		if p != "" && (!strings.HasPrefix(p, bench.ProblemSharedNodes+": ") || !strings.Contains(p, names[1-i]+"-worker-")) {
			t.Errorf("bench %d (%s) is INVALID for another reason than %s sharing its nodes: %s", i, names[i], names[1-i], p)
		}
	}
	t.Logf("concurrent benches ran as %v; problems %q", names, problems)
}
