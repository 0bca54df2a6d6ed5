// Package integration runs pkg/bench's cluster flows against the local sandbox: a real API
// server and scheduler, kwok nodes, and the sandbox agent playing the pods' programs.
package integration

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ain-hpc/ain/pkg/bench"
	"github.com/ain-hpc/ain/pkg/perftest"
	"github.com/ain-hpc/ain/pkg/preflight"
	"github.com/ain-hpc/ain/pkg/probe"
	"github.com/ain-hpc/ain/pkg/profile"
	"github.com/ain-hpc/ain/pkg/sandbox"
	"github.com/ain-hpc/ain/pkg/sandbox/sandboxtest"
)

func TestMain(m *testing.M) {
	sandboxtest.Main(m, sandbox.Config{Nodes: 2})
}

// rdmaRun is an RDMARun in a namespace of the test's own that records its progress lines.
func rdmaRun(t *testing.T) (*bench.RDMARun, *sandboxtest.Sandbox, string, func() []string) {
	t.Helper()
	sb := sandboxtest.Get(t)
	ns := sb.Namespace(t)
	var mu sync.Mutex
	var lines []string
	run := &bench.RDMARun{
		Probe: preflight.Options{Kube: sb.Clientset(t), Dynamic: sb.Dynamic(t), Namespace: ns, Now: time.Now},
		Now:   time.Now,
		Progress: func(s string) {
			mu.Lock()
			lines = append(lines, s)
			mu.Unlock()
		},
	}
	return run, sb, ns, func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), lines...)
	}
}

func options(p *profile.Profile) bench.RDMAOptions {
	return bench.RDMAOptions{Profile: p, Command: perftest.Command{Test: "ib_write_bw", QPs: 1},
		Image: "ghcr.io/coreweave/nccl-tests:12.4.1-cudnn-devel-ubuntu22.04-nccl2.21.5-1-85f9143", Timeout: 3 * time.Minute}
}

// One library call picks two nodes, probes their ports, runs perftest between them and judges
// it against the ports' rate, and leaves no pod behind.
func TestRDMARunOnTheSandbox(t *testing.T) {
	run, sb, ns, progress := rdmaRun(t)
	o := options(profile.Default())
	o.Results = t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), o.Timeout)
	defer cancel()
	res, err := run.Run(context.Background(), ctx, o)
	if err != nil {
		t.Fatalf("%v\nprogress:\n%s", err, strings.Join(progress(), "\n"))
	}
	if res.Server == "" || res.Client == "" || res.Server == res.Client || res.RDMAGbps == nil || *res.RDMAGbps < 150 || res.ExpectedGbps != 200 || !res.OK {
		t.Fatalf("result %+v", res)
	}
	joined := strings.Join(progress(), "\n")
	for _, want := range []string{"probing the IB/RoCE ports of " + res.Server, "needs the GPU driver: each pod requests one GPU"} {
		if !strings.Contains(joined, want) {
			t.Errorf("progress lacks %q:\n%s", want, joined)
		}
	}
	pods, err := sb.Clientset(t).CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{LabelSelector: probe.LabelProbe})
	if err != nil || len(pods.Items) != 0 {
		t.Errorf("pods left behind: %d %v", len(pods.Items), err)
	}
}

// No two nodes with the profile's RDMA resource: a NoNodesError naming it, before any pod. An
// interrupt during the port probe: RDMAInterruptedError, the probe pods deleted.
func TestRDMARunRefusesAndStops(t *testing.T) {
	run, sb, ns, _ := rdmaRun(t)
	p := profile.Default()
	p.Spec.RDMA.Resource = "example.com/no-such-hca"
	_, err := run.Run(context.Background(), context.Background(), options(p))
	var nn *bench.NoNodesError
	if !errors.As(err, &nn) || nn.Resource != "example.com/no-such-hca" || nn.Found != 0 {
		t.Fatalf("no nodes: %v", err)
	}

	parent, cancel := context.WithCancel(context.Background())
	defer cancel()
	run.Progress = func(s string) {
		if strings.HasPrefix(s, "probing the IB/RoCE ports") {
			cancel()
		}
	}
	_, err = run.Run(parent, parent, options(profile.Default()))
	var ie *bench.RDMAInterruptedError
	if !errors.As(err, &ie) || ie.Error() != "interrupted: probe pods deleted" {
		t.Fatalf("interrupt: %v", err)
	}
	pods, err := sb.Clientset(t).CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{LabelSelector: probe.LabelProbe})
	if err != nil || len(pods.Items) != 0 {
		t.Errorf("pods left behind: %d %v", len(pods.Items), err)
	}
}
