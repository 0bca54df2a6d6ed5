package sandbox

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/ain-hpc/ain/pkg/sandbox/podrun"
)

// AnnoRealPlan is the scenario's plan for a real pod (realPlan as JSON), set with AnnoReal.
const AnnoRealPlan = AnnoPrefix + "real-plan"

// realPlan is how the scenario's rule for a pod applies when the pod's program runs for real.
// The program does what it does (sshd, mpirun, torchrun's rendezvous and allreduce); what this
// machine cannot make is given to the stand-ins through the job's plan folder (podrun.PlanDir):
// the output NCCL would print, rendered from the simulated fabric (Sample), a failure the
// scenario plays (ExitCode, after the first real allreduce) and a run's length (MinRun). A start
// later than the pod's (StartAfter) is kwok's; a slow container start (ReadyAfter: the program
// starts that long after the pod runs, so the pod is Running and unready meanwhile, and a peer
// that connects early is refused, as on a cluster) is the agent's.
type realPlan struct {
	Sample     string        `json:"sample,omitempty"`
	ExitCode   int           `json:"exitCode,omitempty"`
	StartAfter time.Duration `json:"startAfter,omitempty"`
	ReadyAfter time.Duration `json:"readyAfter,omitempty"`
	MinRun     time.Duration `json:"minRun,omitempty"`
}

// planReal is the plan for pod under rule r of sc: the rule's sample and failure and the pod's own
// annotations, as for a simulated pod (plan); of the timing only what the rule or the pod sets, as
// the scenario's default timing stands for programs that do not run.
func planReal(sc *Scenario, r *Rule, pod *corev1.Pod) realPlan {
	want := plan(sc, r, pod)
	p := realPlan{Sample: want[AnnoSample]}
	if want[AnnoOutcome] == "Failed" {
		p.ExitCode, _ = strconv.Atoi(want[AnnoExitCode])
		if p.ExitCode == 0 {
			p.ExitCode = 1
		}
	}
	var t Timing
	if r != nil {
		t = r.Timing
	}
	own := func(anno string, d Duration) time.Duration {
		if v, ok := pod.Annotations[anno]; ok {
			if parsed, err := time.ParseDuration(v); err == nil {
				return parsed
			}
		}
		return d.Duration
	}
	p.StartAfter = own(AnnoStartAfter, t.StartAfter)
	p.ReadyAfter = own(AnnoReadyAfter, t.ReadyAfter)
	p.MinRun = own(AnnoCompleteAfter, t.CompleteAfter)
	return p
}

// planRealPod is the scenario's plan for pod, of a mapped image, or why it is played from its
// sample after all: its scenario fails it and its program is not a stand-in that can carry a
// failure out.
func (a *agent) planRealPod(pod *corev1.Pod) (*realPlan, string) {
	a.mu.Lock()
	a.reload()
	p := planReal(a.sc, matchRule(a.sc, pod, a.st.Config.Fabric, a.workersReady), pod)
	name := a.sc.Name
	a.mu.Unlock()
	if p.ExitCode == 0 || runsStandIn(pod) {
		return &p, ""
	}
	return nil, fmt.Sprintf("scenario %s fails this pod, and its program is not a stand-in that can (all_reduce_perf, trl's sft)", name)
}

// runsStandIn reports whether pod's first container runs a program the sandbox stands in for:
// all_reduce_perf (under the launcher's mpirun) or trl's sft (under torchrun).
func runsStandIn(pod *corev1.Pod) bool {
	if len(pod.Spec.Containers) == 0 {
		return false
	}
	cmd := commandLine(pod.Spec.Containers[0])
	return strings.Contains(cmd, "all_reduce_perf") || strings.Contains(cmd, "trl.scripts.sft")
}

func (p realPlan) annotation() string {
	b, _ := json.Marshal(p)
	return string(b)
}

// realPlanOf reads pod's plan; none when the pod has none or it does not parse.
func realPlanOf(pod *corev1.Pod) realPlan {
	var p realPlan
	_ = json.Unmarshal([]byte(pod.Annotations[AnnoRealPlan]), &p)
	return p
}

// planFolder is the host folder mounted at podrun.PlanDir in every real pod of pod's job.
func planFolder(dir string, pod *corev1.Pod) string {
	_, job, _, _ := podJob(pod)
	if job == "" {
		job = pod.Name
	}
	return filepath.Join(dir, "plans", pod.Namespace+"_"+job)
}

// writePlan renders pod's plan into its job's plan folder, under its hostname and, for a
// launcher, as launcher.* too (the ranks that print it run in the workers' pods). A plan
// without a sample removes one an earlier run of the same name left. It returns the folder.
func (a *agent) writePlan(pod *corev1.Pod, p realPlan) (string, error) {
	dir := planFolder(a.real.dir, pod)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	text := ""
	if p.Sample != "" {
		a.mu.Lock()
		d := a.sampleData(pod)
		a.mu.Unlock()
		var err error
		if text, err = RenderSample(p.Sample, d); err != nil {
			return "", fmt.Errorf("rendering %s for the stand-ins: %w", p.Sample, err)
		}
	}
	names := []string{podrun.Hostname(pod)}
	if _, _, role, _ := podJob(pod); role == "launcher" {
		names = append(names, "launcher")
	}
	for _, n := range names {
		files := map[string]string{
			".exit":    strconv.Itoa(p.ExitCode),
			".seconds": strconv.Itoa(int(p.MinRun.Round(time.Second) / time.Second)),
		}
		if p.Sample != "" {
			files[".sample"] = text
		} else if err := os.Remove(filepath.Join(dir, n+".sample")); err != nil && !os.IsNotExist(err) {
			return "", err
		}
		for ext, content := range files {
			// Renamed into place: a rank reading it meanwhile sees the old or the new, whole.
			tmp := filepath.Join(dir, "."+n+ext)
			if err := os.WriteFile(tmp, []byte(content), 0o644); err != nil {
				return "", err
			}
			if err := os.Rename(tmp, filepath.Join(dir, n+ext)); err != nil {
				return "", err
			}
		}
	}
	return dir, nil
}

// withPlan mounts the plan folder dir at podrun.PlanDir in img.
func withPlan(img podrun.Image, dir string) podrun.Image {
	img.Files[podrun.PlanDir] = dir
	return img
}
