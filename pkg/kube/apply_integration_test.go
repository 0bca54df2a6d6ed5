package kube_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

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

// cancelAfter is a transport that cancels the run's context once n requests have been answered:
// an interrupt (Ctrl-C) landing between two objects of a bundle, at an exact point.
type cancelAfter struct {
	rt     http.RoundTripper
	n      *atomic.Int32
	cancel context.CancelFunc
}

func (c cancelAfter) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := c.rt.RoundTrip(r)
	if c.n.Add(-1) == 0 {
		c.cancel()
	}
	return resp, err
}

// Issue 19: Ctrl-C during the apply of a bundle (a Deployment of three, Deployments without
// their Service) left it half-created. Apply finishes the bundle once it has started, and sends
// nothing when the interrupt came first.
func TestApplyBundleSurvivesInterrupt(t *testing.T) {
	sb := sandboxtest.Get(t)
	ns := sb.Namespace(t)
	kinds := map[string]kube.Resource{"Service": kube.Services, "ConfigMap": kube.ConfigMaps}
	run := kube.RunLabels("bundle")
	bundle := func(prefix string) []runtime.Object {
		cm := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
			"metadata": map[string]any{"name": prefix + "-config"}, "data": map[string]any{"k": "v"}}}
		return []runtime.Object{service(prefix+"-0", 80, run), service(prefix+"-1", 80, run), cm}
	}
	for _, after := range []int32{1, 2} {
		ctx, cancel := context.WithCancel(context.Background())
		cfg := rest.CopyConfig(sb.REST)
		n := &atomic.Int32{}
		n.Store(after)
		cfg.WrapTransport = func(rt http.RoundTripper) http.RoundTripper { return cancelAfter{rt: rt, n: n, cancel: cancel} }
		dyn, err := dynamic.NewForConfig(cfg)
		if err != nil {
			t.Fatal(err)
		}
		ap := &kube.Applier{Dynamic: dyn, Namespace: ns, Kinds: kinds, Force: true}
		prefix := fmt.Sprintf("cut%d", after)
		res, err := ap.Apply(ctx, bundle(prefix), kube.DryRunNone)
		if ctx.Err() == nil {
			t.Fatalf("after %d: the interrupt did not come", after)
		}
		if err != nil || len(res) != 3 {
			t.Fatalf("interrupted after %d request(s): %v, %d of 3 applied: the bundle is half-created", after, err, len(res))
		}
		for _, o := range bundle(prefix) {
			u := o.(*unstructured.Unstructured)
			r := kinds[u.GetKind()]
			if _, err := sb.Dynamic(t).Resource(r.GVR).Namespace(ns).Get(context.Background(), u.GetName(), metav1.GetOptions{}); err != nil {
				t.Errorf("after %d: %s %s missing: %v", after, u.GetKind(), u.GetName(), err)
			}
		}
		cancel()
	}
	// Interrupted before the first request: nothing is sent.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	ap := &kube.Applier{Dynamic: sb.Dynamic(t), Namespace: ns, Kinds: kinds, Force: true}
	if res, err := ap.Apply(ctx, bundle("early"), kube.DryRunNone); !errors.Is(err, context.Canceled) || len(res) != 0 {
		t.Fatalf("interrupted before apply: %v %v", res, err)
	}
	if l, _ := sb.Dynamic(t).Resource(kube.Services.GVR).Namespace(ns).List(context.Background(), metav1.ListOptions{}); len(l.Items) != 4 {
		t.Errorf("%d services, want the 4 of the two finished bundles", len(l.Items))
	}
}

// Issue 19: two `ain train --name same` with different specs at once both said "applied" and the
// second spec silently won. A KeepSpec object is created, not applied over: of two runs racing on
// one name, one creates it and the other is told it exists with a different spec (or, with the
// same spec, that it is already there).
func TestApplyKeepSpecRace(t *testing.T) {
	sb := sandboxtest.Get(t)
	ns := sb.Namespace(t)
	kinds := map[string]kube.Resource{"Service": kube.Services}
	const rounds = 8
	for i := range rounds {
		name := fmt.Sprintf("race-%d", i)
		var wg sync.WaitGroup
		start := make(chan struct{})
		errs := make([]error, 2)
		res := make([][]kube.Applied, 2)
		for j, port := range []int64{80, 81} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				ap := &kube.Applier{Dynamic: sb.Dynamic(t), Namespace: ns, Kinds: kinds, Force: true, KeepSpec: map[string]bool{"Service": true}}
				<-start
				res[j], errs[j] = ap.Apply(context.Background(), []runtime.Object{service(name, port, kube.RunLabels(name))}, kube.DryRunNone)
			}()
		}
		close(start)
		wg.Wait()
		won, refused := -1, 0
		for j := range 2 {
			var sc *kube.SpecChangeError
			switch {
			case errs[j] == nil && !res[j][0].Unchanged:
				won = j
			case errors.As(errs[j], &sc):
				refused++
			default:
				t.Errorf("%s: run %d: %v %+v", name, j, errs[j], res[j])
			}
		}
		if won < 0 || refused != 1 {
			t.Fatalf("%s: want one run to create it and the other refused; errors %v", name, errs)
		}
		got, err := sb.Dynamic(t).Resource(kube.Services.GVR).Namespace(ns).Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		ports, _, _ := unstructured.NestedSlice(got.Object, "spec", "ports")
		if p := ports[0].(map[string]any)["port"]; p != []int64{80, 81}[won] {
			t.Errorf("%s: stored port %v, but run %d (port %d) was told it won", name, p, won, []int64{80, 81}[won])
		}
	}
}
