package sandbox

import (
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/ain-hpc/ain/pkg/ibport"
	"github.com/ain-hpc/ain/pkg/mpilauncher"
	"github.com/ain-hpc/ain/pkg/nccl"
	"github.com/ain-hpc/ain/pkg/topo"
)

func TestScenariosLoad(t *testing.T) {
	names := Scenarios()
	for _, want := range []string{"healthy", "ib-port-init", "no-rdma", "late-workers", "socket-fallback", "job-fails"} {
		if !contains(names, want) {
			t.Errorf("scenario %s missing from %v", want, names)
		}
	}
	for _, n := range names {
		sc, err := LoadScenario(n)
		if err != nil {
			t.Fatalf("%s: %v", n, err)
		}
		if sc.Description == "" || sc.Timing.StartAfter.Duration == 0 || sc.Timing.CompleteAfter.Duration == 0 {
			t.Errorf("%s: description or timing missing: %+v", n, sc)
		}
	}
	if _, err := LoadScenario("nope"); err == nil || !strings.Contains(err.Error(), "healthy") {
		t.Errorf("unknown scenario error should list the known ones, got %v", err)
	}
	if _, err := LoadScenario("base"); err == nil {
		t.Error("base is not a scenario")
	}
}

func contains(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}

func TestStagesAreYAML(t *testing.T) {
	b, err := stagesYAML()
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"node-initialize", "node-heartbeat", "node-down", "ain-pod-start", "ain-pod-start-unready", "ain-pod-ready-late", "ain-pod-succeed", "ain-pod-fail", "ain-pod-delete"} {
		if !strings.Contains(string(b), "name: "+name+"\n") {
			t.Errorf("stage %s missing", name)
		}
	}
}

// pod builds a pod as the training-operator would.
func pod(owner, role string, index int, node string, cmd []string, env map[string]string, inits ...string) *corev1.Pod {
	yes := true
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("job-%s-%d", role, index), Namespace: "default", UID: types.UID("u-" + role),
			Labels: map[string]string{labelJobName: "job", labelReplicaType: role, labelReplicaIndex: fmt.Sprint(index)}},
		Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "main", Command: cmd}}},
	}
	if owner != "" {
		p.OwnerReferences = []metav1.OwnerReference{{Kind: owner, Name: "job", Controller: &yes}}
	}
	for k, v := range env {
		p.Spec.Containers[0].Env = append(p.Spec.Containers[0].Env, corev1.EnvVar{Name: k, Value: v})
	}
	for _, n := range inits {
		p.Spec.InitContainers = append(p.Spec.InitContainers, corev1.Container{Name: n})
	}
	return p
}

var probeCmd = []string{"sh", "-c", ibport.SysfsDumpCommand}

func TestRules(t *testing.T) {
	allreduce := []string{"mpirun", "-np", "3", "/opt/nccl-tests/build/all_reduce_perf", "-b", "8", "-e", "8G"}
	cases := []struct {
		scenario, fabric string
		pod              *corev1.Pod
		sample, outcome  string
		readyAfter       time.Duration
	}{
		{"healthy", "ib", pod("", "", 0, "gpu-node-2", probeCmd, nil), "probe/sysfs-ib-active.txt", "Succeeded", 0},
		{"healthy", "roce", pod("", "", 0, "gpu-node-2", probeCmd, nil), "probe/sysfs-roce-active.txt", "Succeeded", 0},
		{"ib-port-init", "ib", pod("", "", 0, "gpu-node-2", probeCmd, nil), "probe/sysfs-ib-init.txt", "Succeeded", 0},
		{"ib-port-init", "ib", pod("", "", 0, "gpu-node-1", probeCmd, nil), "probe/sysfs-ib-active.txt", "Succeeded", 0},
		{"healthy", "ib", pod("MPIJob", "launcher", 0, "gpu-node-1", allreduce, map[string]string{"NCCL_ALGO": "Ring"}), "nccl-tests/all_reduce_perf-ring.txt", "Succeeded", 0},
		{"healthy", "ib", pod("MPIJob", "launcher", 0, "gpu-node-1", allreduce, map[string]string{"NCCL_ALGO": "Tree"}), "nccl-tests/all_reduce_perf-tree.txt", "Succeeded", 0},
		{"healthy", "ib", pod("MPIJob", "launcher", 0, "gpu-node-1", allreduce, nil), "nccl-tests/all_reduce_perf-default.txt", "Succeeded", 0},
		{"socket-fallback", "ib", pod("MPIJob", "launcher", 0, "gpu-node-1", allreduce, nil), "nccl-tests/all_reduce_perf-socket.txt", "Succeeded", 0},
		{"healthy", "ib", pod("MPIJob", "worker", 1, "gpu-node-2", []string{"/usr/sbin/sshd", "-De"}, nil), "mpi/sshd-worker.txt", "Succeeded", 0},
		{"healthy", "ib", pod("PyTorchJob", "master", 0, "gpu-node-1", []string{"torchrun"}, nil), "nccl/pytorch-rank.txt", "Succeeded", 0},
		{"socket-fallback", "ib", pod("PyTorchJob", "worker", 0, "gpu-node-2", []string{"torchrun"}, nil), "nccl/pytorch-rank-socket.txt", "Succeeded", 0},
		{"ib-port-init", "ib", pod("PyTorchJob", "worker", 0, "gpu-node-2", []string{"torchrun"}, nil), "nccl/pytorch-rank-socket.txt", "Succeeded", 0},
		{"job-fails", "ib", pod("PyTorchJob", "master", 0, "gpu-node-1", []string{"torchrun"}, nil), "nccl/pytorch-rank-fail.txt", "Failed", 0},
		{"late-workers", "ib", pod("MPIJob", "worker", 0, "gpu-node-2", nil, nil), "mpi/sshd-worker.txt", "Succeeded", 20 * time.Second},
		{"late-workers", "ib", pod("MPIJob", "launcher", 0, "gpu-node-1", allreduce, nil, "kubectl-delivery"), "mpi/launcher-workers-not-ready.txt", "Failed", 0},
		{"late-workers", "ib", pod("MPIJob", "launcher", 0, "gpu-node-1", allreduce, nil, "kubectl-delivery", "wait-for-workers"), "nccl-tests/all_reduce_perf-default.txt", "Succeeded", 0},
		{"late-workers", "ib", pod("PyTorchJob", "master", 0, "gpu-node-1", []string{"torchrun"}, nil), "nccl/pytorch-rank.txt", "Succeeded", 0},
		{"healthy", "ib", pod("ReplicaSet", "", 0, "gpu-node-1", []string{"vllm", "serve"}, nil), "vllm/server.txt", "Running", 0},
		{"healthy", "ib", pod("", "", 0, "gpu-node-1", []string{"sleep", "inf"}, nil), "", "Running", 0},
		{"healthy", "ib", pod("Job", "", 0, "gpu-node-1", []string{"true"}, nil), "", "Succeeded", 0},
	}
	for _, c := range cases {
		sc, err := LoadScenario(c.scenario)
		if err != nil {
			t.Fatal(err)
		}
		r := matchRule(sc, c.pod, c.fabric, nil)
		got := plan(sc, r, c.pod)
		if got[AnnoSample] != c.sample || got[AnnoOutcome] != c.outcome || got[AnnoReadyAfter] != c.readyAfter.String() {
			t.Errorf("%s/%s %s %s on %s: got sample %q outcome %q ready-after %s, want %q %q %s", c.scenario, c.fabric,
				ownerKind(c.pod), c.pod.Name, c.pod.Spec.NodeName, got[AnnoSample], got[AnnoOutcome], got[AnnoReadyAfter], c.sample, c.outcome, c.readyAfter)
		}
	}
	// Annotations set by the user win over the scenario.
	p := pod("PyTorchJob", "master", 0, "gpu-node-1", nil, nil)
	p.Annotations = map[string]string{AnnoCompleteAfter: "60s"}
	sc, _ := LoadScenario("healthy")
	if got := plan(sc, matchRule(sc, p, "ib", nil), p); got[AnnoCompleteAfter] != "60s" {
		t.Errorf("user annotation overridden: %v", got)
	}
}

func sampleData(fabric string, rank, world int) SampleData {
	return SampleData{Pod: fmt.Sprintf("qlora-worker-%d", rank), Namespace: "default", Node: fmt.Sprintf("gpu-node-%d", rank+1), NodeIndex: rank + 1,
		PodIP: fmt.Sprintf("10.244.%d.5", rank+1), Job: "qlora", Role: "worker", Rank: rank, WorldSize: world, Fabric: fabric,
		Hosts: []string{"nccl-worker-0", "nccl-worker-1", "nccl-worker-2"}, Env: map[string]string{}, PID: 40 + rank, GPUs: 1}
}

// TestSamples renders every sample and reads it back with ain's analysers, so the samples stay
// in the formats the rest of ain parses and say what the scenarios promise.
func TestSamples(t *testing.T) {
	render := func(name string, d SampleData) string {
		t.Helper()
		s, err := RenderSample(name, d)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(s, "<no value>") || strings.HasPrefix(s, "\n") {
			t.Fatalf("%s renders badly:\n%s", name, s)
		}
		return s
	}
	for _, c := range []struct {
		name, fabric, transport string
		ok                      bool
	}{
		{"nccl/pytorch-rank.txt", "ib", nccl.TransportIB, true},
		{"nccl/pytorch-rank.txt", "roce", nccl.TransportRoCE, true},
		{"nccl/pytorch-rank-socket.txt", "ib", nccl.TransportSocket, false},
		{"nccl/pytorch-rank-fail.txt", "ib", nccl.TransportIB, false},
	} {
		// One log per rank, as `kubectl logs` of each pod gives them.
		a := nccl.NewLogAnalyzer()
		for r := 0; r < 3; r++ {
			if err := a.Feed(fmt.Sprintf("rank%d", r), strings.NewReader(render(c.name, sampleData(c.fabric, r, 3)))); err != nil {
				t.Fatal(err)
			}
		}
		rep := a.Report()
		if rep.Transport != c.transport || rep.OK() != c.ok || rep.Ranks == nil || *rep.Ranks != 3 {
			t.Errorf("%s (%s): transport %s ok %v ranks %v problems %+v, want %s ok %v 3 ranks", c.name, c.fabric, rep.Transport, rep.OK(), rep.Ranks, rep.Problems, c.transport, c.ok)
		}
	}
	// The topology probe's matrix reads as the ideal layout ain doctor topo --node reports.
	if tr, err := topo.Parse(strings.NewReader(render("probe/nvidia-smi-topo-h100.txt", sampleData("ib", 0, 3)))); err != nil {
		t.Errorf("probe/nvidia-smi-topo-h100.txt: %v", err)
	} else if r := topo.Analyze(tr); r.Layout != topo.LayoutIdeal || len(r.GPUs) != 8 {
		t.Errorf("probe/nvidia-smi-topo-h100.txt: layout %s, %d GPUs", r.Layout, len(r.GPUs))
	}
	for _, c := range []struct {
		name      string
		transport string
		peak      float64
	}{
		{"nccl-tests/all_reduce_perf-default.txt", nccl.TransportIB, 23},
		{"nccl-tests/all_reduce_perf-ring.txt", nccl.TransportIB, 23},
		{"nccl-tests/all_reduce_perf-tree.txt", nccl.TransportIB, 19},
		{"nccl-tests/all_reduce_perf-socket.txt", nccl.TransportSocket, 2.5},
	} {
		text := render(c.name, sampleData("ib", 0, 3))
		runs, err := nccl.ParsePerf(strings.NewReader(text))
		if err != nil || len(runs) != 1 {
			t.Fatalf("%s: %v %d runs", c.name, err, len(runs))
		}
		run := runs[0]
		if run.Collective != "all_reduce_perf" || len(run.Rows) != 31 || run.OutOfBounds == nil || *run.OutOfBounds != 0 || run.MaxBusbw == nil || *run.MaxBusbw < c.peak {
			t.Errorf("%s: collective %s rows %d oob %v max %v", c.name, run.Collective, len(run.Rows), run.OutOfBounds, run.MaxBusbw)
		}
		rep, err := nccl.AnalyzeLog(strings.NewReader(text))
		if err != nil || rep.Transport != c.transport || len(rep.Tuning) == 0 {
			t.Errorf("%s: transport %s (want %s), tuning %v, err %v", c.name, rep.Transport, c.transport, rep.Tuning, err)
		}
		ml, err := mpilauncher.Analyze(strings.NewReader(text))
		if err != nil || !ml.OK() {
			t.Errorf("%s: launcher verdict %+v %v", c.name, ml, err)
		}
	}
	for _, c := range []struct {
		name, fabric, reason string
		ready                bool
	}{
		{"probe/sysfs-ib-active.txt", "ib", "", true},
		{"probe/sysfs-roce-active.txt", "roce", "", true},
		{"probe/sysfs-ib-init.txt", "ib", ibport.ReasonNoSM, false},
	} {
		rep, err := ibport.Parse(strings.NewReader(render(c.name, sampleData(c.fabric, 1, 3))))
		if err != nil || rep.Format != ibport.FormatSysfs || rep.Ready != c.ready || len(rep.Ports) != 2 {
			t.Fatalf("%s: %+v %v", c.name, rep, err)
		}
		if rep.Ports[0].Reason != c.reason {
			t.Errorf("%s: reason %q want %q", c.name, rep.Ports[0].Reason, c.reason)
		}
		if c.fabric == "roce" && (rep.GIDIndex == nil || *rep.GIDIndex != 3) {
			t.Errorf("%s: RoCE v2 GID index %v, want 3", c.name, rep.GIDIndex)
		}
	}
	for _, c := range []struct {
		name, verdict string
	}{
		{"mpi/launcher-workers-not-ready.txt", mpilauncher.VerdictLauncherBeforeWorkers},
		{"mpi/launcher.txt", mpilauncher.VerdictHealthy},
		{"mpi/launcher-fail.txt", mpilauncher.VerdictOther},
	} {
		rep, err := mpilauncher.Analyze(strings.NewReader(render(c.name, sampleData("ib", 0, 3))))
		if err != nil || rep.Verdict != c.verdict {
			t.Errorf("%s: verdict %+v want %s (%v)", c.name, rep, c.verdict, err)
		}
	}
	// Every sample a rule names renders.
	for _, n := range Scenarios() {
		sc, _ := LoadScenario(n)
		for _, r := range sc.Rules {
			if r.Sample != "" {
				render(r.Sample, sampleData("ib", 0, 3))
			}
		}
	}
}

func TestCRILog(t *testing.T) {
	start := time.Date(2026, 12, 2, 14, 25, 28, 0, time.UTC)
	got := string(CRILog("a\nb\n", start))
	want := "2026-12-02T14:25:28.000000000Z stdout F a\n2026-12-02T14:25:28.001000000Z stdout F b\n"
	if got != want {
		t.Errorf("got %q want %q", got, want)
	}
}

func TestConfig(t *testing.T) {
	c := Config{}.WithDefaults()
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	bad := Config{Nodes: -1, GPUsPerNode: 8, Fabric: "eth", Scenario: "x", RDMAResource: "rdma", RDMACount: 1}
	err := bad.Validate()
	for _, want := range []string{"--nodes", "--fabric", "unknown sandbox scenario", "domain-qualified"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Validate() = %v, want it to mention %s", err, want)
		}
	}
	pf, err := ParsePortForward("8000=18080")
	if err != nil || pf.PodPort != 8000 || pf.Target != "127.0.0.1:18080" {
		t.Errorf("ParsePortForward: %+v %v", pf, err)
	}
	if _, err := ParsePortForward("8000"); err == nil {
		t.Error("want an error without a target")
	}
}

func TestSimulatedNode(t *testing.T) {
	c := Config{}.WithDefaults()
	n := simulatedNode(c, 2, true)
	gpu := n.Status.Allocatable["nvidia.com/gpu"]
	if n.Name != "gpu-node-2" || gpu.Value() != 8 {
		t.Errorf("node: %+v", n.Status.Allocatable)
	}
	q := n.Status.Allocatable[corev1.ResourceName(DefaultRDMAResource)]
	if q.Value() != 63 {
		t.Errorf("rdma: %v", q)
	}
	if _, ok := simulatedNode(c, 3, false).Status.Allocatable[corev1.ResourceName(DefaultRDMAResource)]; ok {
		t.Error("a node without RDMA advertises it")
	}
	if _, ok := n.Status.Allocatable[corev1.ResourceEphemeralStorage]; !ok {
		t.Error("ephemeral-storage missing (MPIJob launchers need it)")
	}
}

// podOf builds a pod as the current stack's controllers would: owner is MPIJob (a v2beta1
// worker), or Job (a v2beta1 launcher, or a Trainer JobSet's pod); lbl are its labels.
func podOf(owner, node string, cmd []string, lbl map[string]string) *corev1.Pod {
	yes := true
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "default", UID: "u", Labels: lbl,
			OwnerReferences: []metav1.OwnerReference{{Kind: owner, Name: "j", Controller: &yes}}},
		Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "main", Command: cmd}}},
	}
}

// TestRulesCurrentStack: the pods of the mpi-operator (v2beta1) and of Trainer v2's JobSets get
// their role from their own labels and the samples, outcomes and timing each scenario means.
func TestRulesCurrentStack(t *testing.T) {
	allreduce := []string{"mpirun", "all_reduce_perf", "-b", "8"}
	sshd := []string{"/usr/sbin/sshd", "-De"}
	v2 := func(role string) map[string]string {
		return map[string]string{"training.kubeflow.org/operator-name": "mpi-operator", labelJobName: "j", labelJobRole: role, labelReplicaIndex: "0"}
	}
	js := func(rjob string) map[string]string {
		return map[string]string{labelJobSetName: "j", labelReplicatedJob: rjob, labelJobCompletionIdx: "1"}
	}
	ready := func(*corev1.Pod) bool { return true }
	cases := []struct {
		scenario        string
		pod             *corev1.Pod
		workersReady    func(*corev1.Pod) bool
		sample, outcome string
		readyAfter      time.Duration
	}{
		{"healthy", podOf("MPIJob", "gpu-node-1", sshd, v2("worker")), nil, "mpi/sshd-worker.txt", "Running", 0},
		{"healthy", podOf("Job", "gpu-node-1", allreduce, v2("launcher")), nil, "nccl-tests/all_reduce_perf-default.txt", "Succeeded", 0},
		{"healthy", podOf("Job", "gpu-node-1", []string{"mpirun", "hostname"}, v2("launcher")), nil, "mpi/launcher.txt", "Succeeded", 0},
		{"healthy", podOf("Job", "gpu-node-1", []string{"torchrun", "train.py"}, js("node")), nil, "nccl/pytorch-rank.txt", "Succeeded", 0},
		{"healthy", podOf("Job", "gpu-node-1", sshd, js("node")), nil, "mpi/sshd-worker.txt", "Running", 0},
		{"healthy", podOf("Job", "gpu-node-1", allreduce, js("launcher")), nil, "nccl-tests/all_reduce_perf-default.txt", "Succeeded", 0},
		{"socket-fallback", podOf("Job", "gpu-node-1", []string{"torchrun"}, js("node")), nil, "nccl/pytorch-rank-socket.txt", "Succeeded", 0},
		{"socket-fallback", podOf("Job", "gpu-node-1", sshd, js("node")), nil, "mpi/sshd-worker.txt", "Running", 0},
		{"ib-port-init", podOf("Job", "gpu-node-2", []string{"torchrun"}, js("node")), nil, "nccl/pytorch-rank-socket.txt", "Succeeded", 0},
		{"ib-port-init", podOf("Job", "gpu-node-1", []string{"torchrun"}, js("node")), nil, "nccl/pytorch-rank.txt", "Succeeded", 0},
		{"job-fails", podOf("Job", "gpu-node-1", []string{"torchrun"}, js("node")), nil, "nccl/pytorch-rank-fail.txt", "Failed", 0},
		{"job-fails", podOf("Job", "gpu-node-1", sshd, js("node")), nil, "mpi/sshd-worker.txt", "Running", 0},
		{"job-fails", podOf("Job", "gpu-node-1", allreduce, v2("launcher")), nil, "mpi/launcher-fail.txt", "Failed", 0},
		{"late-workers", podOf("MPIJob", "gpu-node-1", sshd, v2("worker")), nil, "mpi/sshd-worker.txt", "Running", 20 * time.Second},
		{"late-workers", podOf("Job", "gpu-node-1", sshd, js("node")), nil, "mpi/sshd-worker.txt", "Running", 20 * time.Second},
		{"late-workers", podOf("Job", "gpu-node-1", []string{"torchrun"}, js("node")), nil, "nccl/pytorch-rank.txt", "Succeeded", 20 * time.Second},
		// A launcher started before its workers were Ready fails; one held back until they were runs.
		{"late-workers", podOf("Job", "gpu-node-1", allreduce, v2("launcher")), nil, "mpi/launcher-workers-not-ready.txt", "Failed", 0},
		{"late-workers", podOf("Job", "gpu-node-1", allreduce, v2("launcher")), ready, "nccl-tests/all_reduce_perf-default.txt", "Succeeded", 0},
		{"late-workers", podOf("Job", "gpu-node-1", allreduce, js("launcher")), ready, "nccl-tests/all_reduce_perf-default.txt", "Succeeded", 0},
	}
	for i, c := range cases {
		sc, err := LoadScenario(c.scenario)
		if err != nil {
			t.Fatal(err)
		}
		got := plan(sc, matchRule(sc, c.pod, "ib", c.workersReady), c.pod)
		if got[AnnoSample] != c.sample || got[AnnoOutcome] != c.outcome || got[AnnoReadyAfter] != c.readyAfter.String() {
			t.Errorf("case %d %s: %s pod %v: got sample %q outcome %q ready-after %s, want %q %q %s", i, c.scenario,
				ownerKind(c.pod), c.pod.Labels, got[AnnoSample], got[AnnoOutcome], got[AnnoReadyAfter], c.sample, c.outcome, c.readyAfter)
		}
	}
	// Rank and hosts come from the same labels.
	if _, job, role, idx := podJob(podOf("Job", "n", nil, js("node"))); job != "j" || role != "node" || idx != 1 {
		t.Errorf("podJob of a JobSet pod = %q %q %d", job, role, idx)
	}
}
