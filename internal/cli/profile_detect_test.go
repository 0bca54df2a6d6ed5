package cli

import (
	"context"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/ain-hpc/ain/pkg/preflight"
	"github.com/ain-hpc/ain/pkg/profile"
	"github.com/ain-hpc/ain/pkg/sandbox/sandboxtest"
)

// TestProfileDetectSandbox runs `ain profile detect` against the sandbox's real API server: its
// simulated GPU nodes carry nvidia.com/gpu and rdma/rdma_shared_device_a allocatable and the
// InfiniBand link-layer label; Multus is absent at first (the networks are reported undetected,
// saying why), then a NetworkAttachmentDefinition CRD and an ipoib network tied to the RDMA
// resource are created and detected. Every output parses back as a profile.
func TestProfileDetectSandbox(t *testing.T) {
	sb := sandboxtest.Get(t)
	code, out, errOut := runBenchCLI(t, "profile", "detect", "--kubeconfig", sb.Kubeconfig)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	p, err := profile.Parse("detected.yaml", []byte(out))
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if p.Spec.Fabric != "ib" || p.Spec.RDMA.Resource != "rdma/rdma_shared_device_a" || p.Spec.GPUResource != "nvidia.com/gpu" || len(p.Spec.Networks) != 0 {
		t.Errorf("spec %+v\n%s", p.Spec, out)
	}
	for _, want := range []string{"fabric: ib  # node label ain.dev/link-layer on 3 of 3 GPU nodes",
		"resource: rdma/rdma_shared_device_a  # node allocatable (3 of 3 GPU nodes)",
		"the NetworkAttachmentDefinition CRD (k8s.cni.cncf.io/v1) is not installed: no Multus",
		"spec.lineRate: the port rate"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}

	// Multus' CRD (the fields detection reads) and an IPoIB network on the RDMA resource.
	ctx := context.Background()
	dyn := sb.Dynamic(t)
	crdRes := schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
	crd := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
		"metadata": map[string]any{"name": "network-attachment-definitions.k8s.cni.cncf.io"},
		"spec": map[string]any{
			"group": "k8s.cni.cncf.io", "scope": "Namespaced",
			"names": map[string]any{"plural": "network-attachment-definitions", "singular": "network-attachment-definition", "kind": "NetworkAttachmentDefinition", "shortNames": []any{"net-attach-def"}},
			"versions": []any{map[string]any{"name": "v1", "served": true, "storage": true, "schema": map[string]any{"openAPIV3Schema": map[string]any{
				"type": "object", "properties": map[string]any{"spec": map[string]any{"type": "object", "properties": map[string]any{"config": map[string]any{"type": "string"}}}}}}}},
		},
	}}
	if _, err := dyn.Resource(crdRes).Create(ctx, crd, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = dyn.Resource(crdRes).Delete(context.Background(), crd.GetName(), metav1.DeleteOptions{}) })
	ns := sb.Namespace(t)
	nad := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "k8s.cni.cncf.io/v1", "kind": "NetworkAttachmentDefinition",
		"metadata": map[string]any{"name": "ib-net", "namespace": ns, "annotations": map[string]any{"k8s.v1.cni.cncf.io/resourceName": "rdma/rdma_shared_device_a"}},
		"spec":     map[string]any{"config": `{"cniVersion":"0.3.1","type":"ipoib","master":"ibp12s0","ipam":{"type":"whereabouts","range":"192.168.50.0/24"}}`},
	}}
	// The CRD takes a moment to be served.
	deadline := time.Now().Add(30 * time.Second)
	for {
		_, err := dyn.Resource(preflight.NADResource).Namespace(ns).Create(ctx, nad, metav1.CreateOptions{})
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("create the NAD: %v", err)
		}
		time.Sleep(300 * time.Millisecond)
	}
	code, out, errOut = runBenchCLI(t, "profile", "detect", "--kubeconfig", sb.Kubeconfig)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	p, err = profile.Parse("detected.yaml", []byte(out))
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if strings.Join(p.Spec.Networks, ",") != ns+"/ib-net" || p.Spec.Fabric != "ib" || p.Spec.AddrRange != "" {
		t.Errorf("spec %+v\n%s", p.Spec, out)
	}
	code, out, _ = runBenchCLI(t, "profile", "detect", "--kubeconfig", sb.Kubeconfig, "-o", "json")
	if code != 0 || !strings.Contains(out, `"type": "ipoib"`) || !strings.Contains(out, `"subnet": "192.168.50.0/24"`) {
		t.Errorf("json: exit %d\n%s", code, out)
	}
}
