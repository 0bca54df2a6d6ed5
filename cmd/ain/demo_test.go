package main

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ain-hpc/ain/pkg/sandbox"
)

// TestDemoFlow runs the README's first command, `ain demo`: the whole course flow on its own
// sandbox, end to end, so it cannot rot. It must pass every step and leave nothing running.
func TestDemoFlow(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end: starts a sandbox (run without -short)")
	}
	env := map[string]string{}
	for _, k := range []string{"HOME", "XDG_CACHE_HOME", "AIN_SANDBOX_CACHE", "PATH", "TMPDIR"} {
		env[k] = os.Getenv(k)
	}
	state := filepath.Join(t.TempDir(), "sandbox")
	results := t.TempDir()
	t0 := time.Now()
	out, errOut, code := run(t, env, "demo", "--state-dir", state, "--out", results)
	t.Logf("ain demo: exit %d in %s\n%s\n%s", code, time.Since(t0).Round(time.Second), out, errOut)
	if code != 0 {
		t.Fatalf("ain demo: exit %d, want 0", code)
	}
	// The fabric is detected first and the benches run on what was found: no line-rate mismatch
	// between the profile and the ports on a healthy sandbox.
	if strings.Contains(out+errOut, "LINE RATE MISMATCH") {
		t.Error("the demo's benches disagree with the sandbox's ports (LINE RATE MISMATCH)")
	}
	for _, want := range []string{"SIMULATED", "steps passed", "ain profile detect", "lineRate: 200Gb", "ain train qlora --gpu-metrics", "GPU-bound", "ain bench allreduce --algo all", "ain doctor topo --node gpu-node-1", "ain doctor gpu --node gpu-node-1,gpu-node-2,gpu-node-3", "ain preflight qlora --read-throughput 256M", "model read, /shared/models/Qwen2.5-7B-Instruct", "layout", "ain bench rdma", "COURSE 10.6.1", "3-node NCCL busbw", "TCP baseline (this run)", "ain chat test", "ain release --yes", "ain sandbox down"} {
		if !strings.Contains(out+errOut, want) {
			t.Errorf("the demo output lacks %q", want)
		}
	}
	if strings.Contains(errOut, "FAIL (exit") {
		t.Error("a step failed")
	}
	if _, err := sandbox.LoadState(state); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the demo must stop and remove its sandbox: %v", err)
	}
	if _, err := os.Stat(filepath.Join(results, "busbw.png")); err != nil {
		t.Errorf("no busbw plot: %v", err)
	}
}
