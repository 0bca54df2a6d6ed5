package sandbox

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// AnnoSimulated is set by the agent on a pod it plays instead of running: why its program does
// not run (the pod's AnnoReal says it does).
const AnnoSimulated = AnnoPrefix + "simulated"

// RealPodsOffHint is why a pod is simulated in a sandbox started without real pods.
const RealPodsOffHint = "turned off (ain sandbox up --real-pods=false)"

// PodRun is how the agent ran one pod: its program as a real process, or simulated and why.
type PodRun struct {
	Pod   string `json:"pod"` // namespace/name
	Image string `json:"image"`
	Real  bool   `json:"real"`
	Why   string `json:"why,omitempty"`
}

// PodRunGroup is the pods that ran the same image the same way, for the same reason.
type PodRunGroup struct {
	Real  bool     `json:"real"`
	Image string   `json:"image"`
	Why   string   `json:"why,omitempty"`
	Pods  []string `json:"pods"`
}

// PodRuns is the agent's record of every pod it ran, one JSON PodRun a line: pods that ran
// and were deleted since (a bench deletes each job once read) still count.
func (l Layout) PodRuns() string { return filepath.Join(l.Dir, "podruns.jsonl") }

// realDecision is the real-image table's row for pod, or why pod is simulated. off is why the
// sandbox runs no real pods ("" when it does).
func realDecision(off string, pod *corev1.Pod) (realImage, string) {
	switch {
	case off != "":
		return realImage{}, off
	case len(pod.Spec.Containers) == 0:
		return realImage{}, "no container"
	case pod.Spec.HostNetwork:
		// The probe pods read the node's files (sysfs, counters), which are the agent's
		// simulation of the node, not this machine's.
		return realImage{}, "host network: reads the simulated node"
	}
	if why := readsSimulation(pod); why != "" {
		return realImage{}, why
	}
	img := pod.Spec.Containers[0].Image
	r, ok := lookupRealImage(img)
	if !ok {
		return realImage{}, "image not mapped to this machine's programs"
	}
	return r, ""
}

// readsSimulation is why pod's program, whatever its image, must read what the sandbox simulates
// rather than this machine ("" when it need not): the probes ain runs in the job's own image
// (its storage and image checks) and the fabric's benchmarks.
func readsSimulation(pod *corev1.Pod) string {
	cmd := commandLine(pod.Spec.Containers[0])
	if o := metav1.GetControllerOf(pod); o != nil && o.Kind == "MPIJob" && o.APIVersion == "kubeflow.org/v1" {
		// training-operator v1.8.1 pkg/controller.v1/mpi: the launcher's mpirun starts orted
		// with kubexec.sh (`kubectl exec`, kubectl from an init container), which needs the
		// API server's exec into a container: kwok serves that only for simulated pods.
		return "kubeflow.org/v1 MPIJob: its mpirun reaches the workers by kubectl exec (kubexec.sh), which real pods here cannot serve"
	}
	_, storage := runsStorageProbe(pod)
	_, image := runsImageProbe(pod)
	_, sysfs := runsProbe(pod)
	switch {
	case storage:
		return "storage probe: reads the shared claim's simulated content"
	case image:
		return "image probe: reads the image's simulated content"
	case sysfs:
		return "sysfs probe (IB ports, counters): reads the simulated node's files"
	case strings.Contains(cmd, "nvidia-smi"):
		return "no GPU here: nvidia-smi's answers are the simulated node's"
	case pod.Labels["ain.dev/probe"] == "perftest":
		return "no RDMA device here: perftest's figures follow the simulated link"
	case pod.Labels["ain.dev/probe"] == "iperf3":
		return "iperf3 here would measure this machine's veth, not the simulated link"
	}
	return ""
}

// commandLine is c's command and args joined by spaces, what the scenarios' command matches.
func commandLine(c corev1.Container) string {
	return strings.Join(append(append([]string{}, c.Command...), c.Args...), " ")
}

// realPodsOff is why the sandbox of st runs no real pods ("" when it does).
func realPodsOff(st *State) string {
	if st.Config.SimulatePods {
		return RealPodsOffHint
	}
	return st.RealPodsOff
}

// recordPodRun appends pod's run to the sandbox's record.
func (a *agent) recordPodRun(pod *corev1.Pod, real bool, why string) {
	r := PodRun{Pod: pod.Namespace + "/" + pod.Name, Real: real, Why: why}
	if len(pod.Spec.Containers) > 0 {
		r.Image = pod.Spec.Containers[0].Image
	}
	line, _ := json.Marshal(r)
	f, err := os.OpenFile(Layout{a.stateDir}.PodRuns(), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err == nil {
		// One write of one line with O_APPEND: the workers' lines do not interleave.
		_, err = f.Write(append(line, '\n'))
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}
	if err != nil {
		fmt.Fprintf(a.log, "sandbox agent: %s: recording how it ran: %v\n", r.Pod, err)
	}
}

// ReadPodRuns reads the record of the sandbox in dir, grouped by how they ran (real first), then
// image and reason; none when nothing ran yet. A pod recorded twice (the agent restarted) counts
// once, as last recorded.
func ReadPodRuns(dir string) ([]PodRunGroup, error) {
	f, err := os.Open(Layout{dir}.PodRuns())
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	last := map[string]PodRun{}
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		var r PodRun
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			return nil, fmt.Errorf("%s line %d: %w", f.Name(), n, err)
		}
		last[r.Pod] = r
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	return groupPodRuns(last), nil
}

func groupPodRuns(runs map[string]PodRun) []PodRunGroup {
	type key struct {
		real       bool
		image, why string
	}
	byKey := map[key]*PodRunGroup{}
	var groups []*PodRunGroup
	for _, r := range runs {
		k := key{r.Real, r.Image, r.Why}
		g := byKey[k]
		if g == nil {
			g = &PodRunGroup{Real: r.Real, Image: r.Image, Why: r.Why}
			byKey[k] = g
			groups = append(groups, g)
		}
		g.Pods = append(g.Pods, r.Pod)
	}
	sort.Slice(groups, func(i, j int) bool {
		a, b := groups[i], groups[j]
		if a.Real != b.Real {
			return a.Real
		}
		if a.Image != b.Image {
			return a.Image < b.Image
		}
		return a.Why < b.Why
	})
	out := make([]PodRunGroup, len(groups))
	for i, g := range groups {
		sort.Strings(g.Pods)
		out[i] = *g
	}
	return out
}
