package sandbox

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

func TestLookupRealImage(t *testing.T) {
	for _, tc := range []struct {
		image string
		port  int
		ok    bool
	}{
		{"ghcr.io/coreweave/nccl-tests:12.4.1-cudnn-devel-ubuntu22.04-nccl2.21.5-1-85f9143", 22, true},
		{"mpioperator/openmpi:v0.8.0", 2222, true},
		{"docker.io/mpioperator/base:latest", 2222, true},
		{"mpioperator/openmpi@sha256:0123", 2222, true},
		{"ghcr.io/coreweave/nccl-tests:other-tag", 0, false},
		{"busybox:1.36", 0, false},
		{"localhost:5000/mpioperator/base", 0, false},
	} {
		r, ok := lookupRealImage(tc.image)
		if ok != tc.ok || r.SSHPort != tc.port {
			t.Errorf("%s: %+v %v, want port %d %v", tc.image, r, ok, tc.port, tc.ok)
		}
	}
}

// Real pods are the default; a Config with SimulatePods, or a machine that cannot (the state's
// RealPodsOff), runs none for real and says why.
func TestRealPodsOnByDefault(t *testing.T) {
	if !(&State{Config: Config{}.WithDefaults()}).RealPods() {
		t.Fatal("real pods off by default")
	}
	pod := &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Image: "mpioperator/openmpi:v0.8.0"}}}}
	for _, tc := range []struct {
		st  State
		why string
	}{
		{State{Config: Config{SimulatePods: true}}, RealPodsOffHint},
		{State{RealPodsOff: "real pods need root (network and mount namespaces)"}, "real pods need root (network and mount namespaces)"},
	} {
		a := &agent{st: &tc.st}
		if tc.st.RealPods() {
			t.Errorf("%+v: real pods on", tc.st)
		}
		if _, why := a.realImageOf(pod); why != tc.why {
			t.Errorf("%+v: %q, want %q", tc.st, why, tc.why)
		}
	}
}

// Each pod is real or simulated for one stated reason.
func TestRealDecision(t *testing.T) {
	pod := func(image string, hostNet bool) *corev1.Pod {
		p := &corev1.Pod{Spec: corev1.PodSpec{HostNetwork: hostNet}}
		if image != "" {
			p.Spec.Containers = []corev1.Container{{Image: image}}
		}
		return p
	}
	nccl := "ghcr.io/coreweave/nccl-tests:12.4.1-cudnn-devel-ubuntu22.04-nccl2.21.5-1-85f9143"
	legacyMPI := pod(nccl, false)
	legacyMPI.OwnerReferences = []metav1.OwnerReference{{APIVersion: "kubeflow.org/v1", Kind: "MPIJob", Controller: ptr.To(true)}}
	perftest := pod(nccl, false)
	perftest.Labels = map[string]string{"ain.dev/probe": "perftest"}
	storage := pod("huggingface/trl:0.25.1", false)
	storage.Spec.Containers[0].Command = []string{"sh", "-c", "# " + storageMarker + "\nexit 0"}
	for _, tc := range []struct {
		off  string
		pod  *corev1.Pod
		why  string
		port int
	}{
		{"", pod("mpioperator/base:v0.8.0", false), "", 2222},
		{"", pod("huggingface/trl:0.25.1", false), "", 0},
		{"", pod("busybox:1.36", false), "image not mapped to this machine's programs", 0},
		{"", pod("mpioperator/base:v0.8.0", true), "host network: reads the simulated node", 0},
		{"", pod("", false), "no container", 0},
		{RealPodsOffHint, pod("mpioperator/base:v0.8.0", false), RealPodsOffHint, 0},
		{"", legacyMPI, "kubeflow.org/v1 MPIJob: its mpirun reaches the workers by kubectl exec (kubexec.sh), which real pods here cannot serve", 0},
		{"", perftest, "no RDMA device here: perftest's figures follow the simulated link", 0},
		{"", storage, "storage probe: reads the shared claim's simulated content", 0},
	} {
		r, why := realDecision(tc.off, tc.pod)
		if why != tc.why || r.SSHPort != tc.port {
			t.Errorf("%+v: %+v %q, want port %d %q", tc.pod.Spec, r, why, tc.port, tc.why)
		}
	}
}

// The record groups pods by how they ran; a pod recorded again counts once, as last recorded.
func TestReadPodRuns(t *testing.T) {
	dir := t.TempDir()
	if g, err := ReadPodRuns(dir); g != nil || err != nil {
		t.Fatalf("no record: %v %v", g, err)
	}
	a := &agent{stateDir: dir, log: os.Stderr}
	p := func(name, image string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Image: image}}}}
	}
	a.recordPodRun(p("probe-a", "busybox"), false, "image not mapped to this machine's programs")
	a.recordPodRun(p("w-1", "mpioperator/base"), false, RealPodsOffHint)
	a.recordPodRun(p("w-1", "mpioperator/base"), true, "")
	a.recordPodRun(p("w-0", "mpioperator/base"), true, "")
	a.recordPodRun(p("probe-b", "busybox"), false, "image not mapped to this machine's programs")
	got, err := ReadPodRuns(dir)
	if err != nil {
		t.Fatal(err)
	}
	want := []PodRunGroup{
		{Real: true, Image: "mpioperator/base", Pods: []string{"ns/w-0", "ns/w-1"}},
		{Image: "busybox", Why: "image not mapped to this machine's programs", Pods: []string{"ns/probe-a", "ns/probe-b"}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %+v\nwant %+v", got, want)
	}
	if err := os.WriteFile(Layout{dir}.PodRuns(), []byte("{\"pod\":\"a\"}\nnot json\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadPodRuns(dir); err == nil || !strings.HasPrefix(err.Error(), filepath.Join(dir, "podruns.jsonl")+" line 2: ") {
		t.Errorf("a bad line: %v", err)
	}
}

// A real pod's plan is its rule's sample and failure and the timing the rule or the pod sets;
// the scenario's default timing (which stands for programs that do not run) is left out.
func TestPlanReal(t *testing.T) {
	jobFails, err := LoadScenario("job-fails")
	if err != nil {
		t.Fatal(err)
	}
	late, err := LoadScenario("late-workers")
	if err != nil {
		t.Fatal(err)
	}
	healthy, err := LoadScenario("healthy")
	if err != nil {
		t.Fatal(err)
	}
	launcher := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "ar-launcher", Labels: map[string]string{labelJobRole: "launcher"},
		OwnerReferences: []metav1.OwnerReference{{Kind: "Job", Controller: ptr.To(true)}}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Image: "mpioperator/openmpi", Command: []string{"mpirun", "/opt/nccl_tests/build/all_reduce_perf"}}}}}
	worker := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "t-worker-0", Labels: map[string]string{labelReplicaType: "worker"},
		OwnerReferences: []metav1.OwnerReference{{Kind: "PyTorchJob", Controller: ptr.To(true)}}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Image: "huggingface/trl:0.25.1", Command: []string{"torchrun"}}}}}
	long := worker.DeepCopy()
	long.Annotations = map[string]string{AnnoCompleteAfter: "45s", AnnoOutcome: "Failed", AnnoExitCode: "3"}
	always := func(*corev1.Pod) bool { return true }
	for _, tc := range []struct {
		name string
		sc   *Scenario
		pod  *corev1.Pod
		want realPlan
	}{
		{"healthy launcher: the default table, no timing", healthy, launcher, realPlan{Sample: "nccl-tests/all_reduce_perf-default.txt"}},
		{"job-fails launcher", jobFails, launcher, realPlan{Sample: "mpi/launcher-fail.txt", ExitCode: 1, MinRun: 6 * time.Second}},
		{"job-fails rank", jobFails, worker, realPlan{Sample: "nccl/pytorch-rank-fail.txt", ExitCode: 1, MinRun: 6 * time.Second}},
		{"late-workers worker starts late", late, worker, realPlan{Sample: "nccl/pytorch-rank.txt", ReadyAfter: 20 * time.Second}},
		{"the pod's own annotations", healthy, long, realPlan{Sample: "nccl/pytorch-rank.txt", ExitCode: 3, MinRun: 45 * time.Second}},
	} {
		got := planReal(tc.sc, matchRule(tc.sc, tc.pod, "ib", always), tc.pod)
		if got != tc.want {
			t.Errorf("%s: %+v, want %+v", tc.name, got, tc.want)
		}
		if back := realPlanOf(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{AnnoRealPlan: got.annotation()}}}); back != got {
			t.Errorf("%s: annotation round trip %+v", tc.name, back)
		}
	}
}

// The machine's real-pod lock: a second sandbox is told which holds it; the holder's agent
// ending (its file closed) frees it.
func TestLockRealPods(t *testing.T) {
	path := filepath.Join(t.TempDir(), "lock")
	defer func(old func() string) { realPodsLockPath = old }(realPodsLockPath)
	realPodsLockPath = func() string { return path }
	f, busy, err := lockRealPods("/state/a", 0)
	if err != nil || busy != "" {
		t.Fatalf("first lock: %v %q", err, busy)
	}
	if why := realPodsHolder("/state/b"); !strings.Contains(why, "another sandbox on this machine runs real pods (/state/a)") {
		t.Errorf("second sandbox told %q", why)
	}
	f.Close()
	if why := realPodsHolder("/state/b"); why != "" {
		t.Errorf("after the holder ended: %q", why)
	}
}

// A state written when real pods were opt-in reads as it ran: samples unless it asked for them.
func TestLoadStateBeforeRealPodsByDefault(t *testing.T) {
	for _, tc := range []struct {
		config   string
		simulate bool
	}{
		{`{"fabric":"ib"}`, true},
		{`{"fabric":"ib","realPods":true}`, false},
		{`{"fabric":"ib","simulatePods":false}`, false},
		{`{"fabric":"ib","simulatePods":true}`, true},
	} {
		dir := t.TempDir()
		if err := os.WriteFile(Layout{dir}.State(), []byte(`{"config":`+tc.config+`}`), 0o600); err != nil {
			t.Fatal(err)
		}
		st, err := LoadState(dir)
		if err != nil {
			t.Fatal(err)
		}
		if st.Config.SimulatePods != tc.simulate || st.RealPods() == tc.simulate {
			t.Errorf("%s: SimulatePods %v, RealPods %v", tc.config, st.Config.SimulatePods, st.RealPods())
		}
	}
}

// Only the stand-ins can carry out a failure the scenario plays; other programs of a mapped image
// are played from samples under it.
func TestRunsStandIn(t *testing.T) {
	for cmd, want := range map[string]bool{
		"mpirun -np 2 /opt/nccl_tests/build/all_reduce_perf -b 8":                                    true,
		"python -c 'import bitsandbytes' && exec torchrun -m trl.scripts.sft --model_name_or_path x": true,
		"mpirun -np 2 hostname": false,
		"/usr/sbin/sshd -De":    false,
	} {
		pod := &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Command: []string{"sh", "-c", cmd}}}}}
		if got := runsStandIn(pod); got != want {
			t.Errorf("%q: %v, want %v", cmd, got, want)
		}
	}
}

// The lock Up takes goes to the agent as an extra file: with Up's copy closed, the process that
// inherited it holds it until it ends.
func TestRealPodsLockHandedToTheAgent(t *testing.T) {
	path := filepath.Join(t.TempDir(), "lock")
	defer func(old func() string) { realPodsLockPath = old }(realPodsLockPath)
	realPodsLockPath = func() string { return path }
	lock, busy, err := lockRealPods("/state/up", 0)
	if err != nil || busy != "" {
		t.Fatalf("Up's lock: %v %q", err, busy)
	}
	// The "agent": a shell that checks its fd 3 is the lock file, then waits; its sleep does not
	// inherit the lock (the agent sets close-on-exec on it for its children), else a sleep still
	// dying after stopProc saw the shell end would hold it (seen under load).
	sh, err := filepath.EvalSymlinks("/bin/sh") // stopProc knows its process by its binary
	if err != nil {
		t.Fatal(err)
	}
	p, err := startProc("agent", "", sh, []string{"-c", `test "$(readlink /proc/self/fd/3)" = "$1" && sleep 30 3>&-`, "sh", path},
		nil, filepath.Join(t.TempDir(), "agent.log"), true, lock)
	if err != nil {
		t.Fatal(err)
	}
	lock.Close()
	time.Sleep(200 * time.Millisecond)
	if why := realPodsHolder("/state/other"); !strings.Contains(why, "(/state/up)") {
		t.Errorf("with the agent running, another sandbox is told %q", why)
	}
	if why := realPodsHolder("/state/up"); !strings.Contains(why, "this sandbox's previous agent still holds") {
		t.Errorf("the same sandbox is told %q", why)
	}
	if err := stopProc(p, time.Second); err != nil {
		t.Fatal(err)
	}
	if why := realPodsHolder("/state/other"); why != "" {
		t.Errorf("after the agent ended: %q", why)
	}
}

// The training image runs for real only what its stand-ins cover (trl's sft under torchrun); a
// program of its own (the merge recipe's script) is played from its sample, with why.
func TestTrainingImageRunsOnlyTheStandIns(t *testing.T) {
	a := &agent{real: &realPods{}, st: &State{}}
	pod := func(cmd string) *corev1.Pod {
		return &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Image: "huggingface/trl:0.25.1", Command: []string{"sh", "-c", cmd}}}}}
	}
	if _, why := a.realImageOf(pod("exec torchrun -m trl.scripts.sft --output_dir=/out")); why != "" {
		t.Errorf("sft: simulated (%s)", why)
	}
	if _, why := a.realImageOf(pod("python -c 'from transformers import AutoModelForCausalLM'")); !strings.Contains(why, "trl's sft only") {
		t.Errorf("merge script: %q", why)
	}
}
