// Package integration reads the sandbox's dcgm-exporter pages the way `ain doctor gpu --node`
// does: the exporter pods found by their labels, each page fetched through the API server's
// port-forward (a real kube-apiserver, kwok forwarding to the agent's page), then analysed.
package integration

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ain-hpc/ain/pkg/dcgm"
	"github.com/ain-hpc/ain/pkg/jobs"
	"github.com/ain-hpc/ain/pkg/sandbox"
	"github.com/ain-hpc/ain/pkg/sandbox/sandboxtest"
)

func TestMain(m *testing.M) {
	sandboxtest.Main(m, sandbox.Config{Nodes: 2, GPUsPerNode: 2})
}

// scrapeAll reads every node's page, retrying while the exporter pods and their forwards come up.
func scrapeAll(t *testing.T, sb *sandboxtest.Sandbox) []dcgm.GPU {
	t.Helper()
	cs := sb.Clientset(t)
	ctx := context.Background()
	nodes := []string{sandbox.NodeName(1), sandbox.NodeName(2)}
	var last error
	for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); time.Sleep(time.Second) {
		exps, err := dcgm.FindExporters(ctx, cs, nodes)
		if err != nil {
			last = err
			continue
		}
		var gpus []dcgm.GPU
		for _, e := range exps {
			s, err := dcgm.Scrape(ctx, sb.REST, cs, e, 10*time.Second)
			if err != nil {
				last = err
				gpus = nil
				break
			}
			gpus = append(gpus, s.GPUs...)
		}
		if gpus != nil {
			return gpus
		}
	}
	t.Fatalf("no pages: %v", last)
	return nil
}

// TestLiveExporterPages: a running pod that holds a GPU shows on its node's page, busy and
// labelled with the pod; the scenario's XID and thermal slowdown reach the analysis.
func TestLiveExporterPages(t *testing.T) {
	sb := sandboxtest.Get(t)
	sb.UseScenario(t, "gpu-xid")
	ns := sb.Namespace(t)
	cs := sb.Clientset(t)
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "trainer-0", Namespace: ns},
		Spec: corev1.PodSpec{NodeName: sandbox.NodeName(1), Containers: []corev1.Container{{Name: "train", Image: "pytorch",
			Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("1")}}}}}}
	if _, err := cs.CoreV1().Pods(ns).Create(context.Background(), pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var gpus []dcgm.GPU
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(time.Second) {
		gpus = scrapeAll(t, sb)
		held := false
		for _, g := range gpus {
			held = held || g.PodName() != "" && strings.Contains(g.PodName(), "trainer-0")
		}
		if held || time.Now().After(deadline) {
			break
		}
	}
	if len(gpus) != 4 {
		t.Fatalf("%d GPUs on 2 nodes x 2", len(gpus))
	}
	r := dcgm.Analyze(gpus)
	var text []string
	for _, p := range r.Problems {
		text = append(text, p.GPU+": "+p.What)
	}
	all := strings.Join(text, "\n")
	for _, want := range []string{"XID 79", "thermal"} {
		if !strings.Contains(all, want) {
			t.Errorf("problems lack %q:\n%s", want, all)
		}
	}
	busy := 0
	for _, g := range gpus {
		if pct, ok := g.Busy(); ok && pct > 50 && strings.Contains(g.PodName(), "trainer-0") && g.Host == sandbox.NodeName(1) {
			busy++
		}
	}
	if busy != 1 {
		t.Errorf("%d busy GPUs of trainer-0 on %s, want 1:\n%+v", busy, sandbox.NodeName(1), gpus)
	}
}

// TestNoExporter: a node without an exporter pod is named, with the exporters found beside it.
func TestNoExporter(t *testing.T) {
	sb := sandboxtest.Get(t)
	exps, err := dcgm.FindExporters(context.Background(), sb.Clientset(t), []string{sandbox.NodeName(1), "no-such-node"})
	var ne *dcgm.NoExporterError
	if !errors.As(err, &ne) || len(ne.Nodes) != 1 || ne.Nodes[0] != "no-such-node" || len(exps) != 1 {
		t.Fatalf("%+v %v", exps, err)
	}
}

// TestJobMonitorOnTheSandbox: the ranks of a job running on two nodes get their own GPUs from
// the live pages (read through the API server's port-forward), busy, and the job reads
// GPU-bound.
func TestJobMonitorOnTheSandbox(t *testing.T) {
	sb := sandboxtest.Get(t)
	ns := sb.Namespace(t)
	cs := sb.Clientset(t)
	var snapPods []jobs.PodInfo
	for i := range 2 {
		name := fmt.Sprintf("mon-worker-%d", i)
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
			Spec: corev1.PodSpec{NodeName: sandbox.NodeName(i + 1), Containers: []corev1.Container{{Name: "train", Image: "pytorch",
				Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("1")}}}}}}
		if _, err := cs.CoreV1().Pods(ns).Create(context.Background(), pod, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		snapPods = append(snapPods, jobs.PodInfo{Name: name, Replica: "worker", Index: i, Phase: "Running", Node: sandbox.NodeName(i + 1)})
	}
	// One reader for every try: its exporters, once found, are read again through it.
	reader := &dcgm.NodeReader{Config: sb.REST, Kube: cs, Timeout: 10 * time.Second}
	sampler := dcgm.Sampler{Read: reader.Read}
	var s dcgm.Snapshot
	for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); time.Sleep(time.Second) {
		got := make(chan dcgm.Snapshot, 1)
		update, stop := dcgm.JobMonitor{Sampler: sampler, Interval: time.Hour, Emit: func(s dcgm.Snapshot) { got <- s }}.Watch(nil)(time.Now())
		update(jobs.Snapshot{Namespace: ns, Name: "mon", Phase: "Running", Pods: snapPods})
		s = <-got
		stop()
		if len(s.Ranks) == 2 && s.Bound == dcgm.GPUBound {
			break
		}
	}
	var b strings.Builder
	s.WriteLines(&b, "")
	if len(s.Ranks) != 2 || s.Bound != dcgm.GPUBound {
		t.Fatalf("want both ranks with their busy GPU:\n%s", b.String())
	}
	for i, r := range s.Ranks {
		if r.GPUs != 1 || r.Pod.Node != sandbox.NodeName(i+1) || r.Pod.Label != fmt.Sprintf("worker-%d", i) || r.At.IsZero() || r.At.After(s.At) {
			t.Errorf("rank %d: %+v", i, r)
		}
	}
	t.Logf("\n%s", b.String())
}
