// Package preflight_test runs ain's preflight and the three typical failures of the course end
// to end through the command tree (in-process), against the local sandbox: a real API server,
// scheduler, controller-manager and training-operator, with simulated nodes and pod output.
// Each test switches the shared 3-node sandbox to its scenario.
package preflight_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ain-hpc/ain/internal/ainerr"
	"github.com/ain-hpc/ain/internal/cli"
	"github.com/ain-hpc/ain/pkg/preflight"
	"github.com/ain-hpc/ain/pkg/probe"
	"github.com/ain-hpc/ain/pkg/sandbox"
	"github.com/ain-hpc/ain/pkg/sandbox/sandboxtest"
)

func TestMain(m *testing.M) {
	sandboxtest.Main(m, sandbox.Config{Nodes: 3, Stack: sandbox.StackLegacy, NoGPUOperator: true})
}

// env is what the in-process ain sees as its environment.
type env map[string]string

func (e env) get(k string) string { return e[k] }

// ain runs the command tree in-process against the sandbox, in namespace ns.
func ain(t *testing.T, ctx context.Context, sb *sandboxtest.Sandbox, e env, ns string, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	a := &cli.App{Streams: cli.Streams{In: strings.NewReader(""), Out: &out, Err: &errb}, Now: time.Now, Getenv: e.get}
	full := append([]string{"ain", "--kubeconfig", sb.Kubeconfig, "-n", ns}, args...)
	code := a.Run(ctx, full)
	t.Logf("ain %s -> exit %d\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), code, out.String(), errb.String())
	return code, out.String(), errb.String()
}

func newEnv(t *testing.T) env {
	d := t.TempDir()
	return env{"HOME": d, "XDG_CACHE_HOME": filepath.Join(d, "cache"), "XDG_CONFIG_HOME": filepath.Join(d, "config")}
}

func decode(t *testing.T, out string) *preflight.Result {
	t.Helper()
	var r preflight.Result
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("preflight JSON: %v\n%s", err, out)
	}
	return &r
}

// useScenario switches the sandbox to name for this test; the switch updates nodes that kwok
// heartbeats concurrently, so a conflict is retried.
func useScenario(t *testing.T, sb *sandboxtest.Sandbox, name string) {
	t.Helper()
	set := func(n string) error {
		var err error
		for i := 0; i < 10; i++ {
			if err = sandbox.SetScenario(context.Background(), sb.Dir, n); err == nil {
				return nil
			}
			time.Sleep(300 * time.Millisecond)
		}
		return err
	}
	if err := set(name); err != nil {
		t.Fatalf("scenario %s: %v", name, err)
	}
	t.Cleanup(func() {
		if err := set(sandbox.DefaultScenario); err != nil {
			t.Errorf("restoring the default scenario: %v", err)
		}
	})
}

// namespace is a fresh namespace with the course's shared claim (the built-in recipes mount it).
func namespace(t *testing.T, sb *sandboxtest.Sandbox) string {
	ns := sb.Namespace(t)
	if err := sandbox.EnsureSharedPVC(context.Background(), sb.REST, ns, sandbox.DefaultSharedClaim); err != nil {
		t.Fatal(err)
	}
	return ns
}

// setup is every test's start: the shared sandbox on scenario, and a fresh namespace that has
// the shared claim.
func setup(t *testing.T, scenario string) (*sandboxtest.Sandbox, string) {
	t.Helper()
	sb := sandboxtest.Get(t)
	useScenario(t, sb, scenario)
	return sb, namespace(t, sb)
}

// noProbePods fails when a probe pod is left in ns.
func noProbePods(t *testing.T, sb *sandboxtest.Sandbox, ns string) {
	t.Helper()
	l, err := sb.Clientset(t).CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{LabelSelector: probe.LabelProbe})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range l.Items {
		t.Errorf("probe pod left behind: %s (%s)", p.Name, p.Status.Phase)
	}
}

func TestHealthyAllPassAndJobRuns(t *testing.T) {
	sb, ns := setup(t, "healthy")
	e := newEnv(t)
	code, out, _ := ain(t, context.Background(), sb, e, ns, "preflight", "allreduce", "-o", "json")
	if code != 0 {
		t.Fatalf("exit %d", code)
	}
	r := decode(t, out)
	names := map[string]bool{}
	for _, c := range r.Checks {
		names[c.Name] = true
		if c.Name == preflight.CheckGPUOperator && c.Status == preflight.Warn {
			continue // this package runs its sandbox without the operator's DaemonSets (NoGPUOperator): TestGPUOperator adds its pods
		}
		if c.Status != preflight.Pass {
			t.Errorf("not PASS: %+v", c)
		}
	}
	for _, n := range []string{preflight.CheckAPI, preflight.CheckRBAC, preflight.CheckCRDs, preflight.CheckNodes, preflight.CheckNetworks, preflight.CheckIBPorts} {
		if !names[n] {
			t.Errorf("no %s check", n)
		}
	}
	if r.Probed != 3 {
		t.Errorf("probed %d nodes", r.Probed)
	}
	noProbePods(t, sb, ns)
	// The result was cached for train/bench.
	if ents, _ := os.ReadDir(filepath.Join(e["XDG_CACHE_HOME"], "ain", "preflight")); len(ents) != 1 {
		t.Errorf("cache entries: %v", ents)
	}
	// And the MPIJob, with ain's worker gate, runs to Succeeded through the real operator.
	code, _, _ = ain(t, context.Background(), sb, e, ns, "train", "allreduce", "--timeout", "3m")
	if code != 0 {
		t.Errorf("train allreduce: exit %d", code)
	}
}

func TestIBPortInitFails(t *testing.T) {
	sb, ns := setup(t, "ib-port-init")
	code, out, _ := ain(t, context.Background(), sb, newEnv(t), ns, "preflight", "-o", "table")
	if code != int(ainerr.PreflightFailed) {
		t.Errorf("exit %d, want %d", code, ainerr.PreflightFailed)
	}
	for _, want := range []string{
		"FAIL ib-ports gpu-node-2: mlx5_0:1, mlx5_1:1: physical state LinkUp but state INIT",
		"evidence: /sys/class/infiniband/mlx5_0/ports/1/state:2: INIT",
		"evidence: /sys/class/infiniband/mlx5_0/ports/1/phys_state:5: LinkUp",
		"fix: no subnet manager: start opensm/UFM or enable the switch SM",
		"2 of 3 node(s): every IB/RoCE port ACTIVE",
		"(ib-ports gpu-node-2)",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q", want)
		}
	}
	noProbePods(t, sb, ns)
	// JSON: the same FAIL, machine-readable.
	_, out, _ = ain(t, context.Background(), sb, newEnv(t), ns, "preflight", "-o", "json")
	r := decode(t, out)
	found := false
	for _, c := range r.Checks {
		if c.Name == preflight.CheckIBPorts && c.Target == "gpu-node-2" && c.Status == preflight.Fail && c.Fix == preflight.NoSMFix {
			found = strings.Contains(strings.Join(c.Evidence, "\n"), "5: LinkUp") && strings.Contains(strings.Join(c.Evidence, "\n"), "2: INIT")
		}
	}
	if !found {
		t.Errorf("no FAIL for gpu-node-2 with LinkUp/INIT evidence: %+v", r.Checks)
	}
	noProbePods(t, sb, ns)
	// ain train runs the preflight first: failure 3 is caught before anything is submitted.
	e := newEnv(t)
	code, _, errOut := ain(t, context.Background(), sb, e, ns, "train", "qlora", "--set", "gpusPerNode=8", "--timeout", "3m")
	if code != int(ainerr.PreflightFailed) || !strings.Contains(errOut, "FAIL ib-ports gpu-node-2") || !strings.Contains(errOut, "--skip-preflight") {
		t.Errorf("train qlora: exit %d, want %d", code, ainerr.PreflightFailed)
	}
	noProbePods(t, sb, ns)
	// Submitted anyway, the rank on gpu-node-2 falls back to sockets (failure 2), and the doctor
	// names the port state as the cause (failure 3).
	if code, _, _ := ain(t, context.Background(), sb, e, ns, "train", "qlora", "--set", "gpusPerNode=8", "--skip-preflight", "--timeout", "3m"); code != 0 && code != int(ainerr.CheckFailed) {
		t.Errorf("train qlora: exit %d", code)
	}
	code, out, _ = ain(t, context.Background(), sb, e, ns, "doctor", "nccl-log", "qlora")
	if code != int(ainerr.CheckFailed) || !strings.Contains(out, "cause [FAIL] gpu-node-2") || !strings.Contains(out, "evidence: /sys/class/infiniband/mlx5_0/ports/1/state:2: INIT") {
		t.Errorf("doctor nccl-log qlora: exit %d", code)
	}
	noProbePods(t, sb, ns)
}

func TestNoRDMANode(t *testing.T) {
	sb, ns := setup(t, "no-rdma")
	// No recipe: two good nodes are enough, gpu-node-3 is a WARN; exit 0.
	code, out, _ := ain(t, context.Background(), sb, newEnv(t), ns, "preflight", "-o", "table")
	if code != 0 || !strings.Contains(out, "WARN nodes rdma: 1 node(s) without the RDMA resource") ||
		!strings.Contains(out, "evidence: gpu-node-3: rdma/rdma_shared_device_a allocatable 0 (needs 1)") {
		t.Errorf("exit %d", code)
	}
	// A 3-node recipe does not fit: FAIL, exit 4.
	code, out, _ = ain(t, context.Background(), sb, newEnv(t), ns, "preflight", "qlora", "-o", "table", "--no-probes")
	if code != int(ainerr.PreflightFailed) || !strings.Contains(out, "only 2 of 3 node(s)") || !strings.Contains(out, "the recipe needs 3") {
		t.Errorf("exit %d", code)
	}
	noProbePods(t, sb, ns)
}

func TestMultusCRDAbsent(t *testing.T) {
	sb, ns := setup(t, "healthy")
	prof := filepath.Join(t.TempDir(), "profile.yaml")
	if err := os.WriteFile(prof, []byte("apiVersion: ain.dev/v1alpha1\nkind: FabricProfile\nspec:\n  fabric: ib\n  networks: [rdma-net]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, _ := ain(t, context.Background(), sb, newEnv(t), ns, "preflight", "--profile", prof, "--no-probes", "-o", "table")
	if code != int(ainerr.PreflightFailed) || !strings.Contains(out, "NetworkAttachmentDefinition CRD (k8s.cni.cncf.io/v1) is not installed") || !strings.Contains(out, "fix: install Multus") {
		t.Errorf("exit %d", code)
	}
}

func TestProbePodsGoneOnCancel(t *testing.T) {
	sb, ns := setup(t, "healthy")
	ctx, cancel := context.WithCancel(context.Background())
	cs := sb.Clientset(t)
	go func() {
		// Ctrl-C as soon as the probe pods exist.
		for ctx.Err() == nil {
			l, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: probe.LabelProbe})
			if err == nil && len(l.Items) > 0 {
				cancel()
				return
			}
			time.Sleep(50 * time.Millisecond)
		}
	}()
	code, _, _ := ain(t, ctx, sb, newEnv(t), ns, "preflight", "-o", "json")
	cancel()
	if code != int(ainerr.Cancelled) {
		t.Errorf("exit %d, want %d", code, ainerr.Cancelled)
	}
	noProbePods(t, sb, ns)
}

func TestLateWorkersGate(t *testing.T) {
	sb, ns := setup(t, "late-workers")
	e := newEnv(t)
	// With ain's worker gate (the default) the launcher waits and the job succeeds.
	code, _, _ := ain(t, context.Background(), sb, e, ns, "train", "allreduce", "--set", "nodes=2", "--timeout", "3m")
	if code != 0 {
		t.Errorf("with the gate: exit %d", code)
	}
	// Without it (the lesson), the launcher fails and ain names failure 1 with its evidence.
	code, trainOut, _ := ain(t, context.Background(), sb, e, ns, "train", "allreduce", "--set", "nodes=2", "--set", "workerGate=false", "--name", "nogate", "--timeout", "3m")
	if code != int(ainerr.JobFailed) {
		t.Errorf("without the gate: exit %d, want %d", code, ainerr.JobFailed)
	}
	if !strings.Contains(trainOut, "launcher started before workers were ready") {
		t.Errorf("the train summary must name failure 1:\n%s", trainOut)
	}
	code, out, _ := ain(t, context.Background(), sb, e, ns, "doctor", "launcher", "nogate")
	if code != int(ainerr.CheckFailed) {
		t.Errorf("doctor launcher: exit %d", code)
	}
	for _, want := range []string{"PROBLEM: launcher-before-workers: launcher started before workers were ready", `unable to upgrade connection: container not found ("mpi")`, "ORTE was unable to reliably start", "fix: "} {
		if !strings.Contains(out, want) {
			t.Errorf("doctor output lacks %q", want)
		}
	}
}

func TestSocketFallback(t *testing.T) {
	sb, ns := setup(t, "socket-fallback")
	e := newEnv(t)
	code, out, _ := ain(t, context.Background(), sb, e, ns, "train", "qlora", "--set", "nodes=2", "--require-transport", "ib", "--timeout", "3m")
	if code != int(ainerr.CheckFailed) || !strings.Contains(out, "socket (TCP): the RDMA fabric was NOT used") {
		t.Errorf("train --require-transport ib: exit %d, want %d", code, ainerr.CheckFailed)
	}
	code, out, _ = ain(t, context.Background(), sb, e, ns, "doctor", "nccl-log", "qlora")
	if code != int(ainerr.CheckFailed) || !strings.HasPrefix(out, "PROBLEM: NCCL used TCP sockets") || !strings.Contains(out, "fix: ") || !strings.Contains(out, "qlora-master-0") {
		t.Errorf("doctor nccl-log qlora: exit %d", code)
	}
	code, out, _ = ain(t, context.Background(), sb, e, ns, "doctor", "nccl-log", "qlora", "-o", "json")
	var r map[string]any
	if err := json.Unmarshal([]byte(out), &r); err != nil || code != int(ainerr.CheckFailed) || r["transport"] != "socket" {
		t.Errorf("json: exit %d %v transport %v", code, err, r["transport"])
	}
}
