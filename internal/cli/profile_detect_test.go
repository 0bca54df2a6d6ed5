package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/ain-hpc/ain/pkg/preflight"
	"github.com/ain-hpc/ain/pkg/probe"
	"github.com/ain-hpc/ain/pkg/profile"
	"github.com/ain-hpc/ain/pkg/sandbox/sandboxtest"
)

// TestProfileDetectSandbox runs `ain profile detect` against the sandbox's real API server: its
// simulated GPU nodes carry nvidia.com/gpu and rdma/rdma_shared_device_a allocatable and the
// InfiniBand link-layer label, and the probe pod (one for the pool of 3 alike nodes) runs the
// real sysfs dump over the node's simulated /sys (InfiniBand HDR, 2 ports). Multus is absent at
// first (the networks are reported undetected, saying why), then a NetworkAttachmentDefinition
// CRD and an ipoib network tied to the RDMA resource are created and detected. --no-probes
// leaves the probed fields undetected. Every output parses back as a profile, and no probe pod
// is left behind.
func TestProfileDetectSandbox(t *testing.T) {
	sb := sandboxtest.Get(t)
	p, out, errOut := runDetect(t, "--kubeconfig", sb.Kubeconfig)
	if p.Spec.Fabric != "ib" || p.Spec.RDMA.Resource != "rdma/rdma_shared_device_a" || p.Spec.GPUResource != "nvidia.com/gpu" || len(p.Spec.Networks) != 0 ||
		strings.Join(p.Spec.HCAs, ",") != "mlx5_0:1,mlx5_1:1" || p.Spec.LineRate != "200Gb" || p.Spec.GIDIndex != "auto" {
		t.Errorf("spec %+v\n%s", p.Spec, out)
	}
	for _, want := range []string{
		"fabric: ib  # probe pod on node gpu-node-1: /sys/class/infiniband/mlx5_0/ports/1/link_layer: InfiniBand (1 probe for its pool of 3 node(s))",
		"hcas:  # probe pod on node gpu-node-1: the ACTIVE InfiniBand ports",
		"lineRate: 200Gb  # probe pod on node gpu-node-1: /sys/class/infiniband/mlx5_0/ports/1/rate: 200 Gb/sec (4X HDR) (2 of 2 ports)",
		"resource: rdma/rdma_shared_device_a  # node allocatable (3 of 3 GPU nodes)",
		"#   sim-8xH100-ib, 8x NVIDIA-H100-80GB-HBM3 (3 node(s)): probe pod on gpu-node-1: ib, 2 of 2 port(s) used: mlx5_0:1 mlx5_1:1 at 200 Gb/sec (4X HDR)",
		"the NetworkAttachmentDefinition CRD (k8s.cni.cncf.io/v1) is not installed: no Multus"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	for _, gone := range []string{"spec.lineRate:", "spec.hcas:", "spec.gidIndex:", "Conflicts"} {
		if strings.Contains(out, gone) {
			t.Errorf("output still has %q:\n%s", gone, out)
		}
	}
	if !strings.Contains(errOut, "probe pod on gpu-node-1 for pool sim-8xH100-ib, 8x NVIDIA-H100-80GB-HBM3 (3 node(s)): holds rdma/rdma_shared_device_a") {
		t.Errorf("stderr does not say what is probed:\n%s", errOut)
	}
	noProbePods(t, sb)

	code, out, _ := runBenchCLI(t, "profile", "detect", "--kubeconfig", sb.Kubeconfig, "--no-probes")
	if code != 0 || !strings.Contains(out, "spec.lineRate: not probed (--no-probes); the port rate") || !strings.Contains(out, "lineRate: 400Gb  # default") || strings.Contains(out, "# Probe pods") {
		t.Errorf("--no-probes: exit %d\n%s", code, out)
	}

	// Multus' CRD (the fields detection reads) and an IPoIB network on the RDMA resource.
	ns := sb.Namespace(t)
	createNADCRD(t, sb)
	createNAD(t, sb, ns, "ib-net", `{"cniVersion":"0.3.1","type":"ipoib","master":"ibp12s0","ipam":{"type":"whereabouts","range":"192.168.50.0/24"}}`)
	p, out, errOut = runDetect(t, "--kubeconfig", sb.Kubeconfig)
	if strings.Join(p.Spec.Networks, ",") != ns+"/ib-net" || p.Spec.Fabric != "ib" || p.Spec.AddrRange != "" || !strings.Contains(errOut, "joins ["+ns+"/ib-net]") {
		t.Errorf("spec %+v\n%s\n%s", p.Spec, out, errOut)
	}
	code, out, _ = runBenchCLI(t, "profile", "detect", "--kubeconfig", sb.Kubeconfig, "-o", "json")
	if code != 0 || !strings.Contains(out, `"type": "ipoib"`) || !strings.Contains(out, `"subnet": "192.168.50.0/24"`) || !strings.Contains(out, `"port": "mlx5_1:1"`) {
		t.Errorf("json: exit %d\n%s", code, out)
	}
	noProbePods(t, sb)
}

// TestProfileDetectProbeConflicts: what the probes read disagrees with the labels, or nodes
// disagree with each other, and detection says so. roce-ports: the ports are Ethernet under
// nodes labelled infiniband (the profile takes the ports' roce); degraded-link with
// --every-node: gpu-node-2's ports run at 100 Gb/s, the others' at 200 (the profile takes 200Gb).
func TestProfileDetectProbeConflicts(t *testing.T) {
	sb := sandboxtest.Get(t)
	t.Run("label-vs-ports", func(t *testing.T) {
		sb.UseScenario(t, "roce-ports")
		p, out, _ := runDetect(t, "--kubeconfig", sb.Kubeconfig)
		if p.Spec.Fabric != "roce" {
			t.Errorf("fabric %s, want the ports' roce\n%s", p.Spec.Fabric, out)
		}
		want := "#   spec.fabric: node label ain.dev/link-layer on 3 of 3 GPU nodes says ib, but the probe pod on node gpu-node-1 reads /sys/class/infiniband/mlx5_0/ports/1/link_layer: Ethernet; the profile takes roce, what the ports are"
		if !strings.Contains(out, "# Conflicts (the cluster's sources disagree):") || !strings.Contains(out, want) {
			t.Errorf("output lacks the conflict %q:\n%s", want, out)
		}
	})
	t.Run("rates-differ", func(t *testing.T) {
		sb.UseScenario(t, "degraded-link")
		code, out, errOut := runBenchCLI(t, "profile", "detect", "--kubeconfig", sb.Kubeconfig, "--every-node", "-o", "json")
		if code != 0 {
			t.Fatalf("exit %d: %s", code, errOut)
		}
		var d profile.Detected
		if err := json.Unmarshal([]byte(out), &d); err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		want := "ports run at different rates: 4 at 200 Gb/sec (4X HDR), but 100 Gb/sec (2X HDR) on gpu-node-2 mlx5_0:1, gpu-node-2 mlx5_1:1; spec.lineRate takes 200Gb"
		if d.Profile.Spec.LineRate != "200Gb" || len(d.Probes) != 3 || !strings.Contains(strings.Join(d.Conflicts, "\n"), want) {
			t.Errorf("lineRate %s, %d probes, conflicts %q; want %q", d.Profile.Spec.LineRate, len(d.Probes), d.Conflicts, want)
		}
	})
	noProbePods(t, sb)
}

// TestProfileDetectRoCE: a RoCE cluster as detect meets it: nodes labelled ethernet, two
// macvlan rails on the RDMA resource (whereabouts range 10.10.0.0/16), ports whose GID tables
// hold the pod's net1/net2 addresses (which the sandbox's Multus stand-in reports in the probe
// pod's network-status). The GID index is the RoCE v2 entry with the pod's own address (3 on
// both ports), HCAs both ports, no conflict.
func TestProfileDetectRoCE(t *testing.T) {
	sb := sandboxtest.Get(t)
	sb.UseScenario(t, "roce-ports")
	relabel(t, sb, "ain.dev/link-layer", "ethernet")
	ns := sb.Namespace(t)
	createNADCRD(t, sb)
	for i := range 2 {
		createNAD(t, sb, ns, fmt.Sprintf("roce-rail%d", i), fmt.Sprintf(`{"cniVersion":"0.3.1","type":"macvlan","master":"ens%df0np0","ipam":{"type":"whereabouts","range":"10.10.0.0/16"}}`, i+1))
	}
	p, out, _ := runDetect(t, "--kubeconfig", sb.Kubeconfig)
	s := p.Spec
	if s.Fabric != "roce" || strings.Join(s.HCAs, ",") != "mlx5_0:1,mlx5_1:1" || s.GIDIndex != "3" || s.LineRate != "200Gb" || s.AddrRange != "10.10.0.0/16" ||
		strings.Join(s.Networks, ",") != ns+"/roce-rail0,"+ns+"/roce-rail1" {
		t.Errorf("spec %+v\n%s", s, out)
	}
	for _, want := range []string{
		"gidIndex: \"3\"  # probe pod on node gpu-node-1: /sys/class/infiniband/mlx5_0/ports/1/gid_attrs/types/3: RoCE v2, gids/3: 0000:0000:0000:0000:0000:ffff:0a0a:010b (::ffff:10.10.1.11), the address of the pod's net1 (Multus network-status) (2 port(s)",
		"fabric: roce  # probe pod on node gpu-node-1: /sys/class/infiniband/mlx5_0/ports/1/link_layer: Ethernet",
		"addrRange: 10.10.0.0/16  # the RDMA network's IPAM range (" + ns + "/roce-rail0, " + ns + "/roce-rail1)"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	t.Logf("ain profile detect on RoCE ports:\n%s", out)
	if strings.Contains(out, "Conflicts") || strings.Contains(out, "spec.gidIndex:") {
		t.Errorf("conflicts or an undetected GID index:\n%s", out)
	}
	noProbePods(t, sb)
}

// TestProfileDetectProbeForbidden: a read-only user (a ServiceAccount that may list nodes and
// NetworkAttachmentDefinitions, nothing else, with a real token) gets the API-only profile, a
// WARN naming the verbs it lacks, and the probed fields listed as not detected with that reason;
// nothing is created.
func TestProfileDetectProbeForbidden(t *testing.T) {
	sb := sandboxtest.Get(t)
	ns := sb.Namespace(t)
	ctx := context.Background()
	cs := sb.Clientset(t)
	name := "ain-detect-reader-" + ns
	if _, err := cs.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "reader"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	cr := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name}, Rules: []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"nodes"}, Verbs: []string{"get", "list"}},
		{APIGroups: []string{"k8s.cni.cncf.io"}, Resources: []string{"network-attachment-definitions"}, Verbs: []string{"get", "list"}}}}
	crb := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: name},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: "reader", Namespace: ns}}}
	if _, err := cs.RbacV1().ClusterRoles().Create(ctx, cr, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.RbacV1().ClusterRoles().Delete(context.Background(), name, metav1.DeleteOptions{}) })
	if _, err := cs.RbacV1().ClusterRoleBindings().Create(ctx, crb, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cs.RbacV1().ClusterRoleBindings().Delete(context.Background(), name, metav1.DeleteOptions{})
	})
	path := sb.ServiceAccountKubeconfig(t, ns, "reader")
	code, out, errOut := runBenchCLI(t, "profile", "detect", "--kubeconfig", path)
	if code != 0 {
		t.Fatalf("exit %d: %s\n%s", code, errOut, out)
	}
	denied := "probe pods need create pods, watch pods, get pods/log, delete pods in namespace " + ns + ": denied"
	if !strings.Contains(errOut, "WARN  probes skipped: "+denied+"; ask for them or run with --no-probes") {
		t.Errorf("no WARN naming the verbs:\n%s", errOut)
	}
	if !strings.Contains(out, "spec.hcas: not probed ("+denied) || !strings.Contains(out, "lineRate: 400Gb  # default") || !strings.Contains(out, "fabric: ib  # node label") {
		t.Errorf("output:\n%s", out)
	}
	if _, err := profile.Parse("detected.yaml", []byte(out)); err != nil {
		t.Errorf("%v\n%s", err, out)
	}
	pods, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	if err != nil || len(pods.Items) != 0 {
		t.Errorf("pods in %s: %v %v", ns, pods, err)
	}
}

// runDetect runs `ain profile detect ARGS` (YAML) and parses its output as a profile.
func runDetect(t *testing.T, args ...string) (p *profile.Profile, out, errOut string) {
	t.Helper()
	code, out, errOut := runBenchCLI(t, append([]string{"profile", "detect"}, args...)...)
	if code != 0 {
		t.Fatalf("exit %d: %s\n%s", code, errOut, out)
	}
	p, err := profile.Parse("detected.yaml", []byte(out))
	if err != nil {
		t.Fatalf("the output does not parse as a profile: %v\n%s", err, out)
	}
	return p, out, errOut
}

// noProbePods fails when a probe pod outlived its run.
func noProbePods(t *testing.T, sb *sandboxtest.Sandbox) {
	t.Helper()
	ctx := context.Background()
	var l *corev1.PodList
	if _, ok := sandboxtest.Poll(20*time.Second, 500*time.Millisecond, func() bool {
		var err error
		l, err = sb.Clientset(t).CoreV1().Pods("").List(ctx, metav1.ListOptions{LabelSelector: probe.LabelProbe + "=ib-ports"})
		if err != nil {
			t.Fatal(err)
		}
		return len(l.Items) == 0
	}); !ok {
		t.Fatalf("%d probe pod(s) left behind, e.g. %s/%s", len(l.Items), l.Items[0].Namespace, l.Items[0].Name)
	}
}

var crdRes = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

// createNADCRD installs Multus' NetworkAttachmentDefinition CRD (the fields detection reads)
// for the test.
func createNADCRD(t *testing.T, sb *sandboxtest.Sandbox) {
	t.Helper()
	dyn := sb.Dynamic(t)
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
	if _, err := dyn.Resource(crdRes).Create(context.Background(), crd, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = dyn.Resource(crdRes).Delete(context.Background(), crd.GetName(), metav1.DeleteOptions{})
		// The next test may install it again: wait until this one is gone.
		for range 100 {
			if _, err := dyn.Resource(crdRes).Get(context.Background(), crd.GetName(), metav1.GetOptions{}); err != nil {
				return
			}
			time.Sleep(200 * time.Millisecond)
		}
	})
}

// createNAD creates a NetworkAttachmentDefinition on the RDMA resource, retrying while the CRD
// is not served yet.
func createNAD(t *testing.T, sb *sandboxtest.Sandbox, ns, name, config string) {
	t.Helper()
	nad := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "k8s.cni.cncf.io/v1", "kind": "NetworkAttachmentDefinition",
		"metadata": map[string]any{"name": name, "namespace": ns, "annotations": map[string]any{"k8s.v1.cni.cncf.io/resourceName": "rdma/rdma_shared_device_a"}},
		"spec":     map[string]any{"config": config},
	}}
	var err error
	if _, ok := sandboxtest.Poll(30*time.Second, 300*time.Millisecond, func() bool {
		_, err = sb.Dynamic(t).Resource(preflight.NADResource).Namespace(ns).Create(context.Background(), nad, metav1.CreateOptions{})
		return err == nil
	}); !ok {
		t.Fatalf("create the NAD %s: %v", name, err)
	}
}

// relabel sets a label on every simulated node for the test and puts the old values back after.
func relabel(t *testing.T, sb *sandboxtest.Sandbox, key, value string) {
	t.Helper()
	ctx := context.Background()
	cs := sb.Clientset(t)
	nodes, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	patch := func(node, v string) error {
		b, _ := json.Marshal(map[string]any{"metadata": map[string]any{"labels": map[string]any{key: v}}})
		_, err := cs.CoreV1().Nodes().Patch(ctx, node, types.MergePatchType, b, metav1.PatchOptions{})
		return err
	}
	for _, n := range nodes.Items {
		old, had := n.Labels[key]
		if err := patch(n.Name, value); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			b, _ := json.Marshal(map[string]any{"metadata": map[string]any{"labels": map[string]any{key: nil}}})
			if had {
				b, _ = json.Marshal(map[string]any{"metadata": map[string]any{"labels": map[string]any{key: old}}})
			}
			if _, err := cs.CoreV1().Nodes().Patch(context.Background(), n.Name, types.MergePatchType, b, metav1.PatchOptions{}); err != nil {
				t.Errorf("restoring %s on %s: %v", key, n.Name, err)
			}
		})
	}
}
