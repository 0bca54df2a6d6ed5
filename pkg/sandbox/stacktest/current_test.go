// Package stacktest holds the integration tests of the sandbox's current stack (mpi-operator,
// JobSet, Kubeflow Trainer v2); the legacy stack's are in pkg/sandbox. One test binary runs one
// shared sandbox, hence a package of its own.
package stacktest

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	mpiv2 "github.com/kubeflow/mpi-operator/pkg/apis/kubeflow/v2beta1"
	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
	jobset "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	"github.com/ain-hpc/ain/pkg/sandbox"
	"github.com/ain-hpc/ain/pkg/sandbox/sandboxtest"
)

func TestMain(m *testing.M) {
	sandboxtest.Main(m, sandbox.Config{Nodes: 2, Stack: sandbox.StackCurrent})
}

var (
	mpiJobGVR   = mpiv2.SchemeGroupVersion.WithResource("mpijobs")
	trainJobGVR = trainer.GroupVersion.WithResource("trainjobs")
	jobSetGVR   = jobset.GroupVersion.WithResource("jobsets")
)

// TestCurrentStackServes checks that each controller of the current stack runs and answers its
// probe on loopback, that the API server serves the stack's job APIs and not kubeflow.org/v1,
// and that Trainer's built-in ClusterTrainingRuntimes were admitted through its webhook.
func TestCurrentStackServes(t *testing.T) {
	sb := sandboxtest.Get(t)
	if got := sb.State.Stack(); got != sandbox.StackCurrent {
		t.Fatalf("the sandbox runs the %s stack", got)
	}
	for _, name := range sandbox.StackCurrent.Controllers() {
		p := sb.State.Proc(name)
		if p == nil {
			t.Errorf("%s was not started", name)
			continue
		}
		path := "/readyz"
		if name == "mpi-operator" {
			path = "/healthz"
		}
		resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d%s", p.Ports["health"], path))
		if err != nil {
			t.Errorf("%s probe: %v\n%s", name, err, sb.ComponentLog(name, 20))
			continue
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Errorf("%s probe: %s\n%s", name, resp.Status, sb.ComponentLog(name, 20))
		}
	}
	if p := sb.State.Proc("training-operator"); p != nil {
		t.Errorf("the current stack started the training-operator (pid %d)", p.PID)
	}
	dc, err := discovery.NewDiscoveryClientForConfig(sb.REST)
	if err != nil {
		t.Fatal(err)
	}
	for gv, want := range map[string][]string{
		"kubeflow.org/v2beta1":          {"mpijobs"},
		"jobset.x-k8s.io/v1alpha2":      {"jobsets"},
		"trainer.kubeflow.org/v1alpha1": {"trainjobs", "trainingruntimes", "clustertrainingruntimes"},
	} {
		list, err := dc.ServerResourcesForGroupVersion(gv)
		if err != nil {
			t.Errorf("%s not served: %v", gv, err)
			continue
		}
		served := map[string]bool{}
		for _, r := range list.APIResources {
			served[r.Name] = true
		}
		for _, r := range want {
			if !served[r] {
				t.Errorf("%s does not serve %s", gv, r)
			}
		}
	}
	if _, err := dc.ServerResourcesForGroupVersion("kubeflow.org/v1"); err == nil {
		t.Error("kubeflow.org/v1 is served on the current stack")
	}
	ctr := sb.Dynamic(t).Resource(trainer.GroupVersion.WithResource("clustertrainingruntimes"))
	if _, err := ctr.Get(context.Background(), "torch-distributed", metav1.GetOptions{}); err != nil {
		t.Errorf("the built-in ClusterTrainingRuntime torch-distributed: %v", err)
	}
}

func toUnstructured(t *testing.T, obj runtime.Object, gvk schema.GroupVersionKind) *unstructured.Unstructured {
	t.Helper()
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		t.Fatal(err)
	}
	u := &unstructured.Unstructured{Object: m}
	u.SetGroupVersionKind(gvk)
	return u
}

func dryRun(dyn dynamic.Interface, gvr schema.GroupVersionResource, ns string, u *unstructured.Unstructured) error {
	_, err := dyn.Resource(gvr).Namespace(ns).Create(context.Background(), u, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
	return err
}

func trainJob(name string, nodes int32, env ...corev1.EnvVar) *trainer.TrainJob {
	return &trainer.TrainJob{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: trainer.TrainJobSpec{
			RuntimeRef: trainer.RuntimeRef{Name: "torch-distributed"},
			Trainer: &trainer.Trainer{
				NumNodes: ptr.To(nodes),
				Command:  []string{"torchrun", "train.py"},
				Env:      env,
				ResourcesPerNode: &corev1.ResourceRequirements{Limits: corev1.ResourceList{
					"nvidia.com/gpu": resource.MustParse("8"),
				}},
			},
		},
	}
}

func mpiJob(name string, workers int32, workerReadyAfter string) *mpiv2.MPIJob {
	podSpec := func(c corev1.Container) corev1.PodTemplateSpec {
		return corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{c}}}
	}
	worker := podSpec(corev1.Container{Name: "worker", Image: "nccl-tests", Command: []string{"/usr/sbin/sshd", "-De"},
		Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("8")}}})
	if workerReadyAfter != "" {
		worker.Annotations = map[string]string{sandbox.AnnoReadyAfter: workerReadyAfter}
	}
	return &mpiv2.MPIJob{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: mpiv2.MPIJobSpec{
			SlotsPerWorker:         ptr.To[int32](8),
			LauncherCreationPolicy: mpiv2.LauncherCreationPolicyWaitForWorkersReady,
			RunPolicy:              mpiv2.RunPolicy{CleanPodPolicy: ptr.To(mpiv2.CleanPodPolicyRunning)},
			MPIReplicaSpecs: map[mpiv2.MPIReplicaType]*mpiv2.ReplicaSpec{
				mpiv2.MPIReplicaTypeLauncher: {Replicas: ptr.To[int32](1), Template: podSpec(corev1.Container{
					Name: "launcher", Image: "nccl-tests",
					Command: []string{"mpirun", "-np", fmt.Sprint(8 * workers), "all_reduce_perf", "-b", "8", "-e", "8G"}})},
				mpiv2.MPIReplicaTypeWorker: {Replicas: ptr.To(workers), Template: worker},
			},
		},
	}
}

// TestCurrentStackAdmission sends server-side dry runs built from the real API types: valid jobs
// are admitted; an invalid TrainJob is refused by Trainer's validating webhook, an invalid JobSet
// by JobSet's, and an invalid v2beta1 MPIJob by the mpi-operator's CRD schema (the mpi-operator
// serves no webhook; it validates in its controller).
func TestCurrentStackAdmission(t *testing.T) {
	sb := sandboxtest.Get(t)
	ns := sb.Namespace(t)
	dyn := sb.Dynamic(t)
	tjGVK := trainer.GroupVersion.WithKind("TrainJob")
	if err := dryRun(dyn, trainJobGVR, ns, toUnstructured(t, trainJob("ok", 2), tjGVK)); err != nil {
		t.Errorf("a valid TrainJob was refused: %v\n%s", err, sb.ComponentLog("trainer", 20))
	}
	err := dryRun(dyn, trainJobGVR, ns, toUnstructured(t, trainJob("bad", 2, corev1.EnvVar{Name: "PET_NNODES", Value: "3"}), tjGVK))
	if err == nil || !strings.Contains(err.Error(), "validator.trainjob.trainer.kubeflow.org") || !strings.Contains(err.Error(), "reserved envs") {
		t.Errorf("a TrainJob setting the reserved PET_NNODES: want a refusal by Trainer's webhook, got %v", err)
	}

	mpiGVK := mpiv2.SchemeGroupVersion.WithKind("MPIJob")
	if err := dryRun(dyn, mpiJobGVR, ns, toUnstructured(t, mpiJob("ok", 2, ""), mpiGVK)); err != nil {
		t.Errorf("a valid v2beta1 MPIJob was refused: %v", err)
	}
	// The v0.8.0 CRD has an enum on mpiImplementation (OpenMPI, Intel, MPICH) but none on
	// launcherCreationPolicy: a misspelt policy is admitted, and the controller, which creates the
	// launcher at once only for AtStartup (mpi_job_controller.go), then waits for the workers.
	bad := mpiJob("bad", 2, "")
	bad.Spec.MPIImplementation = "OpenMP"
	err = dryRun(dyn, mpiJobGVR, ns, toUnstructured(t, bad, mpiGVK))
	if err == nil || !strings.Contains(err.Error(), "mpiImplementation") {
		t.Errorf("an MPIJob with mpiImplementation OpenMP: want a schema refusal naming the field, got %v", err)
	}

	jsGVK := jobset.GroupVersion.WithKind("JobSet")
	js := &jobset.JobSet{
		ObjectMeta: metav1.ObjectMeta{Name: "js"},
		Spec: jobset.JobSetSpec{ReplicatedJobs: []jobset.ReplicatedJob{{
			Name: "node", Replicas: 1,
			Template: batchJob(corev1.Container{Name: "c", Image: "busybox", Command: []string{"true"}}),
		}}},
	}
	if err := dryRun(dyn, jobSetGVR, ns, toUnstructured(t, js, jsGVK)); err != nil {
		t.Errorf("a valid JobSet was refused: %v\n%s", err, sb.ComponentLog("jobset", 20))
	}
	js.Spec.SuccessPolicy = &jobset.SuccessPolicy{Operator: jobset.OperatorAll, TargetReplicatedJobs: []string{"launcher"}}
	err = dryRun(dyn, jobSetGVR, ns, toUnstructured(t, js, jsGVK))
	if err == nil || !strings.Contains(err.Error(), "vjobset.kb.io") || !strings.Contains(err.Error(), "launcher") {
		t.Errorf("a JobSet whose success policy names a missing replicated job: want a refusal by JobSet's webhook, got %v", err)
	}
}

func batchJob(c corev1.Container) batchv1.JobTemplateSpec {
	return batchv1.JobTemplateSpec{Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{
		Spec: corev1.PodSpec{Containers: []corev1.Container{c}, RestartPolicy: corev1.RestartPolicyNever},
	}}}
}

// condition returns the status of the condition typ of a custom object ("" when absent).
func condition(u *unstructured.Unstructured, typ string) string {
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conds {
		cm, _ := c.(map[string]any)
		if cm["type"] == typ {
			s, _ := cm["status"].(string)
			return s
		}
	}
	return ""
}

func waitCondition(t *testing.T, sb *sandboxtest.Sandbox, gvr schema.GroupVersionResource, ns, name, typ string, timeout time.Duration) *unstructured.Unstructured {
	t.Helper()
	api := sb.Dynamic(t).Resource(gvr).Namespace(ns)
	deadline := time.Now().Add(timeout)
	for {
		u, err := api.Get(context.Background(), name, metav1.GetOptions{})
		if err == nil && condition(u, typ) == "True" {
			return u
		}
		if time.Now().After(deadline) {
			pods, _ := sb.Clientset(t).CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{})
			var ps []string
			for _, p := range pods.Items {
				ps = append(ps, p.Name+"="+string(p.Status.Phase))
			}
			status := "<none>"
			if u != nil {
				status = fmt.Sprint(u.Object["status"])
			}
			t.Fatalf("%s %s/%s not %s after %s (err %v); status %s; pods %v", gvr.Resource, ns, name, typ, timeout, err, status, ps)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

func podLog(t *testing.T, sb *sandboxtest.Sandbox, ns, pod string) string {
	t.Helper()
	rc, err := sb.Clientset(t).CoreV1().Pods(ns).GetLogs(pod, &corev1.PodLogOptions{}).Stream(context.Background())
	if err != nil {
		t.Fatalf("logs of %s: %v", pod, err)
	}
	defer rc.Close()
	b, _ := io.ReadAll(rc)
	return string(b)
}

// TestCurrentStackJobsRun runs a v2beta1 MPIJob and a TrainJob through the real controllers and
// the kwok stages: the MPIJob's workers become Ready late (6 s) and WaitForWorkersReady must hold
// the launcher's Job until they are; the launcher prints the nccl-tests table and the MPIJob
// succeeds; the TrainJob's JobSet runs its node Job (batch/v1, completed by the real Job
// controller) whose pods print the recorded torchrun output, and the TrainJob completes.
func TestCurrentStackJobsRun(t *testing.T) {
	sb := sandboxtest.Get(t)
	ns := sb.Namespace(t)
	dyn := sb.Dynamic(t)
	cs := sb.Clientset(t)
	ctx := context.Background()

	mj := toUnstructured(t, mpiJob("nccl", 2, "6s"), mpiv2.SchemeGroupVersion.WithKind("MPIJob"))
	if _, err := dyn.Resource(mpiJobGVR).Namespace(ns).Create(ctx, mj, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	tj := toUnstructured(t, trainJob("torch", 2), trainer.GroupVersion.WithKind("TrainJob"))
	if _, err := dyn.Resource(trainJobGVR).Namespace(ns).Create(ctx, tj, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// The launcher's Job must not exist before both workers are Ready.
	var workersReady time.Time
	// Generous: on a loaded 2-core machine the scheduler and kwok's stages lag (one CI run saw
	// 90 s pass); the assertion is about order, not speed.
	deadline := time.Now().Add(180 * time.Second)
	for workersReady.IsZero() {
		pods, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "training.kubeflow.org/job-name=nccl,training.kubeflow.org/job-role=worker"})
		if err != nil {
			t.Fatal(err)
		}
		if time.Now().After(deadline) {
			var states []string
			for _, p := range pods.Items {
				states = append(states, fmt.Sprintf("%s %s node=%q conditions=%v", p.Name, p.Status.Phase, p.Spec.NodeName, p.Status.Conditions))
			}
			t.Fatalf("the MPIJob's workers never became Ready; pods: %v\n%s\n%s", states, sb.ComponentLog("kube-scheduler", 10), sb.ComponentLog("mpi-operator", 20))
		}
		ready := 0
		var last time.Time
		for _, p := range pods.Items {
			for _, c := range p.Status.Conditions {
				if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue {
					ready++
					if c.LastTransitionTime.After(last) {
						last = c.LastTransitionTime.Time
					}
				}
			}
		}
		if _, err := cs.BatchV1().Jobs(ns).Get(ctx, "nccl-launcher", metav1.GetOptions{}); err == nil && ready < 2 {
			t.Fatalf("the launcher's Job exists while %d of 2 workers are Ready (WaitForWorkersReady)", ready)
		}
		if ready == 2 {
			workersReady = last
		}
		time.Sleep(300 * time.Millisecond)
	}
	waitCondition(t, sb, mpiJobGVR, ns, "nccl", "Succeeded", 120*time.Second)
	launcherJob, err := cs.BatchV1().Jobs(ns).Get(ctx, "nccl-launcher", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// Kubernetes timestamps have one-second precision.
	if launcherJob.CreationTimestamp.Time.Before(workersReady.Truncate(time.Second)) {
		t.Errorf("launcher Job created at %s, before the workers were Ready at %s", launcherJob.CreationTimestamp, workersReady)
	}
	pods, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "training.kubeflow.org/job-name=nccl,training.kubeflow.org/job-role=launcher"})
	if err != nil || len(pods.Items) != 1 {
		t.Fatalf("launcher pods: %v, %v", pods, err)
	}
	if p := pods.Items[0]; p.Status.Phase != corev1.PodSucceeded {
		t.Errorf("launcher pod %s is %s", p.Name, p.Status.Phase)
	} else if log := podLog(t, sb, ns, p.Name); !strings.Contains(log, "all_reduce_perf") || !strings.Contains(log, "nccl-worker-1") {
		t.Errorf("launcher log lacks the nccl-tests run over the workers:\n%s", log)
	}

	// Created only after the MPIJob has succeeded: each of the two jobs holds its pods until both
	// of its own are Ready, and the two nodes have room for only two 8-GPU pods, so created together
	// they can each take one node and wait for ever (no gang scheduler runs here; CI saw it).
	// Trainer's built-in MPI runtime (deepspeed-distributed: mlPolicy.mpi, a "node" Job running
	// sshd and a "launcher" Job that dependsOn the nodes being Ready; the JobSet succeeds when the
	// launcher does, successPolicy targetReplicatedJobs [launcher]).
	mpiTJ := trainJob("deepspeed", 2)
	mpiTJ.Spec.RuntimeRef.Name = "deepspeed-distributed"
	mpiTJ.Spec.Trainer.Command = []string{"mpirun", "all_reduce_perf", "-b", "8", "-e", "8G"}
	if _, err := dyn.Resource(trainJobGVR).Namespace(ns).Create(ctx, toUnstructured(t, mpiTJ, trainer.GroupVersion.WithKind("TrainJob")), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	waitCondition(t, sb, trainJobGVR, ns, "torch", "Complete", 120*time.Second)
	nodes, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "jobset.sigs.k8s.io/jobset-name=torch"})
	if err != nil {
		t.Fatal(err)
	}
	if len(nodes.Items) != 2 {
		t.Fatalf("the TrainJob has %d pods, want 2 nodes", len(nodes.Items))
	}
	for _, p := range nodes.Items {
		if p.Status.Phase != corev1.PodSucceeded {
			t.Errorf("node pod %s is %s", p.Name, p.Status.Phase)
			continue
		}
		if log := podLog(t, sb, ns, p.Name); !strings.Contains(log, "torch/distributed/run.py") {
			t.Errorf("node pod %s log lacks the torchrun output:\n%s", p.Name, log)
		}
	}
	js, err := dyn.Resource(jobSetGVR).Namespace(ns).Get(ctx, "torch", metav1.GetOptions{})
	if err != nil || condition(js, "Completed") != "True" {
		t.Errorf("the TrainJob's JobSet is not Completed: %v %v", err, js)
	}

	waitCondition(t, sb, trainJobGVR, ns, "deepspeed", "Complete", 120*time.Second)
	launchers, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "jobset.sigs.k8s.io/jobset-name=deepspeed,jobset.sigs.k8s.io/replicatedjob-name=launcher"})
	if err != nil || len(launchers.Items) != 1 {
		t.Fatalf("the MPI TrainJob's launcher pods: %v %v", launchers, err)
	}
	if p := launchers.Items[0]; p.Status.Phase != corev1.PodSucceeded {
		t.Errorf("MPI TrainJob launcher %s is %s", p.Name, p.Status.Phase)
	} else if log := podLog(t, sb, ns, p.Name); !strings.Contains(log, "all_reduce_perf") {
		t.Errorf("MPI TrainJob launcher log lacks the nccl-tests run:\n%s", log)
	}
}

// listeners returns the local addresses (hex IP:port as in /proc/net/tcp*) on which process pid
// listens for TCP.
func listeners(t *testing.T, pid int) []string {
	t.Helper()
	inodes := map[string]bool{}
	fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		t.Fatalf("reading the sockets of pid %d: %v", pid, err)
	}
	for _, fd := range fds {
		target, err := os.Readlink(fmt.Sprintf("/proc/%d/fd/%s", pid, fd.Name()))
		if err == nil && strings.HasPrefix(target, "socket:[") {
			inodes[strings.TrimSuffix(strings.TrimPrefix(target, "socket:["), "]")] = true
		}
	}
	var out []string
	for _, f := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		data, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(data), "\n")[1:] {
			fs := strings.Fields(line)
			// sl local_address rem_address st ... inode (field 9); st 0A is LISTEN.
			if len(fs) > 9 && fs[3] == "0A" && inodes[fs[9]] {
				out = append(out, fs[1])
			}
		}
	}
	return out
}

// TestCurrentStackLoopbackOnly: every socket the stack's controllers listen on is on 127.0.0.1
// (0100007F in /proc/net/tcp), none on all interfaces or IPv6.
func TestCurrentStackLoopbackOnly(t *testing.T) {
	sb := sandboxtest.Get(t)
	for _, name := range sandbox.StackCurrent.Controllers() {
		p := sb.State.Proc(name)
		if p == nil {
			t.Fatalf("%s not started", name)
		}
		ls := listeners(t, p.PID)
		if len(ls) == 0 {
			t.Errorf("%s (pid %d) listens on nothing", name, p.PID)
		}
		for _, l := range ls {
			if !strings.HasPrefix(l, "0100007F:") {
				t.Errorf("%s (pid %d) listens on %s, not 127.0.0.1", name, p.PID, l)
			}
		}
	}
}

// TestCurrentStackControllersLead checks that each controller holds the leader Lease a real
// install holds (name, namespace), which ain preflight's operator check reads: without the
// mpi-operator's, a healthy sandbox WARNed that the operator may not run.
func TestCurrentStackControllersLead(t *testing.T) {
	sb := sandboxtest.Get(t)
	cs := kubernetes.NewForConfigOrDie(sb.REST)
	for _, l := range []struct{ ns, name string }{
		{"mpi-operator", "mpi-operator"},
		{"kubeflow-system", "trainer.kubeflow.org"},
		{"jobset-system", "6d4f6a47.jobset.x-k8s.io"},
	} {
		var holder string
		for i := 0; i < 20 && holder == ""; i++ {
			lease, err := cs.CoordinationV1().Leases(l.ns).Get(context.Background(), l.name, metav1.GetOptions{})
			if err == nil && lease.Spec.HolderIdentity != nil {
				holder = *lease.Spec.HolderIdentity
				break
			}
			time.Sleep(500 * time.Millisecond)
		}
		if holder == "" {
			t.Errorf("no holder of Lease %s/%s", l.ns, l.name)
		}
	}
}
