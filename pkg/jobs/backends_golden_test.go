package jobs

import (
	"errors"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	mpiv2beta1 "github.com/kubeflow/mpi-operator/pkg/apis/kubeflow/v2beta1"
	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	"github.com/ain-hpc/ain/internal/golden"
	"github.com/ain-hpc/ain/pkg/profile"
)

func renderWith(t testing.TB, api API, name, fabric string) *Bundle {
	t.Helper()
	r := loadRecipe(t, name)
	p, err := profile.Load(profile.Options{Fabric: fabric, Getenv: func(string) string { return "" }})
	if err != nil {
		t.Fatal(err)
	}
	b, err := Choose(r, Served{}, api)
	if err != nil {
		t.Fatal(err)
	}
	bundle, err := b.Build(r, p, Options{Namespace: "ns"})
	if err != nil {
		t.Fatalf("build %s on %s: %v", name, api, err)
	}
	return bundle
}

// TestGoldenBackends renders the built-in job recipes with the mpi-operator and Trainer
// backends and compares the YAML with testdata/golden/<api>/<recipe>-<fabric>.yaml
// (go test ./pkg/jobs -run TestGoldenBackends -update rewrites them).
func TestGoldenBackends(t *testing.T) {
	cases := map[API][]string{APIMPIOperator: {"allreduce"}, APITrainer: {"qlora", "allreduce"}}
	for api, names := range cases {
		for _, name := range names {
			for _, fabric := range []string{profile.FabricIB, profile.FabricSocket} {
				t.Run(string(api)+"/"+name+"-"+fabric, func(t *testing.T) {
					got, err := Encode(renderWith(t, api, name, fabric).Objects, "yaml")
					if err != nil {
						t.Fatal(err)
					}
					golden.File(t, filepath.Join("testdata", "golden", string(api), name+"-"+fabric+".yaml"), got)
				})
			}
		}
	}
}

// The v2beta1 MPIJob: what the mpi-operator needs, on the real type.
func TestMPIJobV2(t *testing.T) {
	job, ok := renderWith(t, APIMPIOperator, "allreduce", profile.FabricIB).Job().(*mpiv2beta1.MPIJob)
	if !ok {
		t.Fatalf("job is %T", renderWith(t, APIMPIOperator, "allreduce", profile.FabricIB).Job())
	}
	s := job.Spec
	if s.LauncherCreationPolicy != mpiv2beta1.LauncherCreationPolicyWaitForWorkersReady {
		t.Errorf("launcherCreationPolicy %q", s.LauncherCreationPolicy)
	}
	if s.RunPolicy.CleanPodPolicy == nil || *s.RunPolicy.CleanPodPolicy != mpiv2beta1.CleanPodPolicyRunning {
		t.Errorf("cleanPodPolicy %v", s.RunPolicy.CleanPodPolicy)
	}
	if s.SSHAuthMountPath != "/root/.ssh" || s.SlotsPerWorker == nil || *s.SlotsPerWorker != 1 {
		t.Errorf("sshAuthMountPath %q slotsPerWorker %v", s.SSHAuthMountPath, s.SlotsPerWorker)
	}
	l := s.MPIReplicaSpecs[mpiv2beta1.MPIReplicaTypeLauncher].Template.Spec
	w := s.MPIReplicaSpecs[mpiv2beta1.MPIReplicaTypeWorker]
	if *w.Replicas != 3 {
		t.Errorf("workers %d", *w.Replicas)
	}
	for k := range l.Containers[0].Resources.Limits {
		t.Errorf("launcher has a limit on %s (no GPU or RDMA)", k)
	}
	for k := range l.Containers[0].Resources.Requests {
		if strings.Contains(string(k), "/") {
			t.Errorf("launcher requests %s", k)
		}
	}
	if len(l.InitContainers) != 0 {
		t.Error("v2beta1 launcher has ain's worker gate: WaitForWorkersReady replaces it")
	}
	wc := w.Template.Spec.Containers[0]
	// The operator's default (sshd -De) with StrictModes off: the keys' Secret folder fails it.
	if strings.Join(wc.Command, " ") != "/usr/sbin/sshd -De -o StrictModes=no" {
		t.Errorf("worker command %v: want sshd -De -o StrictModes=no", wc.Command)
	}
	if wc.ReadinessProbe == nil || wc.ReadinessProbe.TCPSocket == nil || wc.ReadinessProbe.TCPSocket.Port.IntVal != 22 {
		t.Errorf("worker readiness %+v: want a TCP probe of sshd", wc.ReadinessProbe)
	}
	checkRank(t, w.Template, envOf(t, "allreduce"))
}

// checkRank asserts the fabric wiring of a GPU rank's pod template (ib profile): GPU, RDMA,
// IPC_LOCK, memory /dev/shm, Multus, and the environment Env gives (what v1 renders).

// envOf is Env for a built-in recipe on the ib profile.
func envOf(t *testing.T, name string) []corev1.EnvVar {
	r := loadRecipe(t, name)
	p, err := profile.Load(profile.Options{Fabric: profile.FabricIB, Getenv: func(string) string { return "" }})
	if err != nil {
		t.Fatal(err)
	}
	return Env(r, p)
}

func checkRank(t *testing.T, tmpl corev1.PodTemplateSpec, wantEnv []corev1.EnvVar) {
	t.Helper()
	c := tmpl.Spec.Containers[0]
	if _, ok := c.Resources.Limits["nvidia.com/gpu"]; !ok {
		t.Error("rank has no GPU")
	}
	if _, ok := c.Resources.Limits[profile.DefaultRDMAResource]; !ok {
		t.Error("rank has no RDMA resource")
	}
	if c.SecurityContext == nil || c.SecurityContext.Capabilities == nil || len(c.SecurityContext.Capabilities.Add) == 0 || c.SecurityContext.Capabilities.Add[0] != "IPC_LOCK" {
		t.Error("rank has no IPC_LOCK")
	}
	shm := false
	for _, v := range tmpl.Spec.Volumes {
		if v.EmptyDir != nil && v.EmptyDir.Medium == corev1.StorageMediumMemory {
			shm = true
		}
	}
	if !shm {
		t.Error("rank has no memory-backed /dev/shm")
	}
	if tmpl.Annotations[MultusAnnotation] == "" && len(profile.Default().Spec.Networks) > 0 {
		t.Error("rank has no Multus annotation")
	}
	if !reflect.DeepEqual(c.Env, wantEnv) {
		t.Errorf("rank env %v, want the fabric's NCCL env %v (as v1)", c.Env, wantEnv)
	}
}

// The TrainJob of a torch recipe: runtime first, wired ranks in the trainer step, the TrainJob
// naming it; and of an MPI recipe: node workers running sshd, a launcher without GPU that
// depends on the nodes being Ready.
func TestTrainJob(t *testing.T) {
	b := renderWith(t, APITrainer, "qlora", profile.FabricIB)
	if len(b.Objects) != 2 {
		t.Fatalf("%d objects, want runtime + TrainJob", len(b.Objects))
	}
	rt := b.Objects[0].(*trainer.TrainingRuntime)
	job := b.Job().(*trainer.TrainJob)
	if job.Spec.RuntimeRef.Name != rt.Name || *job.Spec.RuntimeRef.Kind != trainer.TrainingRuntimeKind || rt.Namespace != "ns" {
		t.Errorf("runtimeRef %+v, runtime %s/%s", job.Spec.RuntimeRef, rt.Namespace, rt.Name)
	}
	if *job.Spec.Trainer.NumNodes != 3 || *job.Spec.Trainer.NumProcPerNode != 1 {
		t.Errorf("trainer %+v", job.Spec.Trainer)
	}
	if rt.Spec.MLPolicy.Torch == nil || *rt.Spec.MLPolicy.NumNodes != 3 {
		t.Errorf("mlPolicy %+v", rt.Spec.MLPolicy)
	}
	rjs := rt.Spec.Template.Spec.ReplicatedJobs
	if len(rjs) != 1 || rjs[0].Name != "node" || rjs[0].Replicas != 1 || rjs[0].Template.Labels[trainerAncestorLabel] != "trainer" {
		t.Fatalf("replicated jobs %+v", rjs)
	}
	pod := rjs[0].Template.Spec.Template
	if pod.Spec.Containers[0].Name != "node" || pod.Spec.RestartPolicy != corev1.RestartPolicyNever {
		t.Errorf("container %s restartPolicy %s", pod.Spec.Containers[0].Name, pod.Spec.RestartPolicy)
	}
	checkRank(t, pod, envOf(t, "qlora"))

	b = renderWith(t, APITrainer, "allreduce", profile.FabricIB)
	rt = b.Objects[0].(*trainer.TrainingRuntime)
	rjs = rt.Spec.Template.Spec.ReplicatedJobs
	if len(rjs) != 2 || rjs[0].Name != "node" || rjs[1].Name != "launcher" {
		t.Fatalf("replicated jobs %+v", rjs)
	}
	if d := rjs[1].DependsOn; len(d) != 1 || d[0].Name != "node" || d[0].Status != jobsetv1alpha2.DependencyReady {
		t.Errorf("launcher dependsOn %+v", d)
	}
	if rjs[1].Template.Labels[trainerAncestorLabel] != "trainer" || rjs[0].Template.Labels[trainerAncestorLabel] != "" {
		t.Error("the launcher, not the nodes, is the trainer step of an MPI runtime")
	}
	if rt.Spec.MLPolicy.NumNodes != nil {
		t.Errorf("MPI runtime numNodes %d: the Trainer would run that many launchers", *rt.Spec.MLPolicy.NumNodes)
	}
	if tj := b.Job().(*trainer.TrainJob); *tj.Spec.Trainer.NumNodes != 3 {
		t.Errorf("TrainJob numNodes %d, want the 3 workers", *tj.Spec.Trainer.NumNodes)
	}
	mpi := rt.Spec.MLPolicy.MPI
	if mpi == nil || *mpi.SSHAuthMountPath != "/root/.ssh" || *mpi.RunLauncherAsNode || *mpi.NumProcPerNode != 1 {
		t.Errorf("mlPolicy.mpi %+v", mpi)
	}
	node := rjs[0].Template.Spec.Template
	if strings.Join(node.Spec.Containers[0].Command, " ") != "/usr/sbin/sshd -De -o StrictModes=no" {
		t.Errorf("node command %v", node.Spec.Containers[0].Command)
	}
	checkRank(t, node, envOf(t, "allreduce"))
	for k := range rjs[1].Template.Spec.Template.Spec.Containers[0].Resources.Limits {
		t.Errorf("launcher has a limit on %s", k)
	}
}

// A held-back launcher is explained while workers are not all Ready, and only then.
func TestLauncherWait(t *testing.T) {
	pod := func(labels map[string]string, ready bool) corev1.Pod {
		p := corev1.Pod{}
		p.Labels = labels
		st := corev1.ConditionFalse
		if ready {
			st = corev1.ConditionTrue
		}
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: st}}
		return p
	}
	worker := func(ready bool) corev1.Pod { return pod(map[string]string{mpiv2beta1.JobRoleLabel: "worker"}, ready) }
	node := func(ready bool) corev1.Pod { return pod(map[string]string{ReplicatedJobLabel: "node"}, ready) }
	mpiJob, _ := ToUnstructured(renderWith(t, APIMPIOperator, "allreduce", profile.FabricIB).Job())
	mpiTJ, _ := ToUnstructured(renderWith(t, APITrainer, "allreduce", profile.FabricIB).Job())
	torchTJ, _ := ToUnstructured(renderWith(t, APITrainer, "qlora", profile.FabricIB).Job())
	if w := launcherWait(mpiJob, []corev1.Pod{worker(true), worker(false)}); !strings.Contains(w, "1/2 worker(s) Ready") || !strings.Contains(w, "WaitForWorkersReady") {
		t.Errorf("v2beta1: %q", w)
	}
	if s := SnapshotOf(mpiJob, []corev1.Pod{worker(true), worker(false)}); !strings.Contains(s.Waiting, "1/2 worker(s) Ready") || !strings.Contains(s.Message, s.Waiting) {
		t.Errorf("snapshot: waiting %q, message %q", s.Waiting, s.Message)
	}
	if w := launcherWait(mpiJob, []corev1.Pod{worker(true), worker(true)}); w != "" {
		t.Errorf("all Ready: %q", w)
	}
	if w := launcherWait(mpiJob, []corev1.Pod{pod(map[string]string{mpiv2beta1.JobRoleLabel: "launcher"}, false), worker(false)}); w != "" {
		t.Errorf("launcher exists: %q", w)
	}
	if w := launcherWait(mpiTJ, []corev1.Pod{node(false), node(false), node(true)}); !strings.Contains(w, "1/3 node pod(s) Ready") {
		t.Errorf("TrainJob MPI: %q", w)
	}
	if w := launcherWait(torchTJ, []corev1.Pod{node(false)}); w != "" {
		t.Errorf("torch TrainJob has no launcher: %q", w)
	}
}

// Pods of every controller sort launcher/master first, workers by index, and the default log
// pod is the launcher, the master, or a torch TrainJob's node 0.
func TestReplicaLabels(t *testing.T) {
	pod := func(name string, labels, ann map[string]string) corev1.Pod {
		p := corev1.Pod{}
		p.Name, p.Labels, p.Annotations = name, labels, ann
		return p
	}
	cases := []struct {
		name         string
		pods         []corev1.Pod
		sorted, lead string
	}{
		{"v1 pytorch", []corev1.Pod{
			pod("w1", map[string]string{"training.kubeflow.org/replica-type": "worker", "training.kubeflow.org/replica-index": "1"}, nil),
			pod("m0", map[string]string{"training.kubeflow.org/replica-type": "master", "training.kubeflow.org/replica-index": "0"}, nil),
			pod("w0", map[string]string{"training.kubeflow.org/replica-type": "worker", "training.kubeflow.org/replica-index": "0"}, nil),
		}, "m0 w0 w1", "m0"},
		// mpi-operator v0.8.0: job-role, the launcher has no replica-index.
		{"v2beta1", []corev1.Pod{
			pod("w1", map[string]string{mpiv2beta1.JobRoleLabel: "worker", mpiv2beta1.ReplicaIndexLabel: "1"}, nil),
			pod("w0", map[string]string{mpiv2beta1.JobRoleLabel: "worker", mpiv2beta1.ReplicaIndexLabel: "0"}, nil),
			pod("l", map[string]string{mpiv2beta1.JobRoleLabel: "launcher"}, nil),
		}, "l w0 w1", "l"},
		// JobSet: replicatedjob-name, the Job controller's completion index (label, or annotation on older clusters).
		{"trainjob torch", []corev1.Pod{
			pod("n2", map[string]string{ReplicatedJobLabel: "node", CompletionIndexLabel: "2"}, nil),
			pod("n0", map[string]string{ReplicatedJobLabel: "node"}, map[string]string{CompletionIndexLabel: "0"}),
			pod("n1", map[string]string{ReplicatedJobLabel: "node", CompletionIndexLabel: "1"}, nil),
		}, "n0 n1 n2", "n0"},
		{"trainjob mpi", []corev1.Pod{
			pod("n1", map[string]string{ReplicatedJobLabel: "node", CompletionIndexLabel: "1"}, nil),
			pod("l", map[string]string{ReplicatedJobLabel: "launcher", CompletionIndexLabel: "0"}, nil),
			pod("n0", map[string]string{ReplicatedJobLabel: "node", CompletionIndexLabel: "0"}, nil),
		}, "l n0 n1", "l"},
	}
	for _, c := range cases {
		SortPods(c.pods)
		var names []string
		for _, p := range c.pods {
			names = append(names, p.Name)
		}
		if got := strings.Join(names, " "); got != c.sorted {
			t.Errorf("%s: sorted %s, want %s", c.name, got, c.sorted)
		}
		sel, err := SelectPods("j", c.pods, LogSelection{Index: -1})
		if err != nil || len(sel) != 1 || sel[0].Name != c.lead {
			t.Errorf("%s: default log pod %v %v, want %s", c.name, sel, err, c.lead)
		}
	}
}

// A TrainJob's name must be an RFC 1035 label (the CRD's rule); the v1 MPIJob, which derives
// no DNS-1035 name from it, takes a leading digit (see TestDigitFirstJobName for the others).
func TestTrainJobName(t *testing.T) {
	r := loadRecipe(t, "qlora")
	if _, err := trainJob.Build(r, profile.Default(), Options{Name: "1run"}); err == nil || !strings.Contains(err.Error(), "start with a lower-case letter") {
		t.Errorf("TrainJob named 1run: %v", err)
	}
	if _, err := Backends[1].Build(loadRecipe(t, "allreduce"), profile.Default(), Options{Name: "1run"}); err != nil {
		t.Errorf("v1 MPIJob named 1run: %v", err)
	}
}

// TrainJob status to ain's phases: conditions first, then jobsStatus (Jobs, not pods).
func TestTrainJobState(t *testing.T) {
	tj := func(status string) *unstructured.Unstructured {
		u := &unstructured.Unstructured{}
		if err := u.UnmarshalJSON([]byte(`{"apiVersion":"trainer.kubeflow.org/v1alpha1","kind":"TrainJob","metadata":{"name":"x"},"status":` + status + `}`)); err != nil {
			t.Fatal(err)
		}
		return u
	}
	for status, want := range map[string]string{
		`{}`: PhasePending,
		`{"jobsStatus":[{"name":"node","active":1,"ready":0}]}`:                                          PhaseCreated,
		`{"jobsStatus":[{"name":"node","active":1,"ready":1}]}`:                                          PhaseRunning,
		`{"jobsStatus":[{"name":"node","active":1,"ready":0},{"name":"launcher","active":0,"ready":0}]}`: PhaseCreated,
		`{"conditions":[{"type":"Complete","status":"True","reason":"JobSetCompleted","message":"done","lastTransitionTime":"2026-12-03T10:00:00Z"}],"jobsStatus":[{"name":"node","succeeded":1}]}`: PhaseSucceeded,
		`{"conditions":[{"type":"Failed","status":"True","reason":"FailedJobs","message":"node failed","lastTransitionTime":"2026-12-03T10:00:00Z"}]}`:                                              PhaseFailed,
		`{"conditions":[{"type":"Suspended","status":"True","reason":"Suspended","message":"","lastTransitionTime":"2026-12-03T10:00:00Z"}]}`:                                                       PhaseSuspended,
		`{"conditions":[{"type":"Complete","status":"False","reason":"x","message":"","lastTransitionTime":"2026-12-03T10:00:00Z"}],"jobsStatus":[{"name":"node","ready":1}]}`:                      PhaseRunning,
	} {
		st := trainJob.State(tj(status))
		if st.Phase != want {
			t.Errorf("%s: phase %s, want %s", status, st.Phase, want)
		}
		if Terminal(want) && st.Finished.IsZero() {
			t.Errorf("%s: no finish time", status)
		}
	}
}

// The operator creates workers before the master: the default selection then finds no lead pod,
// which is "not created yet" (NoLead, with each pod's phase), not a bad --replica; an explicit
// selection that matches nothing stays a plain mismatch.
func TestSelectPodsNoLeadYet(t *testing.T) {
	w := func(i string) corev1.Pod {
		p := corev1.Pod{}
		p.Name = "w" + i
		p.Labels = map[string]string{"training.kubeflow.org/replica-type": "worker", "training.kubeflow.org/replica-index": i}
		p.Status.Phase = corev1.PodPending
		return p
	}
	pods := []corev1.Pod{w("0"), w("1")}
	_, err := SelectPods("pend", pods, LogSelection{Index: -1})
	var nm *NoPodMatchError
	if !errors.As(err, &nm) || !nm.NoLead || err.Error() != "pend has no master, launcher or node-0 pod yet (it has worker-0 Pending, worker-1 Pending)" {
		t.Errorf("default selection without a master: %v", err)
	}
	_, err = SelectPods("pend", pods, LogSelection{Replica: "worker", Index: 5})
	if !errors.As(err, &nm) || nm.NoLead || err.Error() != "no pod of pend matches (it has worker-0, worker-1)" {
		t.Errorf("--replica worker --index 5: %v", err)
	}
}
