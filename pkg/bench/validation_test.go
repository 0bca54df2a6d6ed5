package bench

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	kubeflowv1 "github.com/kubeflow/training-operator/pkg/apis/kubeflow.org/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

func TestValidate(t *testing.T) {
	now := time.Date(2026, 12, 5, 12, 0, 0, 0, time.UTC)
	healthy, slow := 90.0, 9.6
	save := func(t *testing.T, dir, name string, mod func(*Result)) {
		t.Helper()
		res := &Result{Kind: Kind, Name: name, Fabric: "ib", Valid: true, Finished: now.Add(-time.Hour), Problems: []string{},
			GPUsPerNode: 8, Peaks: []Peak{{Variant: "ring", Busbw: 45, Size: 8 << 30, PctLineRate: &healthy}},
			Variants: []*VariantResult{{Nodes: []string{"gpu-node-1", "gpu-node-2", "gpu-node-3"}}}}
		if mod != nil {
			mod(res)
		}
		d := filepath.Join(dir, name)
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		b, err := json.Marshal(res)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(d, ResultJSON), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct {
		name   string
		mod    func(*Result)
		maxAge time.Duration
		fabric string
		nodes  int
		gpus   int
		reason GateReason
		detail string
	}{
		{name: "valid", fabric: "ib", nodes: 3, maxAge: 24 * time.Hour},
		{name: "any age", mod: func(r *Result) { r.Finished = now.Add(-30 * 24 * time.Hour) }, fabric: "ib", nodes: 2},
		{name: "invalid", mod: func(r *Result) { r.Valid, r.Problems = false, []string{"ring: socket-fallback: NCCL used sockets"} }, fabric: "ib", nodes: 3, reason: GateInvalid, detail: "it is INVALID (ring: socket-fallback"},
		{name: "stale", mod: func(r *Result) { r.Finished = now.Add(-49 * time.Hour) }, maxAge: 24 * time.Hour, fabric: "ib", nodes: 3, reason: GateStale, detail: "it finished 49h0m0s ago, 2026-12-03T11:00:00Z, longer ago than 24h0m0s allows"},
		{name: "fabric", fabric: "roce", nodes: 3, reason: GateFabric, detail: "it measured fabric ib, the job runs on roce"},
		{name: "too few", fabric: "ib", nodes: 4, reason: GateTooSmall, detail: "it measured 3 node(s) (gpu-node-1,gpu-node-2,gpu-node-3), the job needs 4"},
		{name: "valid but slow", mod: func(r *Result) { r.Peaks[0].PctLineRate = &slow }, fabric: "ib", nodes: 3, reason: GateSlow, detail: "its busbw is not a healthy fabric's (10% of line rate at 8 GiB; at least 80% needed)"},
		{name: "newer failed bench", mod: func(r *Result) { r.Valid, r.Peaks, r.Problems = false, nil, []string{"ring: job-failed"} }, fabric: "ib", nodes: 3, reason: GateInvalid, detail: "it is INVALID (ring: job-failed)"},
		{name: "fewer GPUs per node", mod: func(r *Result) { r.GPUsPerNode = 1 }, fabric: "ib", nodes: 3, gpus: 8, reason: GateGPUs, detail: "it ran 1 GPU(s) per node, the job uses 8"},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			// An older healthy pass is there too: the newest bench is judged, whatever it says.
			save(t, dir, "older", func(r *Result) { r.Finished = now.Add(-1000 * 24 * time.Hour) })
			save(t, dir, "newest", c.mod)
			v, err := Validate(dir, now, c.maxAge, c.fabric, c.nodes, c.gpus)
			var ge *GateError
			switch {
			case c.reason == "":
				if err != nil || v.Result.Name != "newest" || strings.Join(v.Nodes, ",") != "gpu-node-1,gpu-node-2,gpu-node-3" {
					t.Fatalf("%v %+v", err, v)
				}
			case !errors.As(err, &ge) || ge.Reason != c.reason || !strings.Contains(err.Error(), c.detail) || !strings.Contains(err.Error(), "newest"):
				t.Fatalf("got %v, want %s with %q", err, c.reason, c.detail)
			}
		})
	}
	// `--out DIR` itself (DIR/result.json), as the refusal's hint says, is read too.
	dir := t.TempDir()
	save(t, dir, ".", nil)
	if v, err := Validate(dir, now, 0, "ib", 3, 8); err != nil || v.Path != filepath.Join(dir, ResultJSON) {
		t.Fatalf("DIR/result.json: %v %+v", err, v)
	}
	_, err := Validate(t.TempDir(), now, 0, "ib", 2, 1)
	var ge *GateError
	if !errors.As(err, &ge) || ge.Reason != GateNoResult {
		t.Fatalf("empty folder: %v", err)
	}
}

// A PyTorchJob's master and workers are pinned alike (its master is rank 0).
func TestPinWorkersPyTorchJob(t *testing.T) {
	job := &kubeflowv1.PyTorchJob{Spec: kubeflowv1.PyTorchJobSpec{PyTorchReplicaSpecs: map[kubeflowv1.ReplicaType]*kubeflowv1.ReplicaSpec{
		kubeflowv1.PyTorchJobReplicaTypeMaster: {Template: corev1.PodTemplateSpec{}},
		kubeflowv1.PyTorchJobReplicaTypeWorker: {Template: corev1.PodTemplateSpec{}},
	}}}
	if err := PinWorkers([]runtime.Object{job}, []string{"gpu-node-1", "gpu-node-3"}); err != nil {
		t.Fatal(err)
	}
	for typ, r := range job.Spec.PyTorchReplicaSpecs {
		a := r.Template.Spec.Affinity
		if a == nil || a.NodeAffinity == nil || len(a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms) != 2 {
			t.Fatalf("%s not pinned: %+v", typ, a)
		}
	}
}
