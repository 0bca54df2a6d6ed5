package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/ain-hpc/ain/pkg/jobs"
	"github.com/ain-hpc/ain/pkg/sandbox"
	"github.com/ain-hpc/ain/pkg/sandbox/sandboxtest"
)

// TestMain runs this package's integration tests against one shared 3-node sandbox: a real
// etcd, kube-apiserver, scheduler, controller-manager and training-operator, with kwok nodes.
// Run with AIN_TEST_RUN_MAIN=1, the test binary is ain itself (its main, signal handling
// included): the interrupt tests start it as a process and send it SIGINT.
func TestMain(m *testing.M) {
	if os.Getenv(runMainEnv) == "1" {
		os.Args = append([]string{"ain"}, os.Args[1:]...)
		if os.Getenv(mainReadyEnv) == "3" {
			// Tells the interrupt tests that start-up (runtime and package init) is over: their
			// delays count from here, so a slow machine does not move the signal before main.
			ready := os.NewFile(3, "ready")
			_, _ = ready.Write([]byte{1})
			_ = ready.Close()
			_ = os.Unsetenv(mainReadyEnv) // not for a process ain starts (its fd 3 is another file)
		}
		main()
		return
	}
	sandboxtest.Main(m, sandbox.Config{Nodes: 3, Stack: sandbox.StackLegacy})
}

type cluster struct {
	sb  *sandboxtest.Sandbox
	ns  string
	cs  kubernetes.Interface
	env map[string]string
}

func newCluster(t *testing.T) *cluster {
	sb := sandboxtest.Get(t)
	ns := sb.Namespace(t)
	// The built-in recipes mount the shared NFS claim; the sandbox makes it in "default" only.
	if err := sandbox.EnsureSharedPVC(context.Background(), sb.REST, ns, sandbox.DefaultSharedClaim); err != nil {
		t.Fatal(err)
	}
	return &cluster{sb: sb, ns: ns, cs: sb.Clientset(t), env: map[string]string{"HOME": t.TempDir()}}
}

// ain runs the command tree in-process against the sandbox, in the test's namespace.
func (c *cluster) ain(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	args = append(args, "--kubeconfig", c.sb.Kubeconfig, "-n", c.ns)
	return run(t, c.env, args...)
}

func (c *cluster) pods(t *testing.T, selector string) []corev1.Pod {
	t.Helper()
	l, err := c.cs.CoreV1().Pods(c.ns).List(context.Background(), metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		t.Fatal(err)
	}
	return l.Items
}

func TestTrainQLoRAEndToEnd(t *testing.T) {
	c := newCluster(t)
	t0 := time.Now()
	out, errOut, code := c.ain(t, "train", "qlora", "--timeout", "3m")
	t.Logf("ain train qlora: exit %d in %s\nstdout:\n%s\nstderr:\n%s", code, time.Since(t0).Round(time.Millisecond), out, errOut)
	if code != 0 {
		t.Fatalf("exit %d, want 0", code)
	}
	for _, want := range []string{"PyTorchJob " + c.ns + "/qlora Succeeded", "NCCL: every rank used ib", "master-0", "worker-0", "worker-1"} {
		if !strings.Contains(out, want) {
			t.Errorf("summary lacks %q", want)
		}
	}
	if !strings.Contains(errOut, "simulated") {
		t.Error("the sandbox must say once that workloads are simulated")
	}
	// The pods the real training-operator created: three, on three nodes, with RDMA and NCCL settings.
	pods := c.pods(t, "training.kubeflow.org/job-name=qlora")
	if len(pods) != 3 {
		t.Fatalf("want 3 pods, got %d", len(pods))
	}
	nodes := map[string]bool{}
	for _, p := range pods {
		nodes[p.Spec.NodeName] = true
		if !strings.Contains(out, p.Spec.NodeName) {
			t.Errorf("summary does not name node %s of %s", p.Spec.NodeName, p.Name)
		}
		ctr := p.Spec.Containers[0]
		if q := ctr.Resources.Limits["rdma/rdma_shared_device_a"]; q.Value() != 1 {
			t.Errorf("%s: RDMA limit %v", p.Name, ctr.Resources.Limits)
		}
		if q := ctr.Resources.Limits["nvidia.com/gpu"]; q.Value() != 1 {
			t.Errorf("%s: GPU limit %v", p.Name, ctr.Resources.Limits)
		}
		if ctr.SecurityContext == nil || len(ctr.SecurityContext.Capabilities.Add) == 0 || ctr.SecurityContext.Capabilities.Add[0] != "IPC_LOCK" {
			t.Errorf("%s: no IPC_LOCK", p.Name)
		}
		if p.Labels[jobs.LabelRun] != "qlora" {
			t.Errorf("%s: labels %v", p.Name, p.Labels)
		}
	}
	if len(nodes) != 3 {
		t.Errorf("3 ranks on %d distinct nodes (%v): each rank wants its own node's NIC", len(nodes), nodes)
	}

	// Re-running the same command is idempotent.
	_, errOut, code = c.ain(t, "train", "qlora", "--timeout", "1m")
	if code != 0 || !strings.Contains(errOut, "already submitted with this spec") {
		t.Errorf("second run: exit %d\n%s", code, errOut)
	}
	if got := len(c.pods(t, "training.kubeflow.org/job-name=qlora")); got != 3 {
		t.Errorf("second run duplicated pods: %d", got)
	}
	// Changing the spec of the existing job is refused with a way out.
	_, errOut, code = c.ain(t, "train", "qlora", "--set", "nodes=2")
	if code != 2 || !strings.Contains(errOut, "different spec") || !strings.Contains(errOut, "--name") {
		t.Errorf("changed spec: exit %d\n%s", code, errOut)
	}

	// list, status, logs.
	out, _, code = c.ain(t, "list", "-o", "json")
	var rows []map[string]any
	if code != 0 || json.Unmarshal([]byte(out), &rows) != nil || len(rows) != 1 || rows[0]["state"] != "Succeeded" || rows[0]["gpus"].(float64) != 3 {
		t.Errorf("list: exit %d %s", code, out)
	}
	out, _, code = c.ain(t, "status", "qlora", "-o", "json")
	var st struct {
		Job     jobs.Snapshot `json:"job"`
		Summary *jobs.Summary `json:"summary"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &st) != nil || st.Job.Phase != "Succeeded" || len(st.Job.Pods) != 3 || st.Summary == nil || st.Summary.Transport != "ib" {
		t.Errorf("status: exit %d %s", code, out)
	}
	out, _, code = c.ain(t, "logs", "qlora", "--all")
	if code != 0 || !strings.Contains(out, "[qlora-master-0] ") || !strings.Contains(out, "[qlora-worker-1] ") || !strings.Contains(out, "NCCL INFO") {
		t.Errorf("logs --all: exit %d\n%.2000s", code, out)
	}
	out, _, code = c.ain(t, "logs", "qlora", "--replica", "worker", "--index", "1")
	if code != 0 || strings.Contains(out, "[qlora-") || !strings.Contains(out, "NCCL") {
		t.Errorf("logs of one worker: exit %d\n%.500s", code, out)
	}

	// Following the log of a finished job ends by itself.
	followed := make(chan int, 1)
	go func() {
		_, _, code := c.ain(t, "logs", "qlora", "-f")
		followed <- code
	}()
	select {
	case code := <-followed:
		if code != 0 {
			t.Errorf("logs -f: exit %d", code)
		}
	case <-time.After(30 * time.Second):
		t.Error("logs -f of a finished job did not end")
	}

	// delete: nothing labelled with the run is left.
	_, errOut, code = c.ain(t, "delete", "qlora")
	if code != 2 || !strings.Contains(errOut, "--yes") {
		t.Errorf("delete without a TTY and without --yes must refuse: exit %d %s", code, errOut)
	}
	out, _, code = c.ain(t, "delete", "qlora", "--yes")
	if code != 0 || !strings.Contains(out, "PyTorchJob/qlora") {
		t.Errorf("delete: exit %d %s", code, out)
	}
	var left []corev1.Pod
	if _, ok := sandboxtest.Poll(30*time.Second, 500*time.Millisecond, func() bool {
		left = c.pods(t, jobs.LabelRun+"=qlora")
		return len(left) == 0
	}); !ok {
		t.Fatalf("%d pods of the run left after delete", len(left))
	}
	for _, gvr := range []string{"pytorchjobs"} {
		l, err := c.sb.Dynamic(t).Resource(jobs.PyTorchJobGVR).Namespace(c.ns).List(context.Background(), metav1.ListOptions{LabelSelector: jobs.LabelRun + "=qlora"})
		if err != nil || len(l.Items) != 0 {
			t.Errorf("%s left after delete: %v %v", gvr, err, l)
		}
	}
}

func TestTrainFailedJob(t *testing.T) {
	c := newCluster(t)
	out, errOut, code := c.ain(t, "train", "qlora", "--name", "exp-fail", "--set", "metadata.labels.ain-sim=fail", "--timeout", "2m")
	t.Logf("stdout:\n%s\nstderr:\n%s", out, errOut)
	if code != 3 {
		t.Fatalf("a failed job must exit 3, got %d", code)
	}
	if !strings.Contains(out, "Failed") || !strings.Contains(out, "failed; its last") || !strings.Contains(out, "  | ") {
		t.Errorf("the summary must show the failing replica's last lines")
	}
}

func TestTrainUnschedulableExplained(t *testing.T) {
	c := newCluster(t)
	// The preflight catches it before anything is submitted...
	_, errOut, code := c.ain(t, "train", "qlora", "--name", "too-big", "--set", "gpusPerNode=16", "--timeout", "15s")
	if code != 4 || !strings.Contains(errOut, "only 0 of 3 node(s)") {
		t.Errorf("the preflight must refuse a job no node can hold: exit %d\n%s", code, errOut)
	}
	// ...and when submitted anyway, Pending is explained in a sentence within seconds.
	t0 := time.Now()
	_, errOut, code = c.ain(t, "train", "qlora", "--name", "too-big", "--set", "gpusPerNode=16", "--timeout", "15s", "--skip-preflight")
	t.Logf("exit %d after %s\n%s", code, time.Since(t0).Round(time.Millisecond), errOut)
	if code != 6 {
		t.Errorf("--timeout must exit 6, got %d", code)
	}
	if !strings.Contains(errOut, "0/3 nodes have 16 free nvidia.com/gpu") {
		t.Errorf("Pending not explained in a sentence:\n%s", errOut)
	}
	if !strings.Contains(errOut, "keeps running") || !strings.Contains(errOut, "SKIPPED (--skip-preflight)") {
		t.Error("a timeout must say the job keeps running; a skipped preflight must be said")
	}
}

func TestUnauthorized(t *testing.T) {
	c := newCluster(t)
	cfg, err := clientcmd.LoadFromFile(c.sb.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	for _, ai := range cfg.AuthInfos {
		ai.Token, ai.ClientCertificateData, ai.ClientKeyData, ai.ClientCertificate, ai.ClientKey = "not-a-valid-token", nil, nil, "", ""
	}
	bad := filepath.Join(t.TempDir(), "bad-kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, bad); err != nil {
		t.Fatal(err)
	}
	_, errOut, code := run(t, c.env, "list", "--kubeconfig", bad, "-n", c.ns)
	if code != 8 {
		t.Errorf("bad token: exit %d, want 8\n%s", code, errOut)
	}
	if !strings.Contains(errOut, "hint:") || !strings.Contains(errOut, bad) {
		t.Errorf("the hint must name the kubeconfig used:\n%s", errOut)
	}
}

// restartAPIServer stops the sandbox's kube-apiserver by pid and starts it again with the same
// command line, recording the new pid in the sandbox state so teardown still stops it.
func restartAPIServer(t *testing.T, dir string) {
	t.Helper()
	start := sandboxtest.Stop(t, dir, "kube-apiserver")
	time.Sleep(2 * time.Second) // the watch is now broken for a while
	start()
	// Back when it answers again (what a test does next needs it).
	cfg, err := sandbox.RESTConfigFor(dir)
	if err != nil {
		t.Fatal(err)
	}
	cs := kubernetes.NewForConfigOrDie(cfg)
	took, ok := sandboxtest.Poll(60*time.Second, 100*time.Millisecond, func() bool {
		_, err := cs.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(context.Background())
		return err == nil
	})
	if !ok {
		t.Fatal("the API server is not ready 60 s after its start")
	}
	t.Logf("the API server answers again %s after its start", took.Round(100*time.Millisecond))
}

func TestWatchSurvivesAPIServerRestart(t *testing.T) {
	c := newCluster(t)
	r := trainThrough(t, c, "restart", func() { restartAPIServer(t, c.sb.Dir) })
	if r.code != 0 || !strings.Contains(r.out, "restart Succeeded") {
		t.Errorf("after an API server restart ain must resume and report the end state: exit %d", r.code)
	}
}

// auditRequests counts the API requests made with a user agent, from the sandbox's audit log
// (one audit ID per request; a watch logs ResponseStarted and ResponseComplete under one ID).
func auditRequests(t *testing.T, dir, userAgent string) (total int, byVerb map[string]int) {
	t.Helper()
	f, err := os.Open(filepath.Join(dir, "logs", "audit.log"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	ids := map[string]string{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		var ev struct {
			AuditID   string `json:"auditID"`
			Verb      string `json:"verb"`
			UserAgent string `json:"userAgent"`
		}
		if json.Unmarshal(sc.Bytes(), &ev) == nil && ev.UserAgent == userAgent {
			ids[ev.AuditID] = ev.Verb
		}
	}
	byVerb = map[string]int{}
	for _, v := range ids {
		byVerb[v]++
	}
	return len(ids), byVerb
}

// TestRequestsDoNotGrowWithDuration: ain watches, it does not poll, so a 60 s job costs the
// API server as many requests as a 12 s one.
func TestRequestsDoNotGrowWithDuration(t *testing.T) {
	c := newCluster(t)
	counts := map[string]int{}
	for _, tc := range []struct{ name, label string }{{"count-short", ""}, {"count-long", "long"}} {
		ua := fmt.Sprintf("ain-test-%s-%d", tc.name, time.Now().UnixNano())
		c.env["AIN_USER_AGENT"] = ua
		args := []string{"train", "qlora", "--name", tc.name, "--timeout", "3m"}
		if tc.label != "" {
			args = append(args, "--set", "metadata.labels.ain-sim="+tc.label)
		}
		t0 := time.Now()
		_, errOut, code := c.ain(t, args...)
		took := time.Since(t0)
		if code != 0 {
			t.Fatalf("%s: exit %d\n%s", tc.name, code, errOut)
		}
		time.Sleep(2 * time.Second) // let the audit backend flush
		n, byVerb := auditRequests(t, c.sb.Dir, ua)
		counts[tc.name] = n
		t.Logf("%s: job took %s, ain made %d API requests %v", tc.name, took.Round(time.Second), n, byVerb)
	}
	delete(c.env, "AIN_USER_AGENT")
	if counts["count-short"] == 0 {
		t.Fatal("no requests counted: is the audit log written?")
	}
	if counts["count-long"] > counts["count-short"]+3 {
		t.Errorf("requests grew with the job's duration: %d for ~12 s, %d for ~60 s", counts["count-short"], counts["count-long"])
	}
}
