package bench

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	kubeflowv1 "github.com/kubeflow/training-operator/pkg/apis/kubeflow.org/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/ain-hpc/ain/pkg/jobs"
)

// The Runner on a fake cluster: client-go's fake clientset and dynamic client behind a real
// jobs.Cluster, a kubeflow.org/v1 MPIJob backend whose launcher log is a recorded nccl-tests
// output, and fakeOperator in the training-operator's place (it makes each job's pods and
// writes its conditions). A narrow unit test of the Runner's sequencing, events and result; the
// real control plane runs it in cmd/ain's TestBenchAllreduce* integration tests.

// outcome is what the fake operator makes of a variant's job.
type outcome struct {
	phase    string // jobs.PhaseSucceeded, PhaseFailed, or PhaseRunning (never ends)
	launcher []byte // the launcher's log
}

// fakeOperator plays the training-operator for every MPIJob created in dyn: worker pods on
// gpu-1 and gpu-2 and a launcher, then the job's conditions per its outcome. It re-writes the
// job and its pods every few milliseconds until the job is deleted: client-go's fake watch
// starts at "now", so an event between an informer's list and its watch would be lost.
type fakeOperator struct {
	t        *testing.T
	ctx      context.Context
	dyn      *dynfake.FakeDynamicClient
	kube     *fake.Clientset
	outcomes map[string]outcome // by variant name (the job name's second part)
	wg       sync.WaitGroup

	mu      sync.Mutex
	created []*unstructured.Unstructured // every job created, in order
}

const fakeNS = "bench"

var workerNodes = []string{"gpu-1", "gpu-2"}

func newFakeOperator(t *testing.T, outcomes map[string]outcome) *fakeOperator {
	ctx, cancel := context.WithCancel(context.Background())
	op := &fakeOperator{t: t, ctx: ctx, outcomes: outcomes, kube: fake.NewClientset(),
		dyn: dynfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{jobs.MPIJobGVR: "MPIJobList"})}
	op.dyn.PrependReactor("create", "mpijobs", func(a k8stesting.Action) (bool, runtime.Object, error) {
		u := a.(k8stesting.CreateAction).GetObject().(*unstructured.Unstructured).DeepCopy()
		op.mu.Lock()
		op.created = append(op.created, u)
		op.mu.Unlock()
		op.wg.Add(1)
		go op.run(u.GetName())
		return false, nil, nil // the tracker stores it
	})
	t.Cleanup(func() { cancel(); op.wg.Wait() })
	return op
}

func (op *fakeOperator) cluster() *jobs.Cluster {
	return &jobs.Cluster{Kube: op.kube, Dynamic: op.dyn, Namespace: fakeNS}
}

func (op *fakeOperator) jobs() []*unstructured.Unstructured {
	op.mu.Lock()
	defer op.mu.Unlock()
	return append([]*unstructured.Unstructured(nil), op.created...)
}

// outcomeOf finds the outcome of job name (<bench>-<variant>-<time>-<run>).
func (op *fakeOperator) outcomeOf(name string) outcome {
	parts := strings.Split(name, "-")
	return op.outcomes[parts[1]]
}

func (op *fakeOperator) run(name string) {
	defer op.wg.Done()
	out := op.outcomeOf(name)
	ri := op.dyn.Resource(jobs.MPIJobGVR).Namespace(fakeNS)
	pods := op.kube.CoreV1().Pods(fakeNS)
	seen := false
	for tick := 0; ; tick++ {
		select {
		case <-op.ctx.Done():
			return
		case <-time.After(5 * time.Millisecond):
		}
		job, err := ri.Get(op.ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			if seen {
				// Deleted: the garbage collector's part, the pods go too (the runner deletes
				// them itself; this catches one re-written after its delete).
				l, _ := pods.List(context.Background(), metav1.ListOptions{LabelSelector: kubeflowv1.JobNameLabel + "=" + name})
				for _, p := range l.Items {
					_ = pods.Delete(context.Background(), p.Name, metav1.DeleteOptions{})
				}
				return
			}
			continue // the reactor runs before the tracker stores the job
		}
		if err != nil {
			return
		}
		seen = true
		for _, p := range op.pods(name, out.phase, tick) {
			if _, err := pods.Update(op.ctx, p, metav1.UpdateOptions{}); apierrors.IsNotFound(err) {
				_, _ = pods.Create(op.ctx, p, metav1.CreateOptions{})
			}
		}
		msg := "MPIJob " + name + " is " + strings.ToLower(out.phase) + "."
		if out.phase == jobs.PhaseFailed {
			msg = "MPIJob " + name + " has failed because 1 Launcher replica(s) failed."
		}
		_ = unstructured.SetNestedSlice(job.Object, []any{
			map[string]any{"type": "Created", "status": "True", "message": "MPIJob " + name + " is created."},
			map[string]any{"type": out.phase, "status": "True", "message": msg},
		}, "status", "conditions")
		if _, err := ri.Update(op.ctx, job, metav1.UpdateOptions{}); err != nil && !apierrors.IsNotFound(err) {
			op.t.Errorf("fake operator: updating %s: %v", name, err)
			return
		}
	}
}

// pods are job name's launcher and workers as the training-operator labels them; tick keeps
// every update a change.
func (op *fakeOperator) pods(name, phase string, tick int) []*corev1.Pod {
	pod := func(replica string, index int, node string, phase corev1.PodPhase) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name + "-" + replica + "-" + string(rune('0'+index)), Namespace: fakeNS,
			Labels: map[string]string{kubeflowv1.JobNameLabel: name, kubeflowv1.ReplicaTypeLabel: replica,
				kubeflowv1.ReplicaIndexLabel: string(rune('0' + index))},
			Annotations: map[string]string{"tick": string(rune('a' + tick%26))}},
			Spec:   corev1.PodSpec{NodeName: node},
			Status: corev1.PodStatus{Phase: phase, Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}}}
		return p
	}
	l := pod("launcher", 0, "gpu-1", corev1.PodRunning)
	// mpirun's exit status is the launcher container's: 0, or a rank's signal (137: SIGKILL).
	ended := func(phase corev1.PodPhase, code int32, reason string) {
		l.Status.Phase = phase
		l.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: jobs.MPIContainer,
			State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: code, Reason: reason}}}}
	}
	switch phase {
	case jobs.PhaseSucceeded:
		ended(corev1.PodSucceeded, 0, "Completed")
	case jobs.PhaseFailed:
		ended(corev1.PodFailed, 137, "Error")
	}
	return []*corev1.Pod{l, pod("worker", 0, workerNodes[0], corev1.PodRunning), pod("worker", 1, workerNodes[1], corev1.PodRunning)}
}

// logBackend is the real kubeflow.org/v1 MPIJob backend, but the launcher's log comes from the
// outcomes (the fake clientset's logs are a fixed "fake logs").
type logBackend struct {
	jobs.Backend
	op *fakeOperator
}

func (b logBackend) Logs(_ context.Context, _ *jobs.Cluster, pod string, _ int64, _ bool) (io.ReadCloser, error) {
	job := strings.TrimSuffix(pod, "-launcher-0")
	return io.NopCloser(strings.NewReader(string(b.op.outcomeOf(job).launcher))), nil
}

// stepClock is an injected clock that moves 10 s at every reading.
type stepClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *stepClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.t
	c.t = c.t.Add(10 * time.Second)
	return now
}

func mpiV1(t *testing.T) jobs.Backend {
	for _, b := range jobs.Backends {
		if b.GVR() == jobs.MPIJobGVR {
			return b
		}
	}
	t.Fatal("no kubeflow.org/v1 MPIJob backend")
	return nil
}

func TestRunnerOnFakeCluster(t *testing.T) {
	ring, tree := sample(t, "ring"), sample(t, "tree")
	full := string(ring)
	cut := full[:strings.Index(full, "# Out of bounds")] + "mpirun noticed that process rank 1 with PID 42 on node gpu-2 exited on signal 9 (Killed).\n"
	t0 := time.Date(2026, 12, 3, 9, 8, 0, 0, time.UTC)

	cases := []struct {
		name     string
		outcomes map[string]outcome
		// interrupt: cancel the parent context once this variant's job is seen Running.
		interrupt string
		wantErr   func(error) bool
		wantKinds []EventKind
		// wantVariants is the variants recorded, each "name:phase:valid".
		wantVariants []string
		wantCreated  int
		check        func(t *testing.T, res *Result, events []Event, op *fakeOperator)
	}{
		{
			name:         "two variants",
			outcomes:     map[string]outcome{"ring": {jobs.PhaseSucceeded, ring}, "tree": {jobs.PhaseSucceeded, tree}},
			wantErr:      func(err error) bool { return err == nil },
			wantKinds:    []EventKind{EventApplied, EventDone, EventApplied, EventDone},
			wantVariants: []string{"ring:Succeeded:true", "tree:Succeeded:true"},
			wantCreated:  2,
			check: func(t *testing.T, res *Result, events []Event, op *fakeOperator) {
				if !res.SameNodes {
					t.Error("SameNodes false, both ran on gpu-1,gpu-2")
				}
				if got := events[0].String(); !strings.HasPrefix(got, "[1/2] ring: applied MPIJob bench/allreduce-ring-1203090800-t3st (NCCL_ALGO=Ring)") {
					t.Errorf("applied event %q", got)
				}
				if got := events[1].Message; !strings.HasPrefix(got, "Succeeded in 10s on gpu-1,gpu-2, peak busbw ") || !strings.HasSuffix(got, ", transport ib: OK") {
					t.Errorf("done event %q", got)
				}
				// The second variant's job is named from the clock and pinned to the first's nodes.
				if got := events[2].Message; !strings.Contains(got, "allreduce-tree-1203090820-t3st (NCCL_ALGO=Tree)") {
					t.Errorf("second applied event %q", got)
				}
				pinnedTo := func(job *unstructured.Unstructured) string {
					terms, _, _ := unstructured.NestedSlice(job.Object, "spec", "mpiReplicaSpecs", "Worker", "template", "spec",
						"affinity", "nodeAffinity", "requiredDuringSchedulingIgnoredDuringExecution", "nodeSelectorTerms")
					b, _ := json.Marshal(terms)
					return string(b)
				}
				// The image's architecture requirement (pkg/image: the nccl-tests build is amd64
				// only) stays in every term.
				arch := `"matchExpressions":[{"key":"kubernetes.io/arch","operator":"In","values":["amd64"]}]`
				if got := pinnedTo(op.jobs()[1]); got != `[{`+arch+`,"matchFields":[{"key":"metadata.name","operator":"In","values":["gpu-1"]}]},{`+arch+`,"matchFields":[{"key":"metadata.name","operator":"In","values":["gpu-2"]}]}]` {
					t.Errorf("the second job's workers are not pinned to gpu-1,gpu-2: %s", got)
				}
				if got := pinnedTo(op.jobs()[0]); got != `[{`+arch+`}]` {
					t.Errorf("the first job is pinned before any node was known: %s", got)
				}
				v := res.Variants[1]
				if v.Job != "allreduce-tree-1203090820-t3st" || !v.Started.Equal(t0.Add(20*time.Second)) || v.Seconds != 10 || v.Transport != "ib" {
					t.Errorf("tree: job %s started %s seconds %v transport %s", v.Job, v.Started, v.Seconds, v.Transport)
				}
			},
		},
		{
			name:     "failed job",
			outcomes: map[string]outcome{"ring": {jobs.PhaseFailed, []byte(cut)}, "tree": {jobs.PhaseSucceeded, tree}},
			wantErr: func(err error) bool {
				var fe *VariantFailedError
				return errors.As(err, &fe) && fe.Variant == "ring" && fe.Kind == "MPIJob"
			},
			wantKinds: []EventKind{EventApplied, EventFailed, EventDone},
			// The failed variant is recorded (its output is kept); the next one never ran.
			wantVariants: []string{"ring:Failed:false"},
			wantCreated:  1,
			check: func(t *testing.T, res *Result, events []Event, op *fakeOperator) {
				f := events[1]
				if f.Message != "MPIJob allreduce-ring-1203090800-t3st FAILED; the launcher's last lines:" || len(f.Lines) != 15 ||
					!strings.Contains(f.Lines[14], "exited on signal 9") {
					t.Errorf("failed event %q %q", f.Message, f.Lines)
				}
				if got := events[2].Message; !strings.HasPrefix(got, "Failed in 10s on gpu-1,gpu-2") || !strings.Contains(got, ": INVALID: ") ||
					!strings.HasSuffix(got, "; "+ProblemJobFailed+": the MPIJob failed: MPIJob allreduce-ring-1203090800-t3st has failed because 1 Launcher replica(s) failed.") {
					t.Errorf("done event %q", got)
				}
				if p := strings.Join(res.Variants[0].Problems, "; "); !strings.Contains(p, ProblemJobFailed) || !strings.Contains(p, "did not finish") {
					t.Errorf("problems %q", p)
				}
			},
		},
		{
			name:      "interrupt mid-variant",
			outcomes:  map[string]outcome{"ring": {jobs.PhaseSucceeded, ring}, "tree": {jobs.PhaseRunning, nil}, "auto": {jobs.PhaseSucceeded, ring}},
			interrupt: "tree",
			wantErr:   func(err error) bool { return errors.Is(err, ErrInterrupted) },
			wantKinds: []EventKind{EventApplied, EventDone, EventApplied, EventStopped},
			// The variant cut short is not recorded: a partial run is no result.
			wantVariants: []string{"ring:Succeeded:true"},
			wantCreated:  2,
			check: func(t *testing.T, res *Result, events []Event, op *fakeOperator) {
				if !res.Interrupted || res.InterruptedNote != "during variant tree (MPIJob allreduce-tree-1203090820-t3st, deleted; not recorded); not run: auto" {
					t.Errorf("interrupted %v, note %q", res.Interrupted, res.InterruptedNote)
				}
				s := events[3]
				if s.Message != "stopped (Running); deleting MPIJob allreduce-tree-1203090820-t3st" || s.Snapshot == nil || len(s.Snapshot.Pods) != 3 {
					t.Errorf("stopped event %q %+v", s.Message, s.Snapshot)
				}
				res.Summarize()
				if res.Valid || !strings.Contains(strings.Join(res.Problems, "; "), "interrupted during variant tree") {
					t.Errorf("an interrupted bench is valid: %v %q", res.Valid, res.Problems)
				}
			},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			op := newFakeOperator(t, c.outcomes)
			algo := "ring,tree"
			if c.interrupt != "" {
				algo = "ring,tree,auto"
			}
			var calls [][]string
			plan, err := NewPlan(PlanInput{Algo: algo, Shape: Shape{Nodes: 2, GPUsPerNode: 1}, Run: "t3st"}, loader("allreduce", &calls))
			if err != nil {
				t.Fatal(err)
			}
			parent, cancel := context.WithCancel(context.Background())
			defer cancel()
			ctx, cancelCtx := context.WithTimeout(parent, time.Minute)
			defer cancelCtx()
			clock := &stepClock{t: t0}
			var events []Event
			r := &Runner{Cluster: op.cluster(), Backend: logBackend{Backend: mpiV1(t), op: op}, Namespace: fakeNS, ShownNamespace: fakeNS,
				Now: clock.Now, Progress: func(e Event) { events = append(events, e) },
				Watch: func(time.Time) (func(jobs.Snapshot), func()) {
					return func(s jobs.Snapshot) {
						if c.interrupt != "" && strings.Contains(s.Name, "-"+c.interrupt+"-") && s.Phase == jobs.PhaseRunning && len(s.Pods) == 3 {
							cancel()
						}
					}, func() {}
				}}
			res := plan.NewResult(fakeNS, t0)
			pinned, err := r.Run(parent, ctx, plan, res)
			if !c.wantErr(err) {
				t.Fatalf("Run: %v", err)
			}
			if strings.Join(pinned, ",") != "gpu-1,gpu-2" {
				t.Errorf("pinned %v", pinned)
			}
			var kinds []EventKind
			for _, e := range events {
				kinds = append(kinds, e.Kind)
			}
			if !equalKinds(kinds, c.wantKinds) {
				t.Fatalf("events %v, want kinds %v", events, c.wantKinds)
			}
			var got []string
			for _, v := range res.Variants {
				got = append(got, v.Name+":"+v.Phase+":"+boolText(v.Valid))
				if strings.Join(v.Nodes, ",") != "gpu-1,gpu-2" {
					t.Errorf("%s ran on %v", v.Name, v.Nodes)
				}
			}
			if strings.Join(got, " ") != strings.Join(c.wantVariants, " ") {
				t.Errorf("variants %q, want %q", got, c.wantVariants)
			}
			if n := len(op.jobs()); n != c.wantCreated {
				t.Errorf("%d jobs created, want %d", n, c.wantCreated)
			}
			done := make(chan struct{})
			go func() { op.wg.Wait(); close(done) }()
			select {
			case <-done: // every job was deleted: the operator's goroutines end then
			case <-time.After(20 * time.Second):
				t.Fatal("a job was never deleted")
			}
			// Every job and its pods are deleted once read (no --keep-jobs), also the interrupted one.
			left, err := op.dyn.Resource(jobs.MPIJobGVR).Namespace(fakeNS).List(context.Background(), metav1.ListOptions{})
			if err != nil || len(left.Items) != 0 {
				t.Errorf("jobs left: %v %v", left, err)
			}
			if pods, _ := op.kube.CoreV1().Pods(fakeNS).List(context.Background(), metav1.ListOptions{}); len(pods.Items) != 0 {
				t.Errorf("%d pods left", len(pods.Items))
			}
			c.check(t, res, events, op)
		})
	}
}

func equalKinds(a, b []EventKind) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func boolText(b bool) string {
	if b {
		return "true"
	}
	return "false"
}
