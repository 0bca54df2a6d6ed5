package cli

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ain-hpc/ain/pkg/counters"
	"github.com/ain-hpc/ain/pkg/probe"
	"github.com/ain-hpc/ain/pkg/sandbox/sandboxtest"
)

// TestDoctorCountersNodeSandbox takes live snapshots with probe pods (the sandbox's sysfs counters,
// which move only while a simulated collective runs): an idle interval is OK with zero bytes per
// port, the same interval against --expect-bytes is a problem (exit 5), and no probe pod is left.
func TestDoctorCountersNodeSandbox(t *testing.T) {
	sb := sandboxtest.Get(t)
	ns := sb.Namespace(t)
	code, stdout, stderr := runBenchCLI(t, "doctor", "counters", "--node", "gpu-node-1", "--interval", "1s", "-o", "json", "--kubeconfig", sb.Kubeconfig, "-n", ns)
	var r counters.Report
	if err := json.Unmarshal([]byte(stdout), &r); err != nil || code != 0 {
		t.Fatalf("exit %d, %v\nstdout:\n%s\nstderr:\n%s", code, err, stdout, stderr)
	}
	if !r.OK || len(r.Bytes) == 0 {
		t.Errorf("idle interval: ok %v, bytes %+v", r.OK, r.Bytes)
	}
	for port, b := range r.Bytes {
		if b.XmitBytes != 0 || b.RcvBytes != 0 || b.Unknown {
			t.Errorf("%s moved while idle: %+v", port, b)
		}
	}
	for _, want := range []string{"first snapshot of gpu-node-1", "second snapshot of gpu-node-1"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr)
		}
	}
	code, stdout, stderr = runBenchCLI(t, "doctor", "counters", "--node", "gpu-node-1", "--interval", "1s", "--expect-bytes", "1G", "--kubeconfig", sb.Kubeconfig, "-n", ns)
	if code != 5 || !strings.Contains(stdout, "PROBLEM") {
		t.Errorf("--expect-bytes 1G over an idle second: exit %d, want 5 and PROBLEM\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	pods, err := sb.Clientset(t).CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{LabelSelector: probe.LabelProbe})
	if err != nil || len(pods.Items) != 0 {
		t.Errorf("probe pods left behind: %d %v", len(pods.Items), err)
	}
}
