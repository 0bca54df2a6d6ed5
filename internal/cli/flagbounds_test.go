package cli

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ain-hpc/ain/internal/ainerr"
)

// TestFlagBounds: every flag value issue 19 found accepted wrongly is refused before anything
// happens (no cluster is configured here, so a command that got past its flags would fail on
// the cluster instead), with exit 2 and an error naming the flag and the accepted range.
func TestFlagBounds(t *testing.T) {
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"train", "qlora", "--timeout", "-5s"}, "--timeout -5s: give a positive duration"},
		{[]string{"train", "qlora", "--timeout", "0s"}, "--timeout 0s: give a positive duration (e.g. 90s, 30m, 2h), or leave it out for the default (24h0m0s)"},
		// Leaving out a flag with a default means the default, not "no limit".
		{[]string{"doctor", "topo", "--node", "n1", "--timeout", "0s"}, "or leave it out for the default (2m0s)"},
		{[]string{"serve", "vllm", "--dry-run=client", "--timeout", "-1m"}, "--timeout -1m0s"},
		{[]string{"bench", "allreduce", "--timeout", "-5s"}, "--timeout -5s"},
		{[]string{"serve", "vllm", "--dry-run=client", "--replicas", "0"}, "--replicas 0: give a number from 1 to 1024"},
		{[]string{"serve", "vllm", "--dry-run=client", "--replicas", "1000000"}, "--replicas 1000000: give a number from 1 to 1024"},
		{[]string{"serve", "vllm", "--dry-run=client", "--replicas", "-3"}, "--replicas -3"},
		{[]string{"serve", "vllm", "--dry-run=client", "--replicas", "0"}, "or leave it out for the recipe's"},
		{[]string{"bench", "allreduce", "--nodes", "0"}, "--nodes 0: give a number from 1 to 4096, or leave it out for the recipe's"},
		// bench rdma has no recipe: leaving --qps out means its default, 1.
		{[]string{"bench", "rdma", "--qps", "-1"}, "--qps -1: give a number from 1 to 1024, or leave it out for the default (1)"},
		{[]string{"bench", "allreduce", "--nodes", "100000"}, "--nodes 100000"},
		{[]string{"bench", "allreduce", "--gpus-per-node", "0"}, "--gpus-per-node 0"},
		{[]string{"render", "qlora", "--set", "nodes=5000"}, "spec.nodes: must be at most 4096, got 5000"},
		{[]string{"render", "vllm", "--set", "replicas=1000000"}, "spec.replicas: must be at most 1024"},
		// An image the kubelet would refuse (InvalidImageName) is refused here, naming the flag.
		{[]string{"preflight", "--probe-image", "Busybox:1.36"}, `--probe-image "Busybox:1.36": invalid reference format: repository name (library/Busybox) must be lowercase`},
		{[]string{"profile", "detect", "--probe-image", "busybox:1.36:x"}, `--probe-image "busybox:1.36:x": invalid reference format: give an image reference`},
		{[]string{"bench", "rdma", "--image", "mellanox/cuda-perftest@sha256:abc"}, `--image "mellanox/cuda-perftest@sha256:abc": invalid reference format`},
		{[]string{"bench", "rdma", "--tcp-image", " "}, `--tcp-image " "`},
		{[]string{"doctor", "topo", "--node", "n1", "--image", "nvcr.io/nvidia/cuda:12.4.1-base-ubuntu22.04:x"}, `--image "nvcr.io/nvidia/cuda:12.4.1-base-ubuntu22.04:x": invalid reference format`},
		{[]string{"doctor", "counters", "--node", "n1", "--image", "Busybox:1.36"}, `--image "Busybox:1.36": invalid reference format`},
		{[]string{"train", "qlora", "-o", "xml"}, "-o xml"},
		{[]string{"list", "-o", "xml"}, "-o xml"},
		{[]string{"status", "x", "-o", "xml"}, "-o xml"},
	}
	for _, c := range cases {
		code, out, errb := runDoctorCLI(t, "", c.args...)
		if code != int(ainerr.Usage) || !strings.Contains(errb, c.want) {
			t.Errorf("%v: exit %d, want %d and %q in:\n%s%s", c.args, code, ainerr.Usage, c.want, out, errb)
		}
	}
	t.Logf("%d bad flag values refused", len(cases))
}

// TestSaveLogsCheckedFirst: an unusable --save-logs folder is refused before the cluster is even
// looked up (no cluster is configured here: a later check would fail on that instead).
func TestSaveLogsCheckedFirst(t *testing.T) {
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, errb := runDoctorCLI(t, "", "train", "qlora", "--save-logs", filepath.Join(file, "logs"))
	if code != int(ainerr.Usage) || !strings.Contains(errb, "--save-logs "+file) || strings.Contains(errb, "no cluster") {
		t.Fatalf("exit %d\n%s%s", code, out, errb)
	}
	ok := filepath.Join(t.TempDir(), "a", "b")
	code, _, errb = runDoctorCLI(t, "", "train", "qlora", "--save-logs", ok)
	if strings.Contains(errb, "--save-logs") {
		t.Fatalf("a writable folder refused: exit %d %s", code, errb)
	}
	if entries, err := os.ReadDir(ok); err != nil || len(entries) != 0 {
		t.Fatalf("the check left files behind: %v %v", entries, err)
	}
}

// imageReference takes what the kubelet pulls: tags, registries with ports, digests.
func TestImageReferenceAccepts(t *testing.T) {
	for _, s := range []string{"busybox", "busybox:1.36", "mellanox/cuda-perftest:latest", "registry.example.com:5000/tools/busybox:1.36",
		"busybox@sha256:" + strings.Repeat("ab", 32), "localhost/probe"} {
		if err := imageReference("probe-image")(nil, s); err != nil {
			t.Errorf("%s: %v", s, err)
		}
	}
}

// TestProbeImageEnvChecked: a $AIN_PROBE_IMAGE the kubelet would refuse is refused before a
// probe pod is made (exit 2, the variable named), as --probe-image is; commands that start no pod
// still run, and a valid one is taken.
func TestProbeImageEnvChecked(t *testing.T) {
	run := func(env string, args ...string) (int, string) {
		var out, errb bytes.Buffer
		a := &App{
			Streams: Streams{In: strings.NewReader(""), Out: &out, Err: &errb},
			Now:     time.Now,
			Getenv: func(k string) string {
				if k == "AIN_PROBE_IMAGE" {
					return env
				}
				return ""
			},
		}
		return a.Run(context.Background(), append([]string{"ain"}, args...)), out.String() + errb.String()
	}
	for _, args := range [][]string{{"preflight"}, {"profile", "detect"}, {"bench", "allreduce"}, {"train", "qlora"}} {
		code, out := run("Busybox:1.36", args...)
		if code != int(ainerr.Usage) || !strings.Contains(out, `$AIN_PROBE_IMAGE "Busybox:1.36": invalid reference format`) || !strings.Contains(out, "unset it for the default (busybox:1.36)") {
			t.Errorf("%v with a bad $AIN_PROBE_IMAGE: exit %d\n%s", args, code, out)
		}
	}
	if code, out := run("Busybox:1.36", "version"); code != 0 {
		t.Errorf("version refused for $AIN_PROBE_IMAGE: exit %d\n%s", code, out)
	}
	// A command that makes no pod, and help, are not refused for it.
	for _, args := range [][]string{{"render", "qlora", "-o", "yaml"}, {"preflight", "--help"}} {
		if code, out := run("Busybox:1.36", args...); code != 0 || strings.Contains(out, "AIN_PROBE_IMAGE \"") {
			t.Errorf("%v refused for $AIN_PROBE_IMAGE: exit %d\n%s", args, code, out)
		}
	}
	// A good one passes the check: preflight goes on to look for a cluster (none here).
	if code, out := run("registry.example.com/tools/busybox:1.36", "preflight"); strings.Contains(out, "AIN_PROBE_IMAGE") || code == int(ainerr.Usage) {
		t.Errorf("a valid $AIN_PROBE_IMAGE refused: exit %d\n%s", code, out)
	}
}

// TestSandboxCountsAndNamespaceRefused: --nodes 0 started the default 3 nodes and -n "BAD NS"
// was taken as given; both are usage errors naming the flag and what it takes, before
// anything runs (no sandbox, no cluster here).
func TestSandboxCountsAndNamespaceRefused(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"sandbox", "up", "--nodes", "0"}, "--nodes 0: give a number from 1 to 5000"},
		{[]string{"sandbox", "up", "--gpus-per-node", "0"}, "--gpus-per-node 0: give a number from 1 to 64"},
		{[]string{"sandbox", "up", "--rdma-count", "-1"}, "--rdma-count -1: give a number from 1 to 1024"},
		{[]string{"list", "-n", "BAD NS"}, `-n/--namespace "BAD NS" is not a namespace name`},
		{[]string{"render", "qlora", "--namespace", "Team_A"}, `-n/--namespace "Team_A" is not a namespace name`},
	} {
		code, out, errb := runDoctorCLI(t, "", c.args...)
		if code != 2 || !strings.Contains(errb, c.want) || out != "" {
			t.Errorf("ain %s: exit %d, want 2 and %q\nstdout: %s\nstderr: %s", strings.Join(c.args, " "), code, c.want, out, errb)
		}
	}
	if code, _, errb := runDoctorCLI(t, "", "render", "qlora", "-n", "team-a"); code != 0 {
		t.Errorf("render -n team-a: exit %d: %s", code, errb)
	}
}
