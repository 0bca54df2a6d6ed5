package kube_test

import (
	"context"
	"errors"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/ain-hpc/ain/pkg/kube"
	"github.com/ain-hpc/ain/pkg/sandbox"
	"github.com/ain-hpc/ain/pkg/sandbox/sandboxtest"
)

// TestMain gives the integration tests a 1-node sandbox (a real API server: server-side apply,
// dry run and field ownership are the server's, not a fake's).
func TestMain(m *testing.M) {
	sandboxtest.Main(m, sandbox.Config{Nodes: 1, Stack: sandbox.StackLegacy})
}

func service(name string, port int64, l map[string]string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "Service",
		"metadata": map[string]any{"name": name},
		"spec": map[string]any{"clusterIP": "None", "selector": map[string]any{"app": name},
			"ports": []any{map[string]any{"name": "http", "port": port}}},
	}}
	u.SetLabels(l)
	return u
}

// Apply and Prune against a real API server: a server dry run persists nothing, a re-apply of
// a KeepSpec kind with the same spec is Unchanged and with another is refused, an unforced
// apply over another manager's field is a ConflictError, and Prune removes exactly what the
// run no longer renders (the serving helper's --replicas 2 then 1).
func TestApplyPruneAgainstAPIServer(t *testing.T) {
	sb := sandboxtest.Get(t)
	ns := sb.Namespace(t)
	dyn := sb.Dynamic(t)
	ctx := context.Background()
	kinds := map[string]kube.Resource{"Service": kube.Services}
	ap := &kube.Applier{Dynamic: dyn, Namespace: ns, Kinds: kinds, Force: true, KeepSpec: map[string]bool{"Service": true}}
	run := kube.RunLabels("qwen")
	two := []runtime.Object{service("qwen-0", 80, run), service("qwen-1", 80, run)}

	if _, err := ap.Apply(ctx, two, kube.DryRunServer); err != nil {
		t.Fatal(err)
	}
	if l, _ := dyn.Resource(kube.Services.GVR).Namespace(ns).List(ctx, metav1.ListOptions{}); len(l.Items) != 0 {
		t.Fatalf("a server dry run created %d services", len(l.Items))
	}
	res, err := ap.Apply(ctx, two, kube.DryRunNone)
	if err != nil || len(res) != 2 || res[0].Unchanged || res[0].Object.GetUID() == "" {
		t.Fatalf("apply: %v %+v", err, res)
	}
	res, err = ap.Apply(ctx, two[:1], kube.DryRunNone)
	if err != nil || !res[0].Unchanged {
		t.Fatalf("re-apply of the same spec: %v %+v", err, res)
	}
	_, err = ap.Apply(ctx, []runtime.Object{service("qwen-0", 81, run)}, kube.DryRunNone)
	var sc *kube.SpecChangeError
	if !errors.As(err, &sc) || sc.Name != "qwen-0" || sc.Existing == nil {
		t.Fatalf("changed spec: %v", err)
	}

	other := &kube.Applier{Dynamic: dyn, Namespace: ns, Kinds: kinds, FieldManager: "someone-else"}
	taken := service("qwen-1", 80, run)
	_ = unstructured.SetNestedField(taken.Object, "other", "spec", "selector", "app") // ain owns spec.selector.app
	_, err = other.Apply(ctx, []runtime.Object{taken}, kube.DryRunNone)
	var ce *kube.ConflictError
	if !errors.As(err, &ce) || ce.Name != "qwen-1" {
		t.Fatalf("unforced apply over ain's field: %v", err)
	}

	pruned, err := ap.Prune(ctx, "qwen", nil, res)
	if err != nil || len(pruned) != 1 || pruned[0] != "Service/qwen-1" {
		t.Fatalf("prune: %v %v", pruned, err)
	}
	if _, err := dyn.Resource(kube.Services.GVR).Namespace(ns).Get(ctx, "qwen-0", metav1.GetOptions{}); err != nil {
		t.Fatalf("the kept service is gone: %v", err)
	}
}
