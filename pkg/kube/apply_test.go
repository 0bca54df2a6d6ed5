package kube

import (
	"context"
	"errors"
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynfake "k8s.io/client-go/dynamic/fake"
	k8stesting "k8s.io/client-go/testing"
)

func configMap(name, ns string, l map[string]string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion("v1")
	u.SetKind("ConfigMap")
	u.SetName(name)
	u.SetNamespace(ns)
	u.SetLabels(l)
	return u
}

func fakeDynamic(objs ...runtime.Object) *dynfake.FakeDynamicClient {
	return dynfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
		map[schema.GroupVersionResource]string{ConfigMaps.GVR: "ConfigMapList", Services.GVR: "ServiceList"}, objs...)
}

// An object of a kind the applier was not given is refused before any request is sent.
func TestApplyRefusesUnknownKind(t *testing.T) {
	dyn := fakeDynamic()
	ap := &Applier{Dynamic: dyn, Namespace: "ns", Kinds: map[string]Resource{"Service": Services}}
	pod := &corev1.Pod{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"}, ObjectMeta: metav1.ObjectMeta{Name: "p"}}
	_, err := ap.Apply(context.Background(), []runtime.Object{pod}, DryRunNone)
	if err == nil || err.Error() != "p: ain does not apply Pod objects here" {
		t.Fatalf("err %v", err)
	}
	if n := len(dyn.Actions()); n != 0 {
		t.Fatalf("%d requests sent for a refused kind", n)
	}
}

// A forbidden apply comes back as a ForbiddenError that still reads as the API's 403.
func TestApplyTypedErrors(t *testing.T) {
	dyn := fakeDynamic()
	dyn.PrependReactor("patch", "configmaps", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: "configmaps"}, "a", errors.New("user u cannot patch"))
	})
	ap := &Applier{Dynamic: dyn, Namespace: "ns", Kinds: map[string]Resource{"ConfigMap": ConfigMaps}}
	res, err := ap.Apply(context.Background(), []runtime.Object{configMap("a", "", nil)}, DryRunServer)
	var fe *ForbiddenError
	if !errors.As(err, &fe) || fe.Verb != "apply" || fe.Name != "a" || fe.Namespace != "ns" || !IsForbidden(err) || !apierrors.IsForbidden(err) {
		t.Fatalf("err %#v", err)
	}
	if len(res) != 0 {
		t.Fatalf("results for a failed apply: %v", res)
	}
	pa := dyn.Actions()[0].(k8stesting.PatchAction)
	if got := pa.GetResource().Resource; got != "configmaps" {
		t.Fatalf("patched %s", got)
	}
}

// Prune deletes the run's objects that are not kept, and nothing of another run or not ain's.
func TestPrune(t *testing.T) {
	run := RunLabels("qwen")
	other := RunLabels("llama")
	notOurs := map[string]string{LabelRun: "qwen"} // no managed-by: someone else's object
	dyn := fakeDynamic(
		configMap("qwen-0", "ns", run), configMap("qwen-1", "ns", run), configMap("qwen-2", "ns", run),
		configMap("llama-0", "ns", other), configMap("hand-made", "ns", notOurs), configMap("qwen-9", "elsewhere", run),
	)
	ap := &Applier{Dynamic: dyn, Namespace: "ns", Kinds: map[string]Resource{"ConfigMap": ConfigMaps, "Service": Services}}
	keep := []Applied{{Object: configMap("qwen-0", "ns", run)}}
	pruned, err := ap.Prune(context.Background(), "qwen", nil, keep)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"ConfigMap/qwen-1", "ConfigMap/qwen-2"}; !reflect.DeepEqual(pruned, want) {
		t.Fatalf("pruned %v, want %v", pruned, want)
	}
	left, err := dyn.Resource(ConfigMaps.GVR).Namespace("ns").List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, u := range left.Items {
		names = append(names, u.GetName())
	}
	if want := []string{"hand-made", "llama-0", "qwen-0"}; !reflect.DeepEqual(names, want) {
		t.Fatalf("left %v, want %v", names, want)
	}
	if _, err := ap.Prune(context.Background(), "", nil, nil); err == nil {
		t.Fatal("Prune with no run name selected every object ain made")
	}
}
