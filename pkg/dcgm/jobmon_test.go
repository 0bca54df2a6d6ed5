package dcgm

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/ain-hpc/ain/pkg/jobs"
)

// TestJobMonitor: nothing is scraped while no pod runs; once the ranks run their nodes are read
// at once (not after a whole interval), each rank's GPUs are given to it, and the inner view
// still sees every change.
func TestJobMonitor(t *testing.T) {
	pct := func(v float64) *float64 { return &v }
	var (
		mu    sync.Mutex
		reads [][]string
	)
	got := make(chan Snapshot, 4)
	m := JobMonitor{
		Interval: time.Hour,
		Sampler: Sampler{Read: func(_ context.Context, nodes []string) ([]GPU, error) {
			mu.Lock()
			reads = append(reads, nodes)
			mu.Unlock()
			return []GPU{
				{Host: "n1", GPU: "0", Namespace: "ns", Pod: "j-worker-0", UtilPct: pct(99), SMActive: pct(0.9)},
				{Host: "n2", GPU: "0", Namespace: "ns", Pod: "j-worker-1", UtilPct: pct(1), SMActive: pct(0.01)},
				{Host: "n2", GPU: "1", Namespace: "other", Pod: "x", UtilPct: pct(50)},
			}, nil
		}},
		Emit: func(s Snapshot) { got <- s },
	}
	var inner []string
	watch := m.Watch(func(time.Time) (func(jobs.Snapshot), func()) {
		return func(s jobs.Snapshot) { inner = append(inner, s.Phase) }, func() { inner = append(inner, "stopped") }
	})
	update, stop := watch(time.Now())
	pod := func(name, phase, node string, i int) jobs.PodInfo {
		return jobs.PodInfo{Name: name, Replica: "worker", Index: i, Phase: phase, Node: node}
	}
	update(jobs.Snapshot{Namespace: "ns", Phase: "Created", Pods: []jobs.PodInfo{pod("j-worker-0", "Pending", "", 0)}})
	select {
	case s := <-got:
		t.Fatalf("sampled with no pod running: %+v", s)
	case <-time.After(200 * time.Millisecond):
	}
	// One rank runs: it is read, the other is said not to run, and the verdict is on the running one.
	update(jobs.Snapshot{Namespace: "ns", Phase: "Running", Pods: []jobs.PodInfo{pod("j-worker-0", "Running", "n1", 0), pod("j-worker-1", "Pending", "n2", 1)}})
	var first Snapshot
	select {
	case first = <-got:
	case <-time.After(5 * time.Second):
		t.Fatal("no sample once a rank ran")
	}
	lines := strings.Join(first.Lines(), "\n")
	if len(first.Ranks) != 1 || first.Bound != GPUBound || !strings.Contains(lines, "not running, so not read: worker-1") ||
		!strings.Contains(lines, "every running rank's GPUs are busy") {
		t.Fatalf("%+v\n%s", first, lines)
	}
	update(jobs.Snapshot{Namespace: "ns", Phase: "Running", Pods: []jobs.PodInfo{pod("j-worker-0", "Running", "n1", 0), pod("j-worker-1", "Running", "n2", 1)}})
	var s Snapshot
	select {
	case s = <-got:
	case <-time.After(5 * time.Second):
		t.Fatal("no sample once the ranks ran")
	}
	stop()
	if len(s.Ranks) != 2 || s.Ranks[0].Pod.Label != "worker-0" || s.Ranks[1].GPUs != 1 || s.Bound != Straggler || s.Idle[0] != "worker-1" || len(s.NotRunning) != 0 {
		t.Fatalf("%+v", s)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(reads) != 2 || len(reads[1]) != 2 {
		t.Errorf("reads %v", reads)
	}
	if len(inner) != 4 || inner[3] != "stopped" {
		t.Errorf("inner view saw %v", inner)
	}
}

// TestJobMonitorSaysARepeatedFailureOnce: a read that fails the same way every interval (no
// pods/portforward permission) is emitted once, not every 15 s.
func TestJobMonitorSaysARepeatedFailureOnce(t *testing.T) {
	var (
		mu    sync.Mutex
		reads int
	)
	got := make(chan Snapshot, 16)
	m := JobMonitor{
		Interval: 20 * time.Millisecond,
		Sampler: Sampler{Read: func(context.Context, []string) ([]GPU, error) {
			mu.Lock()
			reads++
			mu.Unlock()
			return nil, errors.New(`pods "nvidia-dcgm-exporter-x" is forbidden: cannot create resource "pods/portforward"`)
		}},
		Emit: func(s Snapshot) { got <- s },
	}
	update, stop := m.Watch(nil)(time.Now())
	update(jobs.Snapshot{Namespace: "ns", Phase: "Running", Pods: []jobs.PodInfo{{Name: "p", Replica: "worker", Phase: "Running", Node: "n1"}}})
	for {
		mu.Lock()
		n := reads
		mu.Unlock()
		if n >= 5 {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	stop()
	if len(got) != 1 {
		t.Fatalf("%d samples emitted for 5 identical failures, want 1", len(got))
	}
	if s := <-got; !strings.Contains(strings.Join(s.Lines(), "\n"), "forbidden") {
		t.Errorf("%v", s.Lines())
	}
}

// TestJobMonitorStopsWhenForbidden: when the exporter pods may not be listed, the sample says
// which permission is missing and the monitor stops asking.
func TestJobMonitorStopsWhenForbidden(t *testing.T) {
	cs := fake.NewClientset()
	cs.PrependReactor("list", "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, "", errors.New("RBAC"))
	})
	var mu sync.Mutex
	reads := 0
	got := make(chan Snapshot, 8)
	m := JobMonitor{
		Interval: 10 * time.Millisecond,
		Sampler: Sampler{Read: func(ctx context.Context, nodes []string) ([]GPU, error) {
			mu.Lock()
			reads++
			mu.Unlock()
			_, err := FindExporters(ctx, cs, nodes)
			return nil, err
		}},
		Emit: func(s Snapshot) { got <- s },
	}
	update, stop := m.Watch(nil)(time.Now())
	update(jobs.Snapshot{Namespace: "ns", Phase: "Running", Pods: []jobs.PodInfo{{Name: "p", Replica: "worker", Phase: "Running", Node: "n1"}}})
	s := <-got
	time.Sleep(100 * time.Millisecond)
	stop()
	mu.Lock()
	defer mu.Unlock()
	if !s.Final || reads != 1 {
		t.Fatalf("final %v after %d reads, want one read", s.Final, reads)
	}
	lines := strings.Join(s.Lines(), "\n")
	if !strings.Contains(lines, "you may not list pods in all namespaces, gpu-operator, nvidia-gpu-operator") {
		t.Errorf("%s", lines)
	}
}

// TestJobMonitorQuiet: with QuietFor, samples that say what the last one said are held back; a
// change of verdict is emitted at once. NoVerdict leaves the verdict line out.
func TestJobMonitorQuiet(t *testing.T) {
	pct := func(v float64) *float64 { return &v }
	var mu sync.Mutex
	sm := 0.9
	got := make(chan Snapshot, 64)
	m := JobMonitor{
		Interval: 5 * time.Millisecond, QuietFor: time.Hour, NoVerdict: true,
		Sampler: Sampler{Read: func(context.Context, []string) ([]GPU, error) {
			mu.Lock()
			defer mu.Unlock()
			return []GPU{{Host: "n1", GPU: "0", Namespace: "ns", Pod: "p", SMActive: pct(sm)}}, nil
		}},
		Emit: func(s Snapshot) { got <- s },
	}
	update, stop := m.Watch(nil)(time.Now())
	update(jobs.Snapshot{Namespace: "ns", Phase: "Running", Pods: []jobs.PodInfo{{Name: "p", Replica: "worker", Phase: "Running", Node: "n1"}}})
	first := <-got
	time.Sleep(60 * time.Millisecond) // ~12 samples, all alike
	mu.Lock()
	sm = 0.01
	mu.Unlock()
	second := <-got
	stop()
	if first.Bound != GPUBound || second.Bound != Waiting || len(got) > 1 {
		t.Fatalf("first %s, second %s, then %d more", first.Bound, second.Bound, len(got))
	}
	for _, l := range second.Lines() {
		if strings.Contains(l, "waiting on the network") {
			t.Errorf("NoVerdict, yet: %s", l)
		}
	}
}
