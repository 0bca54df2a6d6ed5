// Package legacy holds the real-pod tests of the legacy stack (training-operator v1.8.1,
// kubeflow.org/v1 PyTorchJob): a package of its own because one test binary runs one shared
// sandbox, and this one runs the other stack.
package legacy

import (
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ain-hpc/ain/pkg/jobs"
	"github.com/ain-hpc/ain/pkg/recipe"
	"github.com/ain-hpc/ain/pkg/sandbox"
	"github.com/ain-hpc/ain/pkg/sandbox/realtest"
	"github.com/ain-hpc/ain/pkg/sandbox/sandboxtest"
)

func TestMain(m *testing.M) {
	sandboxtest.Main(m, sandbox.Config{Nodes: 2, Stack: sandbox.StackLegacy, SimulatePods: os.Getenv("AIN_REALTEST_OFF") != ""})
}

// TestIntegrationRealTorchrunPyTorchJobSucceeds: `ain train qlora --api training-operator` on the
// legacy stack (a PyTorchJob, master + 1 worker) runs real torchrun in both pods. The worker
// reaches the master only through the name the training-operator gives it (MASTER_ADDR and
// PET_MASTER_ADDR = <job>-master-0, the master's own Service, pkg/controller.v1/pytorch/master.go),
// resolved by CoreDNS: the stand-in's allreduce of rank+1 over world size 2 gives 3 on both, and
// the PyTorchJob Succeeds. Checked to fail with real mode off (AIN_REALTEST_OFF=1: the logs are
// the simulated sample, without the stand-in's lines).
func TestIntegrationRealTorchrunPyTorchJobSucceeds(t *testing.T) {
	sb := realtest.NeedTorchrun(t)
	ns := sb.Namespace(t)
	t0 := time.Now()
	b, objs := realtest.RenderQLoRA(t, sb, jobs.APITrainingOperator, ns, "qlora", nil)
	c, snap, err := realtest.RunJob(t, sb, ns, "qlora", b, objs, 240*time.Second)
	if err != nil {
		t.Fatalf("watch: %v\nagent:\n%s", err, sb.ComponentLog("agent", 40))
	}
	t.Logf("PyTorchJob %s in %s", snap.Phase, time.Since(t0).Round(100*time.Millisecond))
	if snap.Phase != "Succeeded" {
		t.Fatalf("PyTorchJob %s (%s), want Succeeded\npods: %+v\nlogs: %v\nagent:\n%s", snap.Phase, snap.Message, snap.Pods, realtest.PodLogs(t, c, b, "qlora"), sb.ComponentLog("agent", 40))
	}
	// The job Succeeded with its master; the worker may still be printing its last line.
	realtest.WaitPodsEnded(t, sb, c, b, "qlora", 30*time.Second)
	logs := realtest.PodLogs(t, c, b, "qlora")
	if len(logs) != 2 {
		t.Fatalf("%d pods, want 2: %v", len(logs), logs)
	}
	done := regexp.MustCompile(`ain-standin allreduce: rank (\d) of 2 on (\S+): step 8 sum 3\n`)
	ranks := map[string]bool{}
	for pod, log := range logs {
		m := done.FindStringSubmatch(log)
		if m == nil || !strings.HasPrefix(pod, m[2]) {
			t.Errorf("%s: no real allreduce of 2 ranks in its log:\n%s", pod, log)
			continue
		}
		ranks[m[1]] = true
	}
	if len(ranks) != 2 {
		t.Errorf("ranks seen: %v, want 0 and 1", ranks)
	}
	worker, err := sb.Clientset(t).CoreV1().Pods(ns).Get(t.Context(), "qlora-worker-0", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	env := map[string]string{}
	for _, e := range worker.Spec.Containers[0].Env {
		env[e.Name] = e.Value
	}
	if env["PET_MASTER_ADDR"] != "qlora-master-0" {
		t.Errorf("the worker's PET_MASTER_ADDR is %q, want the master's Service qlora-master-0", env["PET_MASTER_ADDR"])
	}
	if worker.Annotations[sandbox.AnnoReal] != "true" {
		t.Errorf("the worker was not run for real: %v", worker.Annotations)
	}
	// `ain sandbox status` says so: both pods under the training image's real row, and the GPU
	// Operator's pods (images not in the table) simulated, with that reason.
	st, err := sandbox.GetStatus(t.Context(), sb.Dir)
	if err != nil {
		t.Fatal(err)
	}
	real, unmapped := 0, 0
	for _, g := range st.PodRuns {
		for _, p := range g.Pods {
			if g.Real && (p == ns+"/qlora-master-0" || p == ns+"/qlora-worker-0") {
				real++
			}
		}
		if !g.Real && g.Why == "image not mapped to this machine's programs" {
			unmapped += len(g.Pods)
		}
	}
	if real != 2 || unmapped == 0 {
		t.Errorf("status's pods: %d of the job's real, %d simulated as unmapped, want 2 and some: %+v", real, unmapped, st.PodRuns)
	}
}

// TestIntegrationRealTorchrunPyTorchJobBadMasterAddr: a rendezvous address that does not
// resolve (--master_addr over the operator's PET_MASTER_ADDR) fails the ranks in torchrun's
// rendezvous timeout (20s through its PET_RDZV_CONF) and the PyTorchJob Fails, with torchrun's
// message in the logs ain reads. Checked to fail with real mode off (the simulated ranks succeed).
func TestIntegrationRealTorchrunPyTorchJobBadMasterAddr(t *testing.T) {
	sb := realtest.NeedTorchrun(t)
	ns := sb.Namespace(t)
	const bad = "qlora-master.invalid"
	b, objs := realtest.RenderQLoRA(t, sb, jobs.APITrainingOperator, ns, "badmaster", func(r *recipe.Recipe) {
		w := &r.Training.Workload
		for i, a := range w.Command {
			w.Command[i] = strings.Replace(a, "exec torchrun -m", "exec torchrun --master_addr="+bad+" -m", 1)
		}
		if w.Env == nil {
			w.Env = map[string]string{}
		}
		w.Env["PET_RDZV_CONF"] = "timeout=20"
	})
	t0 := time.Now()
	c, snap, err := realtest.RunJob(t, sb, ns, "badmaster", b, objs, 150*time.Second)
	if err != nil && snap.Phase == "" {
		t.Fatalf("watch: %v\nagent:\n%s", err, sb.ComponentLog("agent", 40))
	}
	logs := realtest.PodLogs(t, c, b, "badmaster")
	t.Logf("PyTorchJob %s in %s: %s", snap.Phase, time.Since(t0).Round(100*time.Millisecond), snap.Message)
	if snap.Phase != "Failed" {
		t.Fatalf("PyTorchJob %s, want Failed\nlogs: %v", snap.Phase, logs)
	}
	want := "timed out after 20s while trying to connect to (" + bad
	seen := 0
	for pod, log := range logs {
		if strings.Contains(log, want) {
			seen++
		} else {
			t.Logf("%s:\n%s", pod, log)
		}
	}
	if seen == 0 {
		t.Errorf("no rank's log has torchrun's %q", want)
	}
}
