package jobs

import (
	"context"
	"errors"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

// Every pod of a deleted job is named, also one the garbage collector removed first and one
// this user may not delete (it goes with the job through its owner reference, and says so).
func TestDeleteNamesEveryPod(t *testing.T) {
	be := mpiV2
	job := &unstructured.Unstructured{Object: map[string]any{"apiVersion": be.GVR().GroupVersion().String(), "kind": be.Kind(),
		"metadata": map[string]any{"name": "nccl", "namespace": "ns", "uid": "u1"}}}
	pod := func(name string) runtime.Object {
		sel := strings.SplitN(be.PodSelector("nccl"), "=", 2)
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", Labels: map[string]string{sel[0]: sel[1]}}}
	}
	kube := fake.NewSimpleClientset(pod("nccl-launcher-x"), pod("nccl-worker-0"), pod("nccl-worker-1"))
	kube.PrependReactor("delete", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		switch a.(k8stesting.DeleteAction).GetName() {
		case "nccl-worker-0":
			return true, nil, apierrors.NewNotFound(schema.GroupResource{Resource: "pods"}, "nccl-worker-0")
		case "nccl-worker-1":
			return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, "nccl-worker-1", errors.New("RBAC"))
		}
		return false, nil, nil
	})
	dyn := dynfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{be.GVR(): be.Kind() + "List"})
	if _, err := dyn.Resource(be.GVR()).Namespace("ns").Create(context.Background(), job, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	c := &Cluster{Kube: kube, Dynamic: dyn, Namespace: "ns"}
	got, err := c.deleteJob(context.Background(), be, job, false)
	want := "MPIJob/nccl; pod/nccl-launcher-x; pod/nccl-worker-0; pod/nccl-worker-1, removed with the job by the garbage collector (deleting it here: forbidden)"
	if err != nil || strings.Join(got, "; ") != want {
		t.Fatalf("got %q, %v\nwant %q", strings.Join(got, "; "), err, want)
	}
}
