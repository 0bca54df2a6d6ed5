package sandbox_test

import (
	"context"
	"encoding/json"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ain-hpc/ain/pkg/jobs"
	"github.com/ain-hpc/ain/pkg/sandbox/sandboxtest"
)

// TestIntegrationGateAgainstKubelet137Status runs the launcher's worker gate for real, as a
// local process with the container's command, against the sandbox's API server, whose pods have
// statuses shaped like a 1.37 kubelet's (observedGeneration inside every condition). The gate
// ain renders sees the Ready workers; the gate from before the field review never does.
func TestIntegrationGateAgainstKubelet137Status(t *testing.T) {
	sb := sandboxtest.Get(t)
	ns := sb.Namespace(t)
	cs := sb.Clientset(t)
	ctx := context.Background()
	names := []string{"gated-worker-0", "gated-worker-1"}
	for _, n := range names {
		p := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: n, Namespace: ns},
			Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "mpi", Image: "nccl-tests", Command: []string{"sleep", "365d"}}}},
		}
		if _, err := cs.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	deadline := time.Now().Add(60 * time.Second)
	for _, n := range names {
		for {
			raw, err := cs.CoreV1().RESTClient().Get().AbsPath("/api/v1/namespaces", ns, "pods", n).DoRaw(ctx)
			if err == nil && strings.Contains(string(raw), `"type":"Ready","observedGeneration":1,"status":"True"`) {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s never Ready with a 1.37-shaped condition: %v %s", n, err, raw)
			}
			time.Sleep(250 * time.Millisecond)
		}
	}
	// The launcher's service-account files, from the sandbox's admin credentials.
	dir := t.TempDir()
	sa := filepath.Join(dir, "sa")
	_ = os.Mkdir(sa, 0o700)
	ca := sb.REST.CAData
	if len(ca) == 0 && sb.REST.CAFile != "" {
		ca, _ = os.ReadFile(sb.REST.CAFile)
	}
	if len(ca) == 0 || sb.REST.BearerToken == "" {
		t.Fatalf("sandbox credentials: CA %d bytes, token set %v", len(ca), sb.REST.BearerToken != "")
	}
	for f, v := range map[string][]byte{"ca.crt": ca, "token": []byte(sb.REST.BearerToken), "namespace": []byte(ns)} {
		if err := os.WriteFile(filepath.Join(sa, f), v, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	hf := filepath.Join(dir, "hostfile")
	_ = os.WriteFile(hf, []byte("gated-worker-0 slots=1\ngated-worker-1 slots=1\n"), 0o644)
	u, err := url.Parse(sb.REST.Host)
	if err != nil {
		t.Fatal(err)
	}
	run := func(script string) (int, string) {
		c, cancel := context.WithTimeout(ctx, 60*time.Second)
		defer cancel()
		cmd := exec.CommandContext(c, "/bin/sh", "-c", script)
		cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "KUBERNETES_SERVICE_HOST=" + u.Hostname(), "KUBERNETES_SERVICE_PORT=" + u.Port(),
			"AIN_GATE_SA_DIR=" + sa, "AIN_GATE_HOSTFILE=" + hf, jobs.GateTimeoutEnv + "=4"}
		out, err := cmd.CombinedOutput()
		if ee, ok := err.(*exec.ExitError); ok {
			return ee.ExitCode(), string(out)
		}
		if err != nil {
			t.Fatal(err)
		}
		return 0, string(out)
	}
	if code, out := run(jobs.GateScript); code != 0 || !strings.Contains(out, "all 2 worker(s) Ready") {
		t.Fatalf("ain's gate against the sandbox: exit %d\n%s", code, out)
	}
	old, err := os.ReadFile("../jobs/testdata/gate/pre-kep5067-gate.sh")
	if err != nil {
		t.Fatal(err)
	}
	oldScript := strings.NewReplacer("sa=/var/run/secrets/kubernetes.io/serviceaccount", `sa="$AIN_GATE_SA_DIR"`,
		"hf=/etc/mpi/hostfile", `hf="$AIN_GATE_HOSTFILE"`).Replace(string(old))
	if code, out := run(oldScript); code != 1 || !strings.Contains(out, "timed out after 4s") {
		t.Errorf("the pre-fix gate should time out on 1.37 statuses: exit %d\n%s", code, out)
	}
	// And the status really is what a 1.37 kubelet writes: observedGeneration on the pod status too.
	p, err := cs.CoreV1().Pods(ns).Get(ctx, names[0], metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(p.Status)
	if p.Status.ObservedGeneration != p.Generation || p.Generation == 0 {
		t.Errorf("status.observedGeneration %d, generation %d: %s", p.Status.ObservedGeneration, p.Generation, b)
	}
}
