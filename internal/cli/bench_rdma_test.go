package cli

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

	"github.com/ain-hpc/ain/pkg/bench"
	"github.com/ain-hpc/ain/pkg/probe"
	"github.com/ain-hpc/ain/pkg/sandbox/sandboxtest"
)

// Bad flags are refused before any cluster is contacted, naming the flag.
func TestBenchRDMAFlags(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--nodes", "gpu-node-1"}, "--nodes \"gpu-node-1\": two node names"},
		{[]string{"--nodes", "n1,n1"}, "two different nodes"},
		{[]string{"--test", "ib_send_bw"}, "--test: perftest test \"ib_send_bw\""},
		{[]string{"--test", "ib_write_lat", "--qps", "4"}, "--qps: ib_write_lat measures one queue pair's latency"},
		{[]string{"--test", "ib_write_lat", "--gpu"}, "--gpu: ib_write_lat with GPU memory"},
		{[]string{"--iters", "5"}, "--iters: iterations 5"},
		{[]string{"--device", "mlx5_0:x"}, "--device \"mlx5_0:x\""},
		{[]string{"--size", "lots"}, "--size"},
		{[]string{"--fabric", "socket"}, "bench rdma measures RDMA, but the fabric is socket"},
		{[]string{"extra"}, "takes no arguments"},
		{[]string{"--tcp", "--tcp-streams", "0"}, "--tcp-streams"},
	} {
		code, _, stderr := runBenchCLI(t, append([]string{"bench", "rdma", "--kubeconfig", "/nonexistent"}, c.args...)...)
		if code != 2 || !strings.Contains(stderr, c.want) {
			t.Errorf("%v: exit %d, stderr %q, want 2 and %q", c.args, code, stderr, c.want)
		}
	}
}

// On the sandbox: perftest's server and client pods run on two nodes with the RDMA resource, the
// client's table (the agent's, consistent with the 200 Gb/s HDR ports) is judged against the
// probed port rate, not the built-in profile's 400Gb (said loudly), and both pods are gone after.
func TestBenchRDMASandbox(t *testing.T) {
	sb := sandboxtest.Get(t)
	ns := sb.Namespace(t)
	results := t.TempDir()
	code, stdout, stderr := runBenchCLI(t, "bench", "rdma", "--results", results, "--timeout", "3m", "--kubeconfig", sb.Kubeconfig, "-n", ns)
	if code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	for _, want := range []string{
		"ib_write_bw: gpu-node-1 (server) <- gpu-node-2 (client), device mlx5_0, 1 QP(s)",
		"line rate (profile)", "line rate (ports)", "gpu-node-1 mlx5_0:1 200 Gb/sec (4X HDR); gpu-node-2 mlx5_0:1 200 Gb/sec (4X HDR)",
		"two-node RDMA (this run)", "ib_write_bw best at 8 MiB", "193.92", "97.0%", "no allreduce result yet",
		"LINE RATE MISMATCH: the profile's lineRate is 400Gb but the ports run at 200 Gb/s",
		"PASS: ib_write_bw between gpu-node-1 and gpu-node-2 reached 193.92 Gb/s, 97.0% of the 200 Gb/s link (probe)",
	} {
		if !strings.Contains(stdout, want) {
			t.Errorf("stdout lacks %q:\n%s\nstderr:\n%s", want, stdout, stderr)
		}
	}
	// The default image's perftest links libcuda.so.1: its pods hold a GPU, and say why.
	if !strings.Contains(stderr, "is built with CUDA and needs the GPU driver: each pod requests one GPU") {
		t.Errorf("stderr lacks the GPU note:\n%s", stderr)
	}
	t.Logf("stdout:\n%s\nstderr:\n%s", stdout, stderr)
	pods, err := sb.Clientset(t).CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{LabelSelector: probe.LabelProbe})
	if err != nil || len(pods.Items) != 0 {
		t.Errorf("pods left behind: %d %v", len(pods.Items), err)
	}
	// -o json, ib_read_bw with 4 QPs and GPU memory on named nodes, with the TCP baseline.
	code, stdout, stderr = runBenchCLI(t, "bench", "rdma", "--nodes", "gpu-node-3,gpu-node-1", "--test", "ib_read_bw", "--qps", "4", "--gpu", "--tcp", "-o", "json",
		"--results", results, "--timeout", "3m", "--kubeconfig", sb.Kubeconfig, "-n", ns)
	var res bench.RDMAResult
	if err := json.Unmarshal([]byte(stdout), &res); err != nil || code != 0 {
		t.Fatalf("exit %d, %v\nstdout:\n%s\nstderr:\n%s", code, err, stdout, stderr)
	}
	if res.Server != "gpu-node-3" || res.Client != "gpu-node-1" || res.QPs != 4 || !res.GPUMemory || res.ExpectedGbps != 200 || res.ExpectedSource != "probe" ||
		res.RDMAGbps == nil || !res.OK || !strings.Contains(strings.Join(res.Command, " "), "--use_cuda=0") || res.NCCL != nil {
		t.Errorf("json result: %+v", res)
	}
	// The TCP baseline between the same nodes: 8 streams of iperf3 over the 200 Gb/s link.
	if res.TCP == nil || res.TCP.Gbps < 38.5 || res.TCP.Gbps > 38.7 || res.TCP.Streams != 8 || res.TCP.Retransmits == nil {
		t.Errorf("TCP baseline: %+v (note %q)", res.TCP, res.TCPNote)
	}
}

// A link that trained at half width on gpu-node-2: perftest measures what it carries, the probe
// shows its ends disagree, and the verdict is FAIL (exit 5) against the healthy end's rate.
func TestBenchRDMASandboxDegraded(t *testing.T) {
	sb := sandboxtest.Get(t)
	sb.UseScenario(t, "degraded-link")
	ns := sb.Namespace(t)
	code, stdout, stderr := runBenchCLI(t, "bench", "rdma", "--nodes", "gpu-node-1,gpu-node-2", "--results", t.TempDir(), "--timeout", "3m", "--kubeconfig", sb.Kubeconfig, "-n", ns)
	if code != 5 {
		t.Fatalf("exit %d, want 5\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	for _, want := range []string{
		"FAIL: DEGRADED LINK: gpu-node-2 mlx5_0:1: 100 Gb/sec (2X HDR), but the other end runs at 200 Gb/s",
		"two-node RDMA 96.98 Gb/s is 48.5% of the 200 Gb/s link",
	} {
		if !strings.Contains(stdout, want) {
			t.Errorf("stdout lacks %q:\n%s", want, stdout)
		}
	}
}

// Ctrl-C once the server pod exists: exit 130, and neither perftest pod is left behind.
func TestBenchRDMASandboxInterrupt(t *testing.T) {
	sb := sandboxtest.Get(t)
	ns := sb.Namespace(t)
	cs := sb.Clientset(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		w, err := cs.CoreV1().Pods(ns).Watch(ctx, metav1.ListOptions{LabelSelector: probe.LabelPairRole + "=" + probe.PairServer})
		if err != nil {
			return
		}
		defer w.Stop()
		for range w.ResultChan() {
			cancel() // the server pod was created
			return
		}
	}()
	var out, errb bytes.Buffer
	a := &App{Streams: Streams{In: strings.NewReader(""), Out: &out, Err: &errb}, Now: time.Now, Getenv: func(string) string { return "" }}
	code := a.Run(ctx, []string{"ain", "bench", "rdma", "--results", t.TempDir(), "--timeout", "3m", "--kubeconfig", sb.Kubeconfig, "-n", ns})
	if code != 130 {
		t.Fatalf("exit %d, want 130\nstdout:\n%s\nstderr:\n%s", code, out.String(), errb.String())
	}
	pods, err := cs.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{LabelSelector: probe.LabelProbe})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pods.Items {
		if p.DeletionTimestamp == nil {
			t.Errorf("pod %s left behind after Ctrl-C", p.Name)
		}
	}
}

// RoCE with gidIndex auto (roce-ports: the pods' net1 at 10.10.N.11, its RoCE v2 GID at index 3
// of mlx5_0): each perftest pod chooses its own -x in the pod, from its own address (the sandbox
// runs the pod's script over the node's simulated sysfs), and the result says which pod chose
// what; --gid-index fixes it instead, and says so.
func TestBenchRDMASandboxRoCE(t *testing.T) {
	sb := sandboxtest.Get(t)
	sb.UseScenario(t, "roce-ports")
	relabel(t, sb, "ain.dev/link-layer", "ethernet")
	ns := sb.Namespace(t)
	prof := filepath.Join(t.TempDir(), "profile.yaml")
	y := "apiVersion: ain.dev/v1alpha1\nkind: FabricProfile\nmetadata: {name: roce}\nspec:\n  fabric: roce\n  lineRate: 200Gb\n  gidIndex: auto\n  networks: [roce-rail0]\n"
	if err := os.WriteFile(prof, []byte(y), 0o644); err != nil {
		t.Fatal(err)
	}
	run := func(extra ...string) bench.RDMAResult {
		t.Helper()
		code, stdout, stderr := runBenchCLI(t, append([]string{"bench", "rdma", "--nodes", "gpu-node-1,gpu-node-2", "--profile", prof, "-o", "json",
			"--results", t.TempDir(), "--timeout", "3m", "--kubeconfig", sb.Kubeconfig, "-n", ns}, extra...)...)
		var res bench.RDMAResult
		if err := json.Unmarshal([]byte(stdout), &res); err != nil || code != 0 {
			t.Fatalf("exit %d, %v\nstdout:\n%s\nstderr:\n%s", code, err, stdout, stderr)
		}
		return res
	}
	res := run()
	cmd := strings.Join(res.Command, " ")
	if res.GIDIndex == nil || *res.GIDIndex != 3 || len(res.GIDChoices) != 2 || !strings.Contains(cmd, "-x 3") || strings.Contains(cmd, "$ain") || !res.OK ||
		!strings.Contains(res.GIDIndexSource, "index 3 chosen in client pod ain-perftest-client-") || !strings.Contains(res.GIDIndexSource, "from its address 10.10.2.11 (mlx5_0:1, net1)") ||
		!strings.Contains(res.GIDIndexSource, "index 3 chosen in server pod ain-perftest-server-") || !strings.Contains(res.GIDIndexSource, "from its address 10.10.1.11") {
		t.Errorf("GID chosen in the pods: index %v, source %q, choices %+v, command %q, ok %v, problems %v", res.GIDIndex, res.GIDIndexSource, res.GIDChoices, cmd, res.OK, res.Problems)
	}
	if c := res.GIDChoices; len(c) == 2 && (c[0].Role != "client" || c[0].Node != "gpu-node-2" || c[0].Address != "10.10.2.11" || c[1].Node != "gpu-node-1" || c[1].Address != "10.10.1.11") {
		t.Errorf("choices %+v", c)
	}
	if !strings.Contains(res.ClientLog, "ain-gid: index=3 device=mlx5_0 port=1 address=10.10.2.11 netdev=net1") {
		t.Errorf("client log:\n%s", res.ClientLog)
	}
	// Multus writes network-status before the pod runs (the sandbox's agent does the same), so the
	// server's address is the one on the RoCE network, never the pod IP it falls back to.
	if res.ServerIP != "10.10.1.11" || !strings.HasPrefix(res.IPSource, "Multus network ") {
		t.Errorf("server address %s (%s): want 10.10.1.11 from the Multus network-status", res.ServerIP, res.IPSource)
	}
	res = run("--gid-index", "5")
	if res.GIDIndex == nil || *res.GIDIndex != 5 || len(res.GIDChoices) != 0 || !strings.HasPrefix(res.GIDIndexSource, "--gid-index 5") || strings.Contains(res.ClientLog, "ain-gid") {
		t.Errorf("--gid-index 5: index %v, source %q, choices %+v", res.GIDIndex, res.GIDIndexSource, res.GIDChoices)
	}
}
