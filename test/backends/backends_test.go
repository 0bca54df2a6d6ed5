// Package backends_test runs ain's job commands end to end (in-process command tree) on a sandbox
// of the current stack: the real mpi-operator v0.8.0, JobSet v0.12.0 and Kubeflow Trainer v2.3.0
// controllers and webhooks on a real API server, with simulated nodes and pod output. It checks
// that ain picks the v2beta1 MPIJob and the TrainJob by discovery, that the API server admits what
// ain renders (server-side dry run through the webhooks), and that train, bench allreduce, logs,
// status and delete work on them.
package backends_test

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/ain-hpc/ain/internal/cli"
	"github.com/ain-hpc/ain/pkg/jobs"
	"github.com/ain-hpc/ain/pkg/profile"
	"github.com/ain-hpc/ain/pkg/recipe"
	"github.com/ain-hpc/ain/pkg/sandbox"
	"github.com/ain-hpc/ain/pkg/sandbox/sandboxtest"
)

func TestMain(m *testing.M) {
	sandboxtest.Main(m, sandbox.Config{Nodes: 3, Stack: sandbox.StackCurrent})
}

// ain runs the command tree in-process against the sandbox in namespace ns (no namespace: the
// sandbox's default).
func ain(t *testing.T, sb *sandboxtest.Sandbox, ns string, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	home := t.TempDir()
	a := &cli.App{Streams: cli.Streams{In: strings.NewReader(""), Out: &out, Err: &errb}, Now: time.Now,
		Getenv: func(k string) string { return map[string]string{"HOME": home}[k] }}
	full := []string{"ain", "--kubeconfig", sb.Kubeconfig}
	if ns != "" {
		full = append(full, "-n", ns)
	}
	code := a.Run(context.Background(), append(full, args...))
	t.Logf("ain %s -> exit %d\nstderr:\n%s", strings.Join(args, " "), code, errb.String())
	return code, out.String(), errb.String()
}

// Render asks the sandbox which APIs it serves: v2beta1 MPIJob with WaitForWorkersReady for the
// MPI recipe, a TrainJob plus its TrainingRuntime for the torch recipe; the API server admits
// both (server-side dry run through the mpi-operator's CRD schema and the Trainer's webhooks).
func TestRenderAndAdmitCurrentStack(t *testing.T) {
	sb := sandboxtest.Get(t)
	ns := sb.Namespace(t)
	code, out, errOut := ain(t, sb, ns, "render", "allreduce", "-o", "yaml")
	if code != 0 || !strings.Contains(out, "apiVersion: kubeflow.org/v2beta1") || !strings.Contains(out, "kind: MPIJob") ||
		!strings.Contains(out, "launcherCreationPolicy: WaitForWorkersReady") || !strings.Contains(errOut, "served by") {
		t.Fatalf("render allreduce: exit %d\n%s\n%s", code, out, errOut)
	}
	code, out, _ = ain(t, sb, ns, "render", "qlora", "-o", "yaml")
	if code != 0 || !strings.Contains(out, "kind: TrainingRuntime") || !strings.Contains(out, "kind: TrainJob") || !strings.Contains(out, "apiVersion: trainer.kubeflow.org/v1alpha1") {
		t.Fatalf("render qlora: exit %d\n%s", code, out)
	}
	// Server dry run of the MPIJob: admitted, nothing created.
	code, out, errOut = ain(t, sb, ns, "train", "allreduce", "--dry-run=server", "-o", "yaml")
	if code != 0 || !strings.Contains(errOut, "the API server accepted it") || !strings.Contains(out, "sshAuthMountPath: /root/.ssh") {
		t.Fatalf("dry-run allreduce: exit %d\n%s", code, errOut)
	}
	// The TrainJob: its runtime first (the Trainer's webhook checks a TrainJob against an existing
	// runtime), so a dry run with no runtime says it did not send the TrainJob; with the runtime
	// applied, the TrainJob itself is admitted.
	code, _, errOut = ain(t, sb, ns, "train", "qlora", "--dry-run=server")
	if code != 0 || !strings.Contains(errOut, "TrainJob/qlora not sent") {
		t.Fatalf("dry-run qlora without runtime: exit %d\n%s", code, errOut)
	}
	r, err := recipe.Load("qlora", nil)
	if err != nil {
		t.Fatal(err)
	}
	be, _ := jobs.Choose(r, jobs.Served{}, jobs.APITrainer)
	b, err := be.Build(r, profile.Default(), jobs.Options{Namespace: ns})
	if err != nil {
		t.Fatal(err)
	}
	cl := &jobs.Cluster{Kube: sb.Clientset(t), Dynamic: sb.Dynamic(t), Namespace: ns}
	if _, err := cl.Apply(context.Background(), b.Objects[:1], false); err != nil {
		t.Fatalf("applying the runtime: %v", err)
	}
	code, out, errOut = ain(t, sb, ns, "train", "qlora", "--dry-run=server", "-o", "yaml")
	if code != 0 || strings.Contains(errOut, "not sent") || !strings.Contains(out, "kind: TrainJob") {
		t.Fatalf("dry-run qlora with its runtime: exit %d\n%s\n%s", code, out, errOut)
	}
	if l, err := sb.Dynamic(t).Resource(jobs.TrainJobGVR).Namespace(ns).List(context.Background(), metav1.ListOptions{}); err != nil || len(l.Items) != 0 {
		t.Errorf("a dry run created %d TrainJob(s) (%v)", len(l.Items), err)
	}
	// Forcing the legacy API here is refused with why, and the hint is the served API.
	code, _, _ = ain(t, sb, ns, "render", "allreduce", "--api", "training-operator")
	if code != 0 {
		t.Errorf("render --api training-operator (forced, no check): exit %d", code)
	}
	code, _, errOut = ain(t, sb, ns, "train", "allreduce", "--api", "training-operator", "--dry-run=server")
	if code != 2 || !strings.Contains(errOut, "one CRD owns mpijobs.kubeflow.org") || !strings.Contains(errOut, "--api mpi-operator") {
		t.Errorf("v1 forced on the current stack: exit %d\n%s", code, errOut)
	}
}

// rankWiring checks a GPU rank pod created by the controller: GPU and RDMA, IPC_LOCK, /dev/shm
// and the NCCL environment ain rendered.
func rankWiring(t *testing.T, p corev1.Pod) {
	t.Helper()
	var c *corev1.Container
	for i := range p.Spec.Containers {
		if _, ok := p.Spec.Containers[i].Resources.Limits["nvidia.com/gpu"]; ok {
			c = &p.Spec.Containers[i]
		}
	}
	if c == nil {
		t.Fatalf("%s: no container with a GPU", p.Name)
	}
	rdma := false
	for k := range c.Resources.Limits {
		rdma = rdma || strings.HasPrefix(string(k), "rdma/")
	}
	ipc := c.SecurityContext != nil && c.SecurityContext.Capabilities != nil && len(c.SecurityContext.Capabilities.Add) > 0 && c.SecurityContext.Capabilities.Add[0] == "IPC_LOCK"
	shm := false
	for _, v := range p.Spec.Volumes {
		shm = shm || (v.EmptyDir != nil && v.EmptyDir.Medium == corev1.StorageMediumMemory)
	}
	nccl := false
	for _, e := range c.Env {
		nccl = nccl || e.Name == "NCCL_DEBUG"
	}
	if !rdma || !ipc || !shm || !nccl {
		t.Errorf("%s: rdma %v IPC_LOCK %v /dev/shm %v NCCL env %v", p.Name, rdma, ipc, shm, nccl)
	}
}

// ain train on both new APIs reaches Succeeded through the real controllers; the pods carry the
// fabric wiring; logs, status and delete work (delete also removes the run's TrainingRuntime).
func TestTrainCurrentStack(t *testing.T) {
	sb := sandboxtest.Get(t)
	ns := sb.Namespace(t)
	cs := sb.Clientset(t)
	// qlora mounts the shared NFS claim; the sandbox makes it in "default" only.
	if err := sandbox.EnsureSharedPVC(context.Background(), sb.REST, ns, sandbox.DefaultSharedClaim); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ recipe, kind, selector string }{
		{"qlora", "TrainJob", jobs.JobSetNameLabel + "=qlora"},
		{"allreduce", "MPIJob", "training.kubeflow.org/job-name=allreduce"},
	} {
		code, out, errOut := ain(t, sb, ns, "train", c.recipe, "--timeout", "3m")
		if code != 0 || !strings.Contains(out+errOut, "Succeeded") {
			t.Fatalf("train %s: exit %d\n%s\n%s", c.recipe, code, out, errOut)
		}
		pods, err := cs.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{LabelSelector: c.selector})
		if err != nil || len(pods.Items) == 0 {
			t.Fatalf("%s: pods %v %v", c.recipe, len(pods.Items), err)
		}
		ranks := 0
		for _, p := range pods.Items {
			if jobs.Replica(&p) != "launcher" {
				rankWiring(t, p)
				ranks++
			}
		}
		t.Logf("%s: %d pods, %d ranks", c.recipe, len(pods.Items), ranks)
		code, out, _ = ain(t, sb, ns, "status", c.recipe)
		if code != 0 || !strings.Contains(out, c.kind+" "+ns+"/"+c.recipe+": Succeeded") {
			t.Errorf("status %s: exit %d\n%s", c.recipe, code, out)
		}
		code, out, _ = ain(t, sb, ns, "logs", c.recipe)
		if code != 0 || strings.TrimSpace(out) == "" {
			t.Errorf("logs %s: exit %d, %d bytes", c.recipe, code, len(out))
		}
		// The doctor reads the job's pods through the backend: every rank's NCCL log, and the
		// MPI launcher's log.
		code, out, _ = ain(t, sb, ns, "doctor", "nccl-log", c.recipe)
		if code != 0 || !strings.Contains(strings.ToLower(out), "ib") {
			t.Errorf("doctor nccl-log %s: exit %d\n%s", c.recipe, code, out)
		}
		if c.kind == "MPIJob" {
			code, out, _ = ain(t, sb, ns, "doctor", "launcher", c.recipe)
			if code != 0 || strings.TrimSpace(out) == "" {
				t.Errorf("doctor launcher %s: exit %d\n%s", c.recipe, code, out)
			}
		}
		code, out, _ = ain(t, sb, ns, "list")
		if code != 0 || !strings.Contains(out, c.recipe) {
			t.Errorf("list: exit %d\n%s", code, out)
		}
		code, out, _ = ain(t, sb, ns, "delete", c.recipe, "--yes")
		if code != 0 || !strings.Contains(out, "deleted "+c.kind+"/"+c.recipe) {
			t.Errorf("delete %s: exit %d\n%s", c.recipe, code, out)
		}
		if c.kind == "TrainJob" && !strings.Contains(out, "TrainingRuntime/qlora") {
			t.Errorf("delete did not remove the run's TrainingRuntime: %s", out)
		}
	}
}

// ain bench allreduce --algo all runs its variants as v2beta1 MPIJobs, and --api trainer as
// TrainJobs on ain's MPI runtime.
func TestBenchCurrentStack(t *testing.T) {
	sb := sandboxtest.Get(t)
	ns := sb.Namespace(t)
	code, out, errOut := ain(t, sb, ns, "bench", "allreduce", "--algo", "all", "--out", t.TempDir()+"/r", "--timeout", "8m")
	if code != 0 || !strings.Contains(errOut, "job API: kubeflow.org/v2beta1 MPIJob") || !strings.Contains(errOut, "[3/3] tree: Succeeded") {
		t.Fatalf("bench --algo all: exit %d\n%s\n%s", code, out, errOut)
	}
	code, out, errOut = ain(t, sb, ns, "bench", "allreduce", "--algo", "ring", "--api", "trainer", "--out", t.TempDir()+"/t", "--timeout", "5m", "--keep-jobs")
	if code != 0 || !strings.Contains(errOut, "applied TrainJob") || !strings.Contains(errOut, "[1/1] ring: Succeeded") {
		t.Fatalf("bench --api trainer: exit %d\n%s\n%s", code, out, errOut)
	}
	// One launcher and three nodes: the Trainer sizes the launcher from the runtime.
	pods, err := sb.Clientset(t).CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{LabelSelector: jobs.ReplicatedJobLabel + "=launcher"})
	if err != nil || len(pods.Items) != 1 {
		t.Errorf("%d launcher pods (%v), want 1", len(pods.Items), err)
	}
	if strings.Count(errOut, "-launcher-0-") > 0 && strings.Contains(errOut, "-launcher-0-1-") {
		t.Errorf("a second launcher pod ran:\n%s", errOut)
	}
}

// WaitForWorkersReady on the real mpi-operator: with workers that become Ready only 20 s after
// they start (the late-workers scenario), the launcher pod is created after every worker is
// Ready, and the job still succeeds; the watch view says why the launcher is missing meanwhile.
func TestWaitForWorkersReadyLateWorkers(t *testing.T) {
	sb := sandboxtest.Get(t)
	sb.UseScenario(t, "late-workers")
	ns := sb.Namespace(t)
	cs := sb.Clientset(t)
	code, _, errOut := ain(t, sb, ns, "train", "allreduce", "--no-wait")
	if code != 0 || !strings.Contains(errOut, "applied MPIJob") {
		t.Fatalf("train --no-wait: exit %d\n%s", code, errOut)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	var lastReady, launcherCreated, firstWorker time.Time
	sawWait := false
	for ctx.Err() == nil && launcherCreated.IsZero() {
		pods, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "training.kubeflow.org/job-name=allreduce"})
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range pods.Items {
			switch jobs.Replica(&p) {
			case "launcher":
				launcherCreated = p.CreationTimestamp.Time
			case "worker":
				if firstWorker.IsZero() || p.CreationTimestamp.Time.Before(firstWorker) {
					firstWorker = p.CreationTimestamp.Time
				}
				for _, c := range p.Status.Conditions {
					if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue && c.LastTransitionTime.Time.After(lastReady) {
						lastReady = c.LastTransitionTime.Time
					}
				}
			}
		}
		if launcherCreated.IsZero() && !firstWorker.IsZero() && !sawWait {
			if _, out, _ := ain(t, sb, ns, "status", "allreduce"); strings.Contains(out, "WaitForWorkersReady") {
				sawWait = true
			}
		}
		time.Sleep(time.Second)
	}
	if launcherCreated.IsZero() || lastReady.IsZero() {
		t.Fatalf("launcher created %v, last worker Ready %v", launcherCreated, lastReady)
	}
	// Timestamps are whole seconds: the launcher may share the last Ready's second, not precede it.
	if launcherCreated.Before(lastReady) || launcherCreated.Sub(firstWorker) < 15*time.Second {
		t.Errorf("launcher created %s, workers created %s, last Ready %s: the launcher did not wait", launcherCreated, firstWorker, lastReady)
	}
	if !sawWait {
		t.Error("ain status never explained the missing launcher (WaitForWorkersReady)")
	}
	t.Logf("workers created %s, last Ready %s, launcher created %s", firstWorker.Format(time.TimeOnly), lastReady.Format(time.TimeOnly), launcherCreated.Format(time.TimeOnly))
}

// train merge (the one-pod qlora-merge recipe) runs as a TrainJob too, and release deletes every
// ain job of the namespace whatever its API (here a TrainJob and a v2beta1 MPIJob). The base model
// is one the sandbox's shared claim holds: the preflight's model check refuses one it lacks.
func TestMergeAndReleaseCurrentStack(t *testing.T) {
	sb := sandboxtest.Get(t)
	ns := sb.Namespace(t)
	if err := sandbox.EnsureSharedPVC(context.Background(), sb.REST, ns, sandbox.DefaultSharedClaim); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := ain(t, sb, ns, "train", "merge", "--adapter", "/shared/adapters/a", "--base", "/shared/models/Qwen2.5-7B-Instruct", "--timeout", "3m")
	if code != 0 || !strings.Contains(errOut, "applied TrainJob") || !strings.Contains(out+errOut, "Succeeded") {
		t.Fatalf("train merge: exit %d\n%s\n%s", code, out, errOut)
	}
	if code, _, errOut = ain(t, sb, ns, "train", "allreduce", "--timeout", "3m"); code != 0 {
		t.Fatalf("train allreduce: exit %d\n%s", code, errOut)
	}
	code, out, _ = ain(t, sb, ns, "release", "--yes")
	if code != 0 || !strings.Contains(out, "released TrainJob/qlora-merge") || !strings.Contains(out, "released MPIJob/allreduce") {
		t.Errorf("release: exit %d\n%s", code, out)
	}
	for _, gvr := range []schema.GroupVersionResource{jobs.TrainJobGVR, jobs.MPIJobV2GVR, jobs.TrainingRuntimeGVR} {
		l, err := sb.Dynamic(t).Resource(gvr).Namespace(ns).List(context.Background(), metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, u := range l.Items {
			if u.GetDeletionTimestamp() == nil {
				t.Errorf("%s %s left after release", gvr.Resource, u.GetName())
			}
		}
	}
}

// The preflight's CRD check says which API each workload runs as on this cluster.
func TestPreflightCurrentStack(t *testing.T) {
	sb := sandboxtest.Get(t)
	ns := sb.Namespace(t)
	code, out, _ := ain(t, sb, ns, "preflight", "--no-probes", "-o", "json")
	if code != 0 || !strings.Contains(out, "torch recipes run as trainer.kubeflow.org/v1alpha1 TrainJob") ||
		!strings.Contains(out, "mpi recipes run as kubeflow.org/v2beta1 MPIJob") || !strings.Contains(out, "trainjobs.trainer.kubeflow.org/v1alpha1 served") {
		t.Errorf("preflight: exit %d\n%s", code, out)
	}
	code, out, _ = ain(t, sb, ns, "preflight", "allreduce", "--no-probes", "--api", "training-operator", "-o", "json")
	if code != 4 || !strings.Contains(out, "one CRD owns mpijobs.kubeflow.org") || strings.Contains(out, "install the training-operator") {
		t.Errorf("preflight --api training-operator: exit %d\n%s", code, out)
	}
}

// Issue 19: the preflight PASSed with the job controller down. JobSet (what a TrainJob runs as)
// is known alive only by its leader Lease (its webhook validates JobSets, which ain's users do
// not create): the test stops the sandbox's real JobSet controller by pid, and the preflight of a
// torch recipe (a TrainJob here) FAILs once the Lease is past its duration (15 s, plus 10 s
// grace), naming the Lease; started again, JobSet takes the Lease over and the preflight PASSes.
// The Trainer's own webhook answers the preflight's dry run throughout.
func TestPreflightJobSetDown(t *testing.T) {
	sb := sandboxtest.Get(t)
	ns := sb.Namespace(t)
	// The qlora recipe mounts the shared claim; preflight FAILs a missing one (its volumes check).
	if err := sandbox.EnsureSharedPVC(context.Background(), sb.REST, ns, sandbox.DefaultSharedClaim); err != nil {
		t.Fatal(err)
	}
	code, out, _ := ain(t, sb, ns, "preflight", "qlora", "--no-probes")
	t.Logf("JobSet up:\n%s", out)
	if code != 0 || !strings.Contains(out, "the JobSet leads: Lease jobset-system/6d4f6a47.jobset.x-k8s.io renewed") ||
		!strings.Contains(out, "the Kubeflow Trainer leads: Lease kubeflow-system/trainer.kubeflow.org") ||
		!strings.Contains(out, `admission webhook "validator.trainjob.trainer.kubeflow.org" answers`) {
		t.Fatalf("JobSet up: exit %d", code)
	}
	start := sandboxtest.Stop(t, sb.Dir, "jobset")
	took, ok := sandboxtest.Poll(60*time.Second, 3*time.Second, func() bool {
		code, out, _ = ain(t, sb, ns, "preflight", "qlora", "--no-probes")
		return code != 0
	})
	if !ok {
		t.Fatalf("the preflight still passes 60 s after JobSet was stopped:\n%s", out)
	}
	t.Logf("the preflight FAILs %s after JobSet was stopped:\n%s", took.Round(time.Second), out)
	if code != 4 || !strings.Contains(out, "the JobSet is not running: its leader Lease jobset-system/6d4f6a47.jobset.x-k8s.io was last renewed") ||
		!strings.Contains(out, "jobs you submit will get no pods") {
		t.Errorf("exit %d, want 4 and the stale Lease named", code)
	}
	if took < 15*time.Second {
		t.Errorf("FAIL after %s: a Lease within its 15 s duration may belong to a running leader", took)
	}
	start()
	took, ok = sandboxtest.Poll(90*time.Second, 3*time.Second, func() bool {
		code, out, _ = ain(t, sb, ns, "preflight", "qlora", "--no-probes")
		return code == 0
	})
	if !ok {
		t.Fatalf("the preflight still fails 90 s after JobSet was started again:\n%s", out)
	}
	t.Logf("the preflight PASSes %s after JobSet was started again", took.Round(time.Second))
}
