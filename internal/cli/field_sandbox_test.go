package cli

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ain-hpc/ain/pkg/bench"
	"github.com/ain-hpc/ain/pkg/preflight"
	"github.com/ain-hpc/ain/pkg/sandbox/sandboxtest"
)

// Field review (issue 14), on the real API server of the sandbox.

// Defect 8: with the built-in profile (lineRate 400Gb) on the sandbox's 200 Gb/s ports, the
// bench judges busbw against the probed rate, says loudly that the profile disagrees, and calls
// the fabric healthy (it said "47% ... suspect the fabric").
func TestFieldSandboxBenchProbedLineRate(t *testing.T) {
	sb := sandboxtest.Get(t)
	ns := sb.Namespace(t)
	out := filepath.Join(t.TempDir(), "results")
	code, stdout, stderr := runBenchCLI(t, "bench", "allreduce", "--out", out, "--timeout", "4m", "--kubeconfig", sb.Kubeconfig, "-n", ns)
	if code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	if !strings.Contains(stderr, "probing the ports of ") {
		t.Errorf("stderr lacks the port probe:\n%s", stderr)
	}
	for _, want := range []string{"LINE RATE MISMATCH: the profile's lineRate is 400Gb but the ports on the benchmark's nodes run at 200 Gb/s",
		"94% of line rate at 1 GiB", "the fabric is healthy"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("stdout lacks %q:\n%s", want, stdout)
		}
	}
	if strings.Contains(stdout, "suspect the fabric") {
		t.Errorf("wrong verdict:\n%s", stdout)
	}
	res, err := bench.Load(out)
	if err != nil {
		t.Fatal(err)
	}
	if res.LineRateSource != "probe" || res.ProfileLineRate != "400Gb" || res.LineRateGBps != 25 {
		t.Errorf("result: source %q profile %q rate %v", res.LineRateSource, res.ProfileLineRate, res.LineRateGBps)
	}
}

// Defect 5: the sandbox's API server enforces Pod Security Admission. In a namespace enforcing
// baseline an RDMA rank (IPC_LOCK) is rejected, and `ain preflight` FAILs naming the label to
// set; the probe pods, which pass restricted, still run there.
func TestFieldSandboxPodSecurity(t *testing.T) {
	sb := sandboxtest.Get(t)
	cs := sb.Clientset(t)
	ctx := context.Background()
	for _, level := range []string{"baseline", "restricted"} {
		t.Run(level, func(t *testing.T) {
			ns := sb.Namespace(t)
			n, err := cs.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			n.Labels[preflight.PSAEnforceLabel] = level
			if _, err := cs.CoreV1().Namespaces().Update(ctx, n, metav1.UpdateOptions{}); err != nil {
				t.Fatal(err)
			}
			// The real admission plugin, not ain, rejects the rank.
			rank := &corev1.Pod{
				ObjectMeta: metav1.ObjectMeta{Name: "rank", Namespace: ns},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "mpi", Image: "x",
					SecurityContext: &corev1.SecurityContext{Capabilities: &corev1.Capabilities{Add: []corev1.Capability{"IPC_LOCK"}}}}}},
			}
			_, err = cs.CoreV1().Pods(ns).Create(ctx, rank, metav1.CreateOptions{})
			if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "PodSecurity") {
				t.Fatalf("the API server admitted an IPC_LOCK pod under %s: %v (is the PodSecurity admission plugin on?)", level, err)
			}
			code, stdout, stderr := runBenchCLI(t, "preflight", "-o", "json", "--kubeconfig", sb.Kubeconfig, "-n", ns)
			if code == 0 {
				t.Fatalf("preflight passed in a namespace enforcing %s:\n%s\n%s", level, stdout, stderr)
			}
			// Not a terminal: the result is JSON on stdout.
			var res preflight.Result
			if err := json.NewDecoder(strings.NewReader(stdout)).Decode(&res); err != nil {
				t.Fatalf("preflight output: %v\n%s", err, stdout)
			}
			var psa, ib *preflight.Check
			for i, c := range res.Checks {
				switch c.Name {
				case preflight.CheckPodSecurity:
					psa = &res.Checks[i]
				case preflight.CheckIBPorts:
					ib = &res.Checks[i]
				}
			}
			if psa == nil || psa.Status != preflight.Fail || !strings.Contains(psa.Message, `enforces the "`+level+`" Pod Security standard`) ||
				!strings.Contains(psa.Fix, "kubectl label --overwrite namespace "+ns+" pod-security.kubernetes.io/enforce=privileged") ||
				!strings.Contains(strings.Join(psa.Evidence, "|"), "violates PodSecurity") {
				t.Errorf("pod-security check %+v", psa)
			}
			// The IB port probes were admitted (restricted securityContext) and ran.
			if ib == nil || ib.Status != preflight.Pass || !strings.Contains(ib.Message, "every IB/RoCE port ACTIVE") {
				t.Errorf("the IB port probe did not run under %s: %+v", level, ib)
			}
		})
	}
}

// Defect 4: in the roce-host-gids scenario gpu-node-2's RoCE GIDs belong to the host NIC only.
// The probe's own command runs over each node's simulated sysfs; preflight FAILs that node
// (NCCL's QP setup would fail with errno 19). (The package's sandbox simulates IB elsewhere, so
// only gpu-node-2's verdict is asserted.)
func TestFieldSandboxRoCEGIDOnPodInterface(t *testing.T) {
	sb := sandboxtest.Get(t)
	sb.UseScenario(t, "roce-host-gids")
	ns := sb.Namespace(t)
	code, stdout, stderr := runBenchCLI(t, "preflight", "-o", "json", "--fabric", "roce", "--kubeconfig", sb.Kubeconfig, "-n", ns)
	if code == 0 {
		t.Fatalf("preflight passed:\n%s\n%s", stdout, stderr)
	}
	var res preflight.Result
	if err := json.NewDecoder(strings.NewReader(stdout)).Decode(&res); err != nil {
		t.Fatalf("%v\n%s", err, stdout)
	}
	var failed bool
	disagree := 0
	for _, c := range res.Checks {
		if c.Name == preflight.CheckIBPorts && c.Status == preflight.Fail && c.Target == "gpu-node-2" {
			failed = strings.Contains(c.Message, "RoCE v2 GIDs only on netdevs outside the pod (mlx5_0:1 (ens1f0np0))") && strings.Contains(c.Message, "eth0, lo")
		}
		// The other nodes simulate InfiniBand: the roce profile and the ports disagree, said as such.
		if c.Name == preflight.CheckIBPorts && c.Status == preflight.Warn && strings.Contains(c.Message, "the profile's fabric is roce but the ports' link layer here is not Ethernet") {
			disagree++
		}
	}
	if disagree != 2 {
		t.Errorf("%d node(s) reported the fabric disagreement, want 2: %+v", disagree, res.Checks)
	}
	if !failed {
		t.Errorf("ib-ports checks: %+v", res.Checks)
	}
}

// The sandbox runs the GPU Operator's operand DaemonSets (driver, device plugin, dcgm-exporter)
// through its real DaemonSet controller, so the gpu-operator check sees a healthy operator:
// PASS on every GPU node, and no WARN about missing metrics.
func TestFieldSandboxGPUOperatorHealthy(t *testing.T) {
	sb := sandboxtest.Get(t)
	ns := sb.Namespace(t)
	var res preflight.Result
	var stdout, stderr string
	// The DaemonSet controller and kwok bring the operand pods up within seconds of the sandbox.
	for i := 0; ; i++ {
		var code int
		code, stdout, stderr = runBenchCLI(t, "preflight", "qlora", "-o", "json", "--kubeconfig", sb.Kubeconfig, "-n", ns)
		if err := json.NewDecoder(strings.NewReader(stdout)).Decode(&res); err != nil {
			t.Fatalf("exit %d: %v\n%s\n%s", code, err, stdout, stderr)
		}
		pass := false
		for _, c := range res.Checks {
			if c.Name == preflight.CheckGPUOperator {
				pass = c.Status == preflight.Pass
			}
		}
		if pass {
			return
		}
		if i == 30 {
			break
		}
		time.Sleep(time.Second)
	}
	t.Fatalf("the gpu-operator check does not pass on the sandbox:\n%s\n%s", stdout, stderr)
}
