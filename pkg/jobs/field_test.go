package jobs

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	mpiv2beta1 "github.com/kubeflow/mpi-operator/pkg/apis/kubeflow/v2beta1"
	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	kubeflowv1 "github.com/kubeflow/training-operator/pkg/apis/kubeflow.org/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/ain-hpc/ain/pkg/nccl"
	"github.com/ain-hpc/ain/pkg/profile"
	"github.com/ain-hpc/ain/pkg/recipe"
)

// Tests for what the 2026-12 field review found would break on a real cluster (issue 14).

// Defect 3: "one pod per node" is a scheduling rule, not a promise: every rank carries a
// required anti-affinity on the hostname against the run's other ranks, and the MPI launcher
// (no GPU) is not one of them.
func TestRanksOnePerNode(t *testing.T) {
	for _, name := range []string{"qlora", "allreduce"} {
		b := render(t, name, "ib")
		for _, pod := range rankPods(t, b) {
			a := pod.Spec.Affinity
			if a == nil || a.PodAntiAffinity == nil || len(a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution) != 1 {
				t.Fatalf("%s: rank without required anti-affinity: %+v", name, a)
			}
			term := a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution[0]
			if term.TopologyKey != "kubernetes.io/hostname" {
				t.Errorf("%s: topologyKey %q", name, term.TopologyKey)
			}
			sel := term.LabelSelector.MatchLabels
			for k, v := range sel {
				if pod.Labels[k] != v {
					t.Errorf("%s: the selector %v does not select the rank itself (labels %v)", name, sel, pod.Labels)
				}
			}
			if sel[LabelRun] != name {
				t.Errorf("%s: selector %v must be limited to this run", name, sel)
			}
		}
	}
	j := render(t, "allreduce", "ib").Objects[0].(*kubeflowv1.MPIJob)
	l := j.Spec.MPIReplicaSpecs[kubeflowv1.MPIJobReplicaTypeLauncher].Template
	sel := rankPods(t, render(t, "allreduce", "ib"))[0].Spec.Affinity.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution[0].LabelSelector.MatchLabels
	matches := true
	for k, v := range sel {
		matches = matches && l.Labels[k] == v
	}
	if matches {
		t.Errorf("the launcher's labels %v match the ranks' anti-affinity %v: it could not share a node with a worker", l.Labels, sel)
	}
}

// Defect 6: MPI workers run sleep 365d; cleanPodPolicy Running removes them when the job ends.
func TestMPICleanPodPolicyRunning(t *testing.T) {
	j := render(t, "allreduce", "ib").Objects[0].(*kubeflowv1.MPIJob)
	if p := j.Spec.RunPolicy.CleanPodPolicy; p == nil || *p != kubeflowv1.CleanPodPolicyRunning {
		t.Errorf("MPIJob cleanPodPolicy %v, want Running", p)
	}
	// A PyTorchJob's ranks exit on their own; None keeps every rank's log.
	pj := render(t, "qlora", "ib").Objects[0].(*kubeflowv1.PyTorchJob)
	if p := pj.Spec.RunPolicy.CleanPodPolicy; p == nil || *p != kubeflowv1.CleanPodPolicyNone {
		t.Errorf("PyTorchJob cleanPodPolicy %v, want None", p)
	}
}

// Defect 10: the launcher does not inherit the GPU nodes' nodeSelector.
func TestLauncherOffGPUNodeSelector(t *testing.T) {
	p, err := profile.Load(profile.Options{Fabric: "ib", Getenv: func(string) string { return "" }})
	if err != nil {
		t.Fatal(err)
	}
	p.Spec.NodeSelector = map[string]string{"nvidia.com/gpu.product": "NVIDIA-GH200-480GB", "kubernetes.io/arch": "arm64"}
	p.Spec.Tolerations = []profile.Toleration{{Key: "nvidia.com/gpu", Operator: "Exists", Effect: "NoSchedule"}}
	// An image ain knows nothing of (the built-in one is amd64 only: TestImageArchitectures).
	b, err := Build(loadRecipe(t, "allreduce", "image=registry.example.com/hpc/nccl-tests:2.21-multiarch"), p, Options{})
	if err != nil {
		t.Fatal(err)
	}
	j := b.Objects[0].(*kubeflowv1.MPIJob)
	l := j.Spec.MPIReplicaSpecs[kubeflowv1.MPIJobReplicaTypeLauncher].Template.Spec
	w := j.Spec.MPIReplicaSpecs[kubeflowv1.MPIJobReplicaTypeWorker].Template.Spec
	if len(l.NodeSelector) != 0 {
		t.Errorf("launcher nodeSelector %v: the GPU nodes' placement must not be copied", l.NodeSelector)
	}
	if w.NodeSelector["kubernetes.io/arch"] != "arm64" {
		t.Errorf("workers keep the profile's nodeSelector, got %v", w.NodeSelector)
	}
	if len(l.Tolerations) != 1 {
		t.Errorf("launcher tolerations %v: kept so that a cluster of tainted nodes still runs it", l.Tolerations)
	}
	na := l.Affinity.NodeAffinity
	if na == nil || na.RequiredDuringSchedulingIgnoredDuringExecution != nil || len(na.PreferredDuringSchedulingIgnoredDuringExecution) != 1 ||
		na.PreferredDuringSchedulingIgnoredDuringExecution[0].Preference.MatchExpressions[0].Values[0] != "amd64" {
		t.Errorf("launcher node affinity %+v: want amd64 preferred, nothing required", na)
	}
}

// The built-in images are amd64 only (pkg/image cites their build workflows): every pod that
// runs one, the MPI launcher and a CPU-only merge pod included, requires an amd64 node; a
// profile that selects arm64 GPU nodes is refused before anything is applied; an image whose
// spec.architectures lists both is required to either, the launcher too.
func TestImageArchitectures(t *testing.T) {
	archOf := func(s corev1.PodSpec) []string {
		if s.Affinity == nil || s.Affinity.NodeAffinity == nil || s.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution == nil {
			return nil
		}
		var out []string
		for _, term := range s.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms {
			for _, e := range term.MatchExpressions {
				if e.Key == corev1.LabelArchStable && e.Operator == corev1.NodeSelectorOpIn {
					out = append(out, strings.Join(e.Values, ","))
				}
			}
		}
		return out
	}
	j := render(t, "allreduce", "ib").Objects[0].(*kubeflowv1.MPIJob)
	for role, rs := range j.Spec.MPIReplicaSpecs {
		if got := archOf(rs.Template.Spec); len(got) != 1 || got[0] != "amd64" {
			t.Errorf("allreduce %s: required arch %v, want [amd64]", role, got)
		}
		if rs.Template.Spec.Affinity.PodAntiAffinity == nil && role == kubeflowv1.MPIJobReplicaTypeWorker {
			t.Errorf("allreduce worker lost its one-per-node anti-affinity")
		}
	}
	merge := render(t, "qlora-merge", "ib").Objects[0].(*kubeflowv1.PyTorchJob)
	for role, rs := range merge.Spec.PyTorchReplicaSpecs {
		if got := archOf(rs.Template.Spec); len(got) != 1 || got[0] != "amd64" {
			t.Errorf("qlora-merge %s (no GPU): required arch %v, want [amd64]", role, got)
		}
	}
	multi := render(t, "allreduce", "ib", "architectures=[amd64,arm64]").Objects[0].(*kubeflowv1.MPIJob)
	l := multi.Spec.MPIReplicaSpecs[kubeflowv1.MPIJobReplicaTypeLauncher].Template.Spec
	if got := archOf(l); len(got) != 1 || got[0] != "amd64,arm64" || len(l.Affinity.NodeAffinity.PreferredDuringSchedulingIgnoredDuringExecution) != 0 {
		t.Errorf("launcher with architectures [amd64,arm64]: %v %+v", got, l.Affinity.NodeAffinity)
	}

	p, err := profile.Load(profile.Options{Fabric: "ib", Getenv: func(string) string { return "" }})
	if err != nil {
		t.Fatal(err)
	}
	// On the training-operator an arm64-only image cannot work: its launcher's kubectl is amd64.
	if _, err := Build(loadRecipe(t, "allreduce", "architectures=[arm64]"), p, Options{}); err == nil || !strings.Contains(err.Error(), "amd64 only") {
		t.Errorf("arm64-only image on the training-operator: %v", err)
	}
	p.Spec.NodeSelector = map[string]string{"kubernetes.io/arch": "arm64"}
	for _, name := range []string{"allreduce", "qlora"} {
		_, err := Build(loadRecipe(t, name), p, Options{})
		if err == nil || !strings.Contains(err.Error(), "spec.architectures") || !strings.Contains(err.Error(), "kubernetes.io/arch=arm64") {
			t.Errorf("%s on arm64 GPU nodes: %v, want a spec.architectures error naming the nodeSelector", name, err)
		}
	}
}

// Defect 4: gidIndex auto renders no NCCL_IB_GID_INDEX; a subnet renders NCCL's address-based
// GID selection; a number renders the number.
func TestRoCEGIDEnv(t *testing.T) {
	for _, tc := range []struct {
		gid, addrRange string
		want           map[string]string
		absent         []string
	}{
		{"auto", "", nil, []string{"NCCL_IB_GID_INDEX", "NCCL_IB_ADDR_RANGE"}},
		{"auto", "192.168.100.0/24", map[string]string{"NCCL_IB_ADDR_FAMILY": "AF_INET", "NCCL_IB_ADDR_RANGE": "192.168.100.0/24"}, []string{"NCCL_IB_GID_INDEX"}},
		{"auto", "fd00:100::/64", map[string]string{"NCCL_IB_ADDR_FAMILY": "AF_INET6", "NCCL_IB_ADDR_RANGE": "fd00:100::/64"}, nil},
		{"5", "", map[string]string{"NCCL_IB_GID_INDEX": "5"}, []string{"NCCL_IB_ADDR_RANGE"}},
	} {
		env := nccl.FabricEnv(nccl.Fabric{Kind: "roce", GIDIndex: tc.gid, AddrRange: tc.addrRange})
		for k, v := range tc.want {
			if env[k] != v {
				t.Errorf("gid %s range %s: %s=%q, want %q", tc.gid, tc.addrRange, k, env[k], v)
			}
		}
		for _, k := range tc.absent {
			if _, ok := env[k]; ok {
				t.Errorf("gid %s range %s: %s=%q rendered", tc.gid, tc.addrRange, k, env[k])
			}
		}
		if env["NCCL_IB_GID_INDEX"] == "-1" {
			t.Errorf("NCCL_IB_GID_INDEX=-1 rendered")
		}
	}
	p, err := profile.Load(profile.Options{Fabric: "roce", Getenv: func(string) string { return "" }})
	if err != nil {
		t.Fatal(err)
	}
	p.Spec.AddrRange = "192.168.100.0/24"
	j := buildWith(t, "allreduce", p).(*kubeflowv1.MPIJob)
	cmd := j.Spec.MPIReplicaSpecs[kubeflowv1.MPIJobReplicaTypeLauncher].Template.Spec.Containers[0].Command
	if !slices.Contains(cmd, "NCCL_IB_ADDR_RANGE") || !slices.Contains(cmd, "NCCL_IB_ADDR_FAMILY") {
		t.Errorf("mpirun does not export the address selection: %s", strings.Join(cmd, " "))
	}
}

// mpirun runs on the launcher, which has none of the ranks' Multus interfaces: the profile's
// socketIfname (NCCL's, e.g. net1) never becomes an Open MPI include list, which aborts when it
// matches no local interface; loopback and docker0 are excluded instead.
func TestMPIRunTCPInterface(t *testing.T) {
	for _, api := range APIs {
		cmd := mpiRunWithIfname(t, api, "net1")
		if slices.Contains(cmd, "btl_tcp_if_include") || slices.Contains(cmd, "oob_tcp_if_include") || slices.Contains(cmd, "net1") {
			t.Errorf("%s: mpirun names the ranks' interface: %s", api, strings.Join(cmd, " "))
		}
		for _, p := range []string{"btl_tcp_if_exclude", "oob_tcp_if_exclude"} {
			if v, ok := mcaValue(cmd, p); !ok || v != "lo,docker0" {
				t.Errorf("%s: %s %q", api, p, v)
			}
		}
	}
}

// mpiRunWithIfname is the allreduce launcher's command on api with the profile's socketIfname.
func mpiRunWithIfname(t *testing.T, api API, ifname string) []string {
	t.Helper()
	return launcherOf(t, buildOn(t, api, loadRecipe(t, "allreduce"), func(p *profile.Profile) { p.Spec.SocketIfname = ifname }))
}

// launcherOf is the MPI launcher container's command in b, whatever its API.
func launcherOf(t *testing.T, b *Bundle) []string {
	t.Helper()
	for _, o := range b.Objects {
		switch j := o.(type) {
		case *kubeflowv1.MPIJob:
			return j.Spec.MPIReplicaSpecs[kubeflowv1.MPIJobReplicaTypeLauncher].Template.Spec.Containers[0].Command
		case *mpiv2beta1.MPIJob:
			return j.Spec.MPIReplicaSpecs[mpiv2beta1.MPIReplicaTypeLauncher].Template.Spec.Containers[0].Command
		case *trainer.TrainingRuntime:
			for _, rj := range j.Spec.Template.Spec.ReplicatedJobs {
				if rj.Name == TrainerLauncherJob {
					return rj.Template.Spec.Template.Spec.Containers[0].Command
				}
			}
		}
	}
	t.Fatal("no launcher")
	return nil
}

func buildWith(t *testing.T, name string, p *profile.Profile) any {
	t.Helper()
	r := loadRecipe(t, name)
	b, err := Build(r, p, Options{})
	if err != nil {
		t.Fatal(err)
	}
	return b.Objects[0]
}

// Defect 2: no built-in recipe runs an image by :latest (or untagged), and the QLoRA command
// is torchrun reached through PATH in the chosen image (see recipes/qlora.yaml for the image's
// Dockerfile); defect 9: qlora-merge merges on the CPU and holds no GPU, RDMA device or IPC_LOCK.
func TestRecipeImagesAndMerge(t *testing.T) {
	for _, name := range []string{"qlora", "qlora-merge", "allreduce"} {
		r := loadRecipe(t, name)
		img := r.Workload().Image
		ref := img[strings.LastIndex(img, "/")+1:]
		if !strings.Contains(ref, ":") && !strings.Contains(img, "@sha256:") || strings.HasSuffix(img, ":latest") {
			t.Errorf("%s: image %q is not pinned by tag", name, img)
		}
	}
	q := render(t, "qlora", "ib").Objects[0].(*kubeflowv1.PyTorchJob)
	cmd := q.Spec.PyTorchReplicaSpecs[kubeflowv1.PyTorchJobReplicaTypeMaster].Template.Spec.Containers[0].Command
	if len(cmd) < 4 || cmd[0] != "sh" || !strings.Contains(cmd[2], "exec torchrun -m trl.scripts.sft \"$@\"") || !slices.Contains(cmd, "--load_in_4bit") {
		t.Errorf("qlora command %q", cmd)
	}
	m := render(t, "qlora-merge", "ib").Objects[0].(*kubeflowv1.PyTorchJob)
	c := m.Spec.PyTorchReplicaSpecs[kubeflowv1.PyTorchJobReplicaTypeMaster].Template
	for name := range c.Spec.Containers[0].Resources.Limits {
		if name == "nvidia.com/gpu" || name == profile.DefaultRDMAResource {
			t.Errorf("qlora-merge requests %s", name)
		}
	}
	if c.Spec.Containers[0].SecurityContext != nil || c.Annotations[MultusAnnotation] != "" {
		t.Errorf("qlora-merge: securityContext %+v annotations %v", c.Spec.Containers[0].SecurityContext, c.Annotations)
	}
}

// Defect 3 (explaining): a job of which some ranks are placed and others Pending is named a
// partial gang; the scheduler's anti-affinity refusal is explained as "one rank per node".
func TestGangAndAntiAffinityExplained(t *testing.T) {
	s := Snapshot{Pods: []PodInfo{
		{Name: "allreduce-launcher", Replica: "launcher", Phase: "Pending"},
		{Name: "allreduce-worker-0", Replica: "worker", Phase: "Running", Node: "gpu-node-1"},
		{Name: "allreduce-worker-1", Replica: "worker", Phase: "Running", Node: "gpu-node-2"},
		{Name: "allreduce-worker-2", Replica: "worker", Phase: "Pending"},
	}}
	n := GangNote(s, nil)
	if !strings.Contains(n, "2 of 3 rank(s) have a node") || !strings.Contains(n, "(allreduce-worker-2)") || !strings.Contains(n, "serves no gang scheduler") {
		t.Errorf("%s", n)
	}
	if got := GangAPIs([]string{"apps", "kueue.x-k8s.io", "scheduling.volcano.sh", "kueue.x-k8s.io"}); strings.Join(got, ",") != "Kueue,Volcano" {
		t.Errorf("GangAPIs %v", got)
	}
	if n := GangNote(s, []string{"Volcano"}); !strings.Contains(n, "The cluster serves Volcano") {
		t.Errorf("%s", n)
	}
	s.Pods[3].Node, s.Pods[3].Phase = "gpu-node-3", "Running"
	if n := GangNote(s, nil); n != "" {
		t.Errorf("all placed: %q", n)
	}
	pod := &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{}}}}
	msg := "0/3 nodes are available: 2 node(s) didn't match pod anti-affinity rules, 1 Insufficient nvidia.com/gpu. preemption: 0/3 nodes are available"
	if e := ExplainUnschedulable(pod, msg, nil); !strings.Contains(e, "one per node (required anti-affinity on kubernetes.io/hostname)") {
		t.Errorf("%s", e)
	}
}

// Gang scheduling, where the cluster offers it: every pod of the job in minAvailable.
func TestGangSchedulingPolicy(t *testing.T) {
	p, err := profile.Load(profile.Options{Fabric: "ib", Getenv: func(string) string { return "" }})
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]int32{"allreduce": 4, "qlora": 3} {
		r := loadRecipe(t, name)
		b, err := Build(r, p, Options{GangScheduling: true})
		if err != nil {
			t.Fatal(err)
		}
		var sp *kubeflowv1.SchedulingPolicy
		switch j := b.Objects[0].(type) {
		case *kubeflowv1.MPIJob:
			sp = j.Spec.RunPolicy.SchedulingPolicy
		case *kubeflowv1.PyTorchJob:
			sp = j.Spec.RunPolicy.SchedulingPolicy
		}
		if sp == nil || sp.MinAvailable == nil || *sp.MinAvailable != want {
			t.Errorf("%s: schedulingPolicy %+v, want minAvailable %d", name, sp, want)
		}
	}
	if OperatorGang([]string{"Kueue"}) || !OperatorGang([]string{"Volcano"}) {
		t.Error("OperatorGang")
	}
	// Not detected: nothing rendered (the goldens have no schedulingPolicy).
	if j := render(t, "allreduce", "ib").Objects[0].(*kubeflowv1.MPIJob); j.Spec.RunPolicy.SchedulingPolicy != nil {
		t.Errorf("schedulingPolicy without a gang scheduler: %+v", j.Spec.RunPolicy.SchedulingPolicy)
	}
}

// The v2beta1 MPIJob's gang is its workers: the mpi-operator creates the launcher only after
// they are Ready (WaitForWorkersReady), so a PodGroup counting it (its default, workers + 1)
// would never be satisfied. Set with or without a detected gang scheduler.
func TestGangMPIJobV2Workers(t *testing.T) {
	for _, gang := range []bool{false, true} {
		r := loadRecipe(t, "allreduce")
		p, err := profile.Load(profile.Options{Fabric: "ib", Getenv: func(string) string { return "" }})
		if err != nil {
			t.Fatal(err)
		}
		b, err := mpiV2.Build(r, p, Options{GangScheduling: gang})
		if err != nil {
			t.Fatal(err)
		}
		j := b.Job().(*mpiv2beta1.MPIJob)
		sp := j.Spec.RunPolicy.SchedulingPolicy
		if j.Spec.LauncherCreationPolicy != mpiv2beta1.LauncherCreationPolicyWaitForWorkersReady {
			t.Fatalf("launcherCreationPolicy %q", j.Spec.LauncherCreationPolicy)
		}
		if sp == nil || sp.MinAvailable == nil || *sp.MinAvailable != int32(r.MPI.Nodes) {
			t.Errorf("gang=%v: schedulingPolicy %+v, want minAvailable %d (the workers)", gang, sp, r.MPI.Nodes)
		}
		// minResources: every worker's GPU and RDMA device, not the operator's launcher + n-1.
		if sp == nil || sp.MinResources == nil {
			t.Fatalf("gang=%v: no minResources", gang)
		}
		for name, want := range map[corev1.ResourceName]string{"nvidia.com/gpu": "3", corev1.ResourceMemory: "96Gi", corev1.ResourceCPU: "12"} {
			if got := (*sp.MinResources)[name]; got.Cmp(resource.MustParse(want)) != 0 {
				t.Errorf("gang=%v: minResources %s = %s, want %s (3 workers' requests)", gang, name, got.String(), want)
			}
		}
	}
	r := loadRecipe(t, "allreduce")
	note := GangAssumption(APIMPIOperator, r, []string{"Volcano"})
	for _, want := range []string{"minAvailable = 3, the workers only", "WaitForWorkersReady", "assumes the operator runs with --gang-scheduling"} {
		if !strings.Contains(note, want) {
			t.Errorf("note %q lacks %q", note, want)
		}
	}
	if n := GangAssumption(APIMPIOperator, r, []string{"Kueue"}); n != "" {
		t.Errorf("Kueue alone: %q", n)
	}
	if n := GangAssumption(APITrainingOperator, r, []string{"Volcano"}); !strings.Contains(n, "minAvailable = 4") || !strings.Contains(n, "--gang-scheduler-name") {
		t.Errorf("v1 MPIJob: %q", n)
	}
}

// A launcher Job that retried has one pod per attempt: the outcome is the Succeeded one, else
// the newest, never the first by name.
func TestCurrentLauncher(t *testing.T) {
	at := func(min int) metav1.Time { return metav1.NewTime(time.Date(2026, 12, 4, 10, min, 0, 0, time.UTC)) }
	pod := func(name, role string, phase corev1.PodPhase, created int) corev1.Pod {
		return corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, CreationTimestamp: at(created),
			Labels: map[string]string{mpiv2beta1.JobRoleLabel: role}}, Status: corev1.PodStatus{Phase: phase}}
	}
	cases := []struct {
		pods []corev1.Pod
		want string
	}{
		{[]corev1.Pod{pod("j-launcher-aaaaa", "launcher", corev1.PodFailed, 1), pod("j-launcher-zzzzz", "launcher", corev1.PodSucceeded, 3),
			pod("j-worker-0", "worker", corev1.PodRunning, 0)}, "j-launcher-zzzzz"},
		{[]corev1.Pod{pod("j-launcher-bbbbb", "launcher", corev1.PodSucceeded, 1), pod("j-launcher-aaaaa", "launcher", corev1.PodFailed, 5)}, "j-launcher-bbbbb"},
		{[]corev1.Pod{pod("j-launcher-bbbbb", "launcher", corev1.PodFailed, 1), pod("j-launcher-aaaaa", "launcher", corev1.PodRunning, 4)}, "j-launcher-aaaaa"},
		{[]corev1.Pod{pod("j-worker-0", "worker", corev1.PodRunning, 0)}, ""},
	}
	for i, c := range cases {
		got, ok := CurrentLauncher(c.pods)
		if got.Name != c.want || ok != (c.want != "") {
			t.Errorf("case %d: %q %v, want %q", i, got.Name, ok, c.want)
		}
		if c.want == "" {
			continue
		}
		sel, err := SelectPods("j", c.pods, LogSelection{Index: -1})
		if err != nil || len(sel) != 1 || sel[0].Name != c.want {
			t.Errorf("case %d: ain logs' lead pod %v %v", i, sel, err)
		}
	}
	// The batch Jobs of a v2beta1 MPIJob (its launcher) and of a TrainJob get backoffLimit 0
	// unless the recipe says otherwise (batch/v1's default of 6 reran a failed mpirun 6 times);
	// the training-operator's v1 jobs get none, since exceeding it deletes every pod, logs and all.
	v2 := buildOn(t, APIMPIOperator, loadRecipe(t, "allreduce"), nil).Job().(*mpiv2beta1.MPIJob)
	if b := v2.Spec.RunPolicy.BackoffLimit; b == nil || *b != 0 {
		t.Errorf("v2beta1 backoffLimit %v, want 0", b)
	}
	if b := buildOn(t, APIMPIOperator, loadRecipe(t, "allreduce", "runPolicy.backoffLimit=2"), nil).Job().(*mpiv2beta1.MPIJob).Spec.RunPolicy.BackoffLimit; b == nil || *b != 2 {
		t.Errorf("the recipe's backoffLimit: %v", b)
	}
	for _, name := range []string{"allreduce", "qlora"} {
		rt := buildOn(t, APITrainer, loadRecipe(t, name), nil).Objects[0].(*trainer.TrainingRuntime)
		for _, rj := range rt.Spec.Template.Spec.ReplicatedJobs {
			if b := rj.Template.Spec.BackoffLimit; b == nil || *b != 0 {
				t.Errorf("%s TrainJob %s: backoffLimit %v, want 0", name, rj.Name, b)
			}
		}
	}
	if b := buildOn(t, APITrainingOperator, loadRecipe(t, "allreduce"), nil).Job().(*kubeflowv1.MPIJob).Spec.RunPolicy.BackoffLimit; b != nil {
		t.Errorf("v1 MPIJob backoffLimit %d: the training-operator deletes every pod past it", *b)
	}
	if b := buildOn(t, APITrainingOperator, loadRecipe(t, "qlora"), nil).Job().(*kubeflowv1.PyTorchJob).Spec.RunPolicy.BackoffLimit; b != nil {
		t.Errorf("v1 PyTorchJob backoffLimit %d (the recipe's 0 is left out)", *b)
	}
}

// The workers' readiness probe connects to the port the image's sshd listens on: 22 for the
// coreweave image, 2222 for the mpi-operator's own images (their Dockerfile's Port), or the
// recipe's spec.sshPort; a probe on 22 against sshd on 2222 keeps every worker NotReady.
func TestWorkerProbeSSHPort(t *testing.T) {
	cases := []struct {
		sets []string
		want int32
	}{
		{nil, 22},
		{[]string{"image=mpioperator/openmpi:v0.8.0"}, 2222},
		{[]string{"image=docker.io/mpioperator/base@sha256:" + strings.Repeat("a", 64)}, 2222},
		{[]string{"image=mpioperator/openmpi:v0.8.0", "sshPort=22"}, 22},
		{[]string{"sshPort=2200"}, 2200},
	}
	for _, c := range cases {
		for _, api := range []API{APIMPIOperator, APITrainer} {
			b := buildOn(t, api, loadRecipe(t, "allreduce", c.sets...), nil)
			var probe *corev1.Probe
			switch j := b.Objects[0].(type) {
			case *mpiv2beta1.MPIJob:
				probe = j.Spec.MPIReplicaSpecs[mpiv2beta1.MPIReplicaTypeWorker].Template.Spec.Containers[0].ReadinessProbe
			case *trainer.TrainingRuntime:
				probe = j.Spec.Template.Spec.ReplicatedJobs[0].Template.Spec.Template.Spec.Containers[0].ReadinessProbe
			}
			if probe == nil || probe.TCPSocket == nil || probe.TCPSocket.Port.IntVal != c.want {
				t.Errorf("%s %v: readiness probe %+v, want TCP %d", api, c.sets, probe, c.want)
			}
		}
	}
	if _, err := recipe.Load("allreduce", []string{"sshPort=70000"}); err == nil || !strings.Contains(err.Error(), "spec.sshPort") {
		t.Errorf("sshPort 70000: %v", err)
	}
}

// profileIB is the built-in IB profile.
func profileIB(t *testing.T) *profile.Profile {
	t.Helper()
	p, err := profile.Load(profile.Options{Fabric: "ib", Getenv: func(string) string { return "" }})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// buildOn renders r on api with the built-in IB profile, changed by edit when not nil.
func buildOn(t *testing.T, api API, r *recipe.Recipe, edit func(*profile.Profile)) *Bundle {
	t.Helper()
	p := profileIB(t)
	if edit != nil {
		edit(p)
	}
	be, err := Choose(r, Served{}, api)
	if err != nil {
		t.Fatal(err)
	}
	b, err := be.Build(r, p, Options{})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// A v2beta1 worker that fails before the launcher exists leaves a job that can never start (the
// mpi-operator neither recreates the pod nor fails the MPIJob): Watch ends with StuckError.
func TestStuckWorker(t *testing.T) {
	job := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "kubeflow.org/v2beta1", "kind": "MPIJob",
		"metadata": map[string]any{"name": "ar", "namespace": "ns"}, "spec": map[string]any{"launcherCreationPolicy": "WaitForWorkersReady"}}}
	worker := func(i int, phase corev1.PodPhase) corev1.Pod {
		p := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("ar-worker-%d", i),
			Labels: map[string]string{mpiv2beta1.JobRoleLabel: "worker", mpiv2beta1.ReplicaIndexLabel: fmt.Sprint(i)}}, Status: corev1.PodStatus{Phase: phase}}
		if phase == corev1.PodFailed {
			p.Status.ContainerStatuses = []corev1.ContainerStatus{{State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
				ExitCode: 255, Reason: "Error", Message: "sshd: no hostkeys available -- exiting.\n"}}}}
		}
		return p
	}
	pods := []corev1.Pod{worker(0, corev1.PodRunning), worker(1, corev1.PodFailed), worker(2, corev1.PodRunning)}
	why := stuckWorker(job, pods)
	for _, want := range []string{"worker pod ar-worker-1 failed (Error, exit code 255: sshd: no hostkeys available -- exiting.)", "WaitForWorkersReady"} {
		if !strings.Contains(why, want) {
			t.Errorf("%q lacks %q", why, want)
		}
	}
	launcher := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "ar-launcher-x", Labels: map[string]string{mpiv2beta1.JobRoleLabel: "launcher"}}}
	if w := stuckWorker(job, append(pods, launcher)); w != "" {
		t.Errorf("with a launcher the launcher's outcome decides: %q", w)
	}
	if w := stuckWorker(job, []corev1.Pod{worker(0, corev1.PodRunning), worker(1, corev1.PodPending)}); w != "" {
		t.Errorf("no failed worker: %q", w)
	}
	v1 := job.DeepCopy()
	unstructured.RemoveNestedField(v1.Object, "spec", "launcherCreationPolicy")
	if w := stuckWorker(v1, pods); w != "" {
		t.Errorf("no WaitForWorkersReady: %q", w)
	}
}
