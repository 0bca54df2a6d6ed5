package dcgm

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

// TestNodeReaderKeepsExporters: the exporter pods are listed once for many reads of the same
// nodes, and again only for a node without a kept exporter, when a kept exporter cannot be read
// (restarted under a new name: its node is read from the new one in the same Read, the others
// not twice), and after MaxAge. Every GPU carries its page's read time.
func TestNodeReaderKeepsExporters(t *testing.T) {
	exporter := func(name, node string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "gpu-operator", Labels: map[string]string{"app": "nvidia-dcgm-exporter"}},
			Spec: corev1.PodSpec{NodeName: node}, Status: corev1.PodStatus{Phase: corev1.PodRunning}}
	}
	cs := fake.NewClientset(exporter("exp-n1", "n1"), exporter("exp-n2", "n2"))
	var (
		mu      sync.Mutex
		lists   int
		scrapes []string
		alive   = map[string]bool{"exp-n1": true, "exp-n2": true}
	)
	cs.PrependReactor("list", "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
		mu.Lock()
		lists++
		mu.Unlock()
		return false, nil, nil
	})
	now := time.Date(2026, 12, 5, 10, 0, 0, 0, time.UTC)
	r := &NodeReader{Kube: cs, Now: func() time.Time { return now },
		scrape: func(_ context.Context, e Exporter) (*Sample, error) {
			mu.Lock()
			defer mu.Unlock()
			scrapes = append(scrapes, e.Pod)
			if !alive[e.Pod] {
				return nil, fmt.Errorf("pods %q not found", e.Pod)
			}
			return &Sample{GPUs: []GPU{{GPU: "0", Namespace: "ns", Pod: "rank-on-" + e.Node}}}, nil
		}}
	read := func(step string, wantLists int, nodes ...string) []GPU {
		t.Helper()
		mu.Lock()
		scrapes = nil
		mu.Unlock()
		gpus, err := r.Read(context.Background(), nodes)
		if err != nil || len(gpus) != len(nodes) {
			t.Fatalf("%s: %d GPUs, %v", step, len(gpus), err)
		}
		for i, g := range gpus {
			if g.Host != nodes[i] || !g.ReadAt.Equal(now) {
				t.Errorf("%s: GPU %d on %s read at %v, want on %s at %v", step, i, g.Host, g.ReadAt, nodes[i], now)
			}
		}
		mu.Lock()
		defer mu.Unlock()
		if lists != wantLists {
			t.Fatalf("%s: %d pod LISTs in all, want %d", step, lists, wantLists)
		}
		return gpus
	}
	perFind := len(ExporterSelectors)
	read("first", perFind, "n1", "n2")
	for range 3 {
		now = now.Add(15 * time.Second)
		read("same nodes", perFind, "n1", "n2")
	}

	if _, err := cs.CoreV1().Pods("gpu-operator").Create(context.Background(), exporter("exp-n3", "n3"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	alive["exp-n3"] = true
	mu.Unlock()
	read("a node without a kept exporter", 2*perFind, "n1", "n2", "n3")

	// The exporter of n2 restarts under another name: its old pod fails, the pods are listed
	// again and n2 is read from the new one; n1 and n3 are read once.
	if err := cs.CoreV1().Pods("gpu-operator").Delete(context.Background(), "exp-n2", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CoreV1().Pods("gpu-operator").Create(context.Background(), exporter("exp-n2-new", "n2"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	delete(alive, "exp-n2")
	alive["exp-n2-new"] = true
	mu.Unlock()
	now = now.Add(15 * time.Second)
	read("a restarted exporter", 3*perFind, "n1", "n2", "n3")
	mu.Lock()
	slices.Sort(scrapes)
	if !slices.Equal(scrapes, []string{"exp-n1", "exp-n2", "exp-n2-new", "exp-n3"}) {
		t.Errorf("pages read %v, want each once and n2's new exporter", scrapes)
	}
	mu.Unlock()

	now = now.Add(ExportersMaxAge - time.Second)
	read("younger than MaxAge", 3*perFind, "n1", "n2", "n3")
	now = now.Add(time.Second)
	read("MaxAge old", 4*perFind, "n1", "n2", "n3")
}

// TestNodeReaderFailedReadOfAFreshList: an exporter that fails right after the pods were listed
// is not looked for again in the same Read; its node's error is kept beside the others' GPUs.
func TestNodeReaderFailedReadOfAFreshList(t *testing.T) {
	exp := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "exp-n1", Namespace: "gpu-operator", Labels: map[string]string{"app": "nvidia-dcgm-exporter"}},
		Spec: corev1.PodSpec{NodeName: "n1"}, Status: corev1.PodStatus{Phase: corev1.PodRunning}}
	cs := fake.NewClientset(exp)
	lists := 0
	cs.PrependReactor("list", "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
		lists++
		return false, nil, nil
	})
	r := &NodeReader{Kube: cs, scrape: func(context.Context, Exporter) (*Sample, error) { return nil, errors.New("connection refused") }}
	gpus, err := r.Read(context.Background(), []string{"n1", "n2"})
	var se *ScrapeError
	var ne *NoExporterError
	if len(gpus) != 0 || !errors.As(err, &se) || se.Exporter.Pod != "exp-n1" || !errors.As(err, &ne) || !slices.Equal(ne.Nodes, []string{"n2"}) {
		t.Fatalf("%v %v", gpus, err)
	}
	if lists != len(ExporterSelectors) {
		t.Errorf("%d LISTs, want one look", lists)
	}
}
