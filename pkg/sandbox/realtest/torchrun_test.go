package realtest

import (
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/ain-hpc/ain/pkg/jobs"
	"github.com/ain-hpc/ain/pkg/recipe"
)

// TestIntegrationRealTorchrunTrainJobSucceeds: `ain train qlora` on the current stack (a
// TrainJob) runs real torchrun in each of its pods, which rendezvous at the MASTER_ADDR the
// Trainer gives (PET_MASTER_ADDR, resolved through CoreDNS) and start the trl stand-in: it joins
// the gloo group and allreduces rank+1 for 8 steps. Every rank's log has the sum 3 = 1+2 it
// computed with world size 2 (the shared sandbox has 2 nodes: nodes=2), and the job Succeeds.
// Checked to fail with real mode off (AIN_REALTEST_OFF=1: the logs are the simulated sample,
// without the stand-in's lines).
func TestIntegrationRealTorchrunTrainJobSucceeds(t *testing.T) {
	sb := NeedTorchrun(t)
	ns := sb.Namespace(t)
	t0 := time.Now()
	b, objs := RenderQLoRA(t, sb, jobs.APITrainer, ns, "qlora", nil)
	c, snap, err := RunJob(t, sb, ns, "qlora", b, objs, 240*time.Second)
	if err != nil {
		t.Fatalf("watch: %v\nagent:\n%s", err, sb.ComponentLog("agent", 40))
	}
	t.Logf("TrainJob %s in %s", snap.Phase, time.Since(t0).Round(100*time.Millisecond))
	logs := PodLogs(t, c, b, "qlora")
	if snap.Phase != "Succeeded" {
		t.Fatalf("TrainJob %s (%s), want Succeeded\npods: %+v\nlogs: %v\nagent:\n%s", snap.Phase, snap.Message, snap.Pods, logs, sb.ComponentLog("agent", 40))
	}
	if len(logs) != 2 {
		t.Fatalf("%d pods, want 2: %v", len(logs), logs)
	}
	// The stand-in names the pod by its hostname, the pod's name without the Job's suffix.
	done := regexp.MustCompile(`ain-standin allreduce: rank (\d) of 2 on (\S+): step 8 sum 3\n`)
	ranks := map[string]bool{}
	for pod, log := range logs {
		m := done.FindStringSubmatch(log)
		if m == nil || !strings.HasPrefix(pod, m[2]+"-") {
			t.Errorf("%s: no real allreduce of 2 ranks in its log:\n%s", pod, log)
			continue
		}
		ranks[m[1]] = true
	}
	if len(ranks) != 2 {
		t.Errorf("ranks seen: %v, want 0 and 1", ranks)
	}
	var joined strings.Builder
	for _, l := range logs {
		joined.WriteString(l)
	}
	for _, want := range []string{"'train_runtime'", "NCCL INFO Using network Socket"} {
		if !strings.Contains(joined.String(), want) {
			t.Errorf("the ranks' logs lack %q", want)
		}
	}
}

// TestIntegrationRealTorchrunBadMasterAddr: a rendezvous address that does not resolve (the
// command passes --master_addr over the Trainer's PET_MASTER_ADDR) fails every rank in torchrun's
// rendezvous timeout, set to 20s through torchrun's own PET_RDZV_CONF, and the TrainJob Fails
// with torchrun's message in the ranks' logs. Checked to fail with real mode off (the simulated
// ranks succeed).
func TestIntegrationRealTorchrunBadMasterAddr(t *testing.T) {
	sb := NeedTorchrun(t)
	ns := sb.Namespace(t)
	const bad = "qlora-master.invalid"
	b, objs := RenderQLoRA(t, sb, jobs.APITrainer, ns, "badmaster", func(r *recipe.Recipe) {
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
	c, snap, err := RunJob(t, sb, ns, "badmaster", b, objs, 150*time.Second)
	took := time.Since(t0).Round(100 * time.Millisecond)
	if err != nil && snap.Phase == "" {
		t.Fatalf("watch: %v\nagent:\n%s", err, sb.ComponentLog("agent", 40))
	}
	logs := PodLogs(t, c, b, "badmaster")
	t.Logf("TrainJob %s in %s: %s", snap.Phase, took, snap.Message)
	if snap.Phase != "Failed" {
		t.Fatalf("TrainJob %s, want Failed\nlogs: %v", snap.Phase, logs)
	}
	want := "timed out after 20s while trying to connect to (" + bad
	seen := 0
	for pod, log := range logs {
		if i := strings.Index(log, want); i >= 0 {
			seen++
			line := log[strings.LastIndex(log[:i], "\n")+1:]
			t.Logf("%s: %s", pod, line[:strings.IndexByte(line+"\n", '\n')])
		} else {
			t.Logf("%s:\n%s", pod, log)
		}
	}
	if seen == 0 {
		t.Errorf("no rank's log has torchrun's %q", want)
	}
}
