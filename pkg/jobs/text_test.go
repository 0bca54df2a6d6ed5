package jobs

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/ain-hpc/ain/pkg/nccl"
	"github.com/ain-hpc/ain/pkg/next"
)

// A rank whose pod vanishes mid-run is said, and so is the pod that takes its place; pods that
// go once the job has ended (its clean-pod policy) are not.
func TestViewSaysReplacedRanks(t *testing.T) {
	var errb bytes.Buffer
	v := NewView(&errb, false, time.Now, time.Now())
	defer v.Stop()
	pod := func(name string, index int) PodInfo {
		return PodInfo{Name: name, Replica: "worker", Index: index, Phase: "Running", Node: "gpu-node-1"}
	}
	snap := func(phase string, pods ...PodInfo) Snapshot {
		return Snapshot{Kind: "PyTorchJob", Namespace: "ns", Name: "qlora", Phase: phase, Pods: pods}
	}
	v.Update(snap("Running", pod("qlora-worker-0", 0), pod("qlora-worker-1", 1)))
	v.Update(snap("Running", pod("qlora-worker-0", 0)))
	v.Update(snap("Running", pod("qlora-worker-0", 0), pod("qlora-worker-1-b", 1)))
	v.Update(snap("Succeeded"))
	out := errb.String()
	for _, want := range []string{
		"qlora-worker-1 (worker-1) left the job: deleted or evicted",
		"qlora-worker-1-b replaces qlora-worker-1 as worker-1",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "qlora-worker-0 (worker-0) left") || strings.Count(out, "left the job") != 1 {
		t.Errorf("pods that went when the job ended are reported as leaving:\n%s", out)
	}
}

// The summary's RESULT cell for each rank, against the job's phase (a worker shown "Running"
// under a Succeeded job).
func TestResultCell(t *testing.T) {
	zero, one := int32(0), int32(1)
	for _, c := range []struct {
		job  string
		pod  PodInfo
		want string
	}{
		{PhaseSucceeded, PodInfo{Phase: "Succeeded", ExitCode: &zero}, "exit 0"},
		{PhaseFailed, PodInfo{Phase: "Failed", ExitCode: &one}, "exit 1"},
		{PhaseSucceeded, PodInfo{Phase: "Running"}, "still running at job end"},
		{PhaseFailed, PodInfo{Phase: "Pending"}, "never started (job ended)"},
		{PhaseRunning, PodInfo{Phase: "Running"}, "Running"},
		{PhaseSucceeded, PodInfo{Phase: "Unknown"}, "Unknown"},
	} {
		if got := ResultCell(c.job, c.pod); got != c.want {
			t.Errorf("job %s, pod %s (exit %v): %q, want %q", c.job, c.pod.Phase, c.pod.ExitCode, got, c.want)
		}
	}
}

// The summary's fix reads with the commands the caller words (TextOptions.Fix).
func TestSummaryWriteTextWordsFixes(t *testing.T) {
	var b bytes.Buffer
	s := &Summary{Snapshot: Snapshot{Kind: "MPIJob", Namespace: "ns", Name: "j", Phase: PhaseSucceeded}, Transport: nccl.TransportIB,
		Problems: []nccl.Finding{{Message: "m", Fix: "do it", Next: []next.Command{"doctor x"}}}}
	s.WriteText(&b, TextOptions{Fix: func(f string, c []next.Command) string { return f + " then " + string(c[0]) }})
	for _, want := range []string{"MPIJob ns/j Succeeded\n", "NCCL: ib (InfiniBand verbs)\n", "    fix: do it then doctor x\n"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("lacks %q:\n%s", want, b.String())
		}
	}
}

// A pending job says why, with the gang note when a gang scheduler is served (read through
// discovery) and pods are placed partly.
func TestPendingReasonsWithGangSchedulers(t *testing.T) {
	kube := fake.NewSimpleClientset()
	kube.Resources = []*metav1.APIResourceList{{GroupVersion: GroupVolcano + "/v1beta1"}, {GroupVersion: "v1"}}
	gangs := GangSchedulers(kube.Discovery())
	if len(gangs) != 1 || gangs[0] != "Volcano" {
		t.Fatalf("GangSchedulers = %v, want [Volcano]", gangs)
	}
	if GangSchedulers(nil) != nil {
		t.Error("no discovery names gang schedulers")
	}
	s := Snapshot{Phase: PhasePending, Waiting: "waiting for workers", Pods: []PodInfo{{Name: "w-0", Why: "unschedulable: 0/2 nodes"}}}
	got := PendingReasons(s, gangs)
	for _, want := range []string{"  w-0: unschedulable: 0/2 nodes", "  waiting for workers"} {
		if !strings.Contains(got, want) {
			t.Errorf("lacks %q:\n%s", want, got)
		}
	}
	if got := PendingReasons(Snapshot{Phase: PhasePending}, nil); !strings.Contains(got, "no pods yet") {
		t.Errorf("a pending job with no pods: %q", got)
	}
}

// Status explains a Running pod that is not Ready by its node's NotReady condition, and reads
// no summary while the job runs.
func TestStatusExplainsPodOnNotReadyNode(t *testing.T) {
	be := mpiV2
	sel := strings.SplitN(be.PodSelector("nccl"), "=", 2)
	pod := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "nccl-worker-0", Namespace: "ns", Labels: map[string]string{sel[0]: sel[1]}},
		Spec:   corev1.PodSpec{NodeName: "gpu-1"},
		Status: corev1.PodStatus{Phase: corev1.PodRunning}}
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "gpu-1"},
		Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionUnknown, Reason: "NodeStatusUnknown"}}}}
	job := &unstructured.Unstructured{Object: map[string]any{"apiVersion": be.GVR().GroupVersion().String(), "kind": be.Kind(),
		"metadata": map[string]any{"name": "nccl", "namespace": "ns"}}}
	c := &Cluster{Kube: fake.NewSimpleClientset(&pod, node), Namespace: "ns"}
	r := c.Status(context.Background(), job, []corev1.Pod{pod})
	if len(r.Job.Pods) != 1 || !strings.Contains(r.Job.Pods[0].Why, "NotReady") {
		t.Fatalf("pod not explained by its node: %+v", r.Job.Pods)
	}
	if r.Summary != nil {
		t.Errorf("a running job got a summary: %+v", r.Summary)
	}
	var b bytes.Buffer
	r.WriteText(&b, time.Now(), TextOptions{})
	if !strings.Contains(b.String(), "NotReady") || !strings.Contains(b.String(), "Pods:") {
		t.Errorf("text lacks the pod's reason:\n%s", b.String())
	}
}

// Notes (a job's GPU lines) are printed with the elapsed time without a terminal, and on one the
// last note replaces the one before under the table.
func TestViewNotes(t *testing.T) {
	start := time.Date(2026, 12, 5, 10, 0, 0, 0, time.UTC)
	now := func() time.Time { return start.Add(90 * time.Second) }
	var plain bytes.Buffer
	v := NewView(&plain, false, now, start)
	v.Note([]string{"GPU a", "GPU b"})
	v.Stop()
	if got := plain.String(); got != "01:30    GPU a\n01:30    GPU b\n" {
		t.Errorf("plain notes:\n%q", got)
	}
	var tty bytes.Buffer
	v = NewView(&tty, true, now, start)
	defer v.Stop()
	v.Update(Snapshot{Kind: "TrainJob", Namespace: "ns", Name: "j", Phase: "Running"})
	v.Note([]string{"GPU first"})
	v.Note([]string{"GPU second"})
	out := tty.String()
	last := out[strings.LastIndex(out, "TrainJob ns/j"):]
	if !strings.Contains(last, "  GPU second\n") || strings.Contains(last, "GPU first") {
		t.Errorf("the last redraw should hold the last note only:\n%q", last)
	}
}

// On a terminal of 40 columns every redrawn line fits one row, so that the cursor moves back over
// exactly what was drawn; more than maxNotes note lines are cut to the first ones, a count and
// the last.
func TestViewFitsTheTerminal(t *testing.T) {
	var tty bytes.Buffer
	now := time.Now()
	v := NewView(&tty, true, func() time.Time { return now }, now)
	defer v.Stop()
	v.SetWidth(40)
	v.Update(Snapshot{Kind: "TrainJob", Namespace: "a-rather-long-namespace", Name: "a-long-job-name", Phase: "Running"})
	var notes []string
	for i := range 20 {
		notes = append(notes, fmt.Sprintf("GPU rank %d on ip-10-0-12-34.us-west-2.compute.internal: util 97%%", i))
	}
	notes = append(notes, "the verdict")
	v.Note(notes)
	out := tty.String()
	last := out[strings.LastIndex(out, "TrainJob"):]
	for _, l := range strings.Split(strings.TrimSuffix(last, "\n"), "\n") {
		if n := len([]rune(l)); n > 39 {
			t.Errorf("a %d-rune line on a 40-column terminal: %q", n, l)
		}
	}
	if !strings.Contains(last, "... 10 more lines") || !strings.Contains(last, "the verdict") || strings.Contains(last, "rank 10 ") {
		t.Errorf("notes not cut to %d lines:\n%s", maxNotes, last)
	}
}
