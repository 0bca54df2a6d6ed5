package detect

import (
	"context"
	"errors"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/ain-hpc/ain/pkg/kube"
	"github.com/ain-hpc/ain/pkg/preflight"
	"github.com/ain-hpc/ain/pkg/profile"
)

func gpuNode(name string) *corev1.Node {
	alloc := corev1.ResourceList{
		"nvidia.com/gpu":                *resource.NewQuantity(8, resource.DecimalSI),
		"rdma/rdma_shared_device_a":     *resource.NewQuantity(63, resource.DecimalSI),
		corev1.ResourceCPU:              resource.MustParse("96"),
		corev1.ResourceMemory:           resource.MustParse("1Ti"),
		corev1.ResourceEphemeralStorage: resource.MustParse("1Ti"),
	}
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3"}},
		Status: corev1.NodeStatus{Allocatable: alloc, Capacity: alloc}}
}

func nad(ns, name, resourceName, config string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "k8s.cni.cncf.io/v1", "kind": "NetworkAttachmentDefinition",
		"metadata": map[string]any{"namespace": ns, "name": name, "annotations": map[string]any{"k8s.v1.cni.cncf.io/resourceName": resourceName}},
		"spec":     map[string]any{"config": config},
	}}
	return u
}

func clients(t *testing.T, nads ...*unstructured.Unstructured) *kube.Clients {
	dyn := dynfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
		map[schema.GroupVersionResource]string{preflight.NADResource: "NetworkAttachmentDefinitionList"})
	for _, n := range nads {
		if _, err := dyn.Resource(preflight.NADResource).Namespace(n.GetNamespace()).Create(context.Background(), n, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	return &kube.Clients{Kube: fake.NewSimpleClientset(gpuNode("gpu-1"), gpuNode("gpu-2")), Dynamic: dyn, Namespace: "default"}
}

// Without probes, the API alone gives the GPU count, the RDMA resource and the RoCE network
// (from the macvlan NAD's CNI config); the probed fields are listed as not detected, saying why.
func TestRunReadsTheAPI(t *testing.T) {
	kc := clients(t, nad("ml", "rail0", "rdma/rdma_shared_device_a",
		`{"type":"macvlan","master":"ens1f0np0","ipam":{"type":"whereabouts","range":"10.10.0.0/16"}}`))
	d, err := (&Detector{Clients: kc}).Run(context.Background(), Options{NoProbes: true})
	if err != nil {
		t.Fatal(err)
	}
	p := d.Profile
	if p.Spec.RDMA.Resource != "rdma/rdma_shared_device_a" || p.Spec.Fabric != profile.FabricRoCE || strings.Join(p.Spec.Networks, ",") != "ml/rail0" {
		t.Fatalf("profile %+v", p.Spec)
	}
	y, err := d.YAML("https://fake", "now")
	if err != nil || !strings.Contains(string(y), "--no-probes") {
		t.Fatalf("the YAML does not say the probes were skipped: %v\n%s", err, y)
	}
}

// A cluster that refuses to list nodes is an error, classified as pkg/kube classifies it.
func TestRunErrors(t *testing.T) {
	kc := clients(t)
	kc.Kube.(*fake.Clientset).PrependReactor("list", "nodes", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: "nodes"}, "", errors.New("no RBAC"))
	})
	_, err := (&Detector{Clients: kc}).Run(context.Background(), Options{NoProbes: true})
	var ce *kube.CallError
	if !errors.As(err, &ce) || ce.Reason != kube.ReasonForbidden || !strings.Contains(err.Error(), "list nodes") {
		t.Fatalf("got %v, want a forbidden kube.CallError about listing nodes", err)
	}
}
