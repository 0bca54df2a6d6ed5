package sandbox

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/client-go/util/retry"

	ainkube "github.com/ain-hpc/ain/pkg/kube"
)

const fieldManager = "ain-sandbox"

// Identities in the API server's token file; each component gets its own user name so that
// audit logs and request counts tell them apart.
var identities = []string{"admin", "controller-manager", "scheduler", "kwok", "training-operator", "agent", "mpi-operator", "jobset", "trainer", "coredns"}

func (l Layout) kubeconfigFor(who string) string {
	if who == "admin" {
		return l.Kubeconfig()
	}
	return filepath.Join(l.Config(), who+".kubeconfig")
}

func userName(who string) string {
	switch who {
	case "admin":
		return "ain-sandbox-admin"
	case "controller-manager":
		return "system:kube-controller-manager"
	case "scheduler":
		return "system:kube-scheduler"
	}
	return "ain-sandbox:" + who
}

// writeCredentials writes the token file and one kubeconfig per identity.
func writeCredentials(l Layout, p *pki, server string) error {
	tokens := map[string]string{}
	// Reuse tokens across restarts so kubeconfigs handed out stay valid.
	if old, err := os.ReadFile(filepath.Join(l.Config(), "tokens.csv")); err == nil {
		for _, line := range strings.Split(string(old), "\n") {
			f := strings.Split(line, ",")
			if len(f) >= 3 {
				for _, who := range identities {
					if f[1] == userName(who) {
						tokens[who] = f[0]
					}
				}
			}
		}
	}
	var csv strings.Builder
	for i, who := range identities {
		if tokens[who] == "" {
			b := make([]byte, 24)
			_, _ = rand.Read(b)
			tokens[who] = hex.EncodeToString(b)
		}
		// Every sandbox identity is cluster admin; the names only tell clients apart.
		fmt.Fprintf(&csv, "%s,%s,%d,\"system:masters\"\n", tokens[who], userName(who), 1000+i)
		kc := clientcmdapi.NewConfig()
		kc.Clusters["ain-sandbox"] = &clientcmdapi.Cluster{Server: server, CertificateAuthorityData: p.ca.Cert}
		kc.AuthInfos[userName(who)] = &clientcmdapi.AuthInfo{Token: tokens[who]}
		kc.Contexts["ain-sandbox"] = &clientcmdapi.Context{Cluster: "ain-sandbox", AuthInfo: userName(who), Namespace: "default"}
		kc.CurrentContext = "ain-sandbox"
		if err := clientcmd.WriteToFile(*kc, l.kubeconfigFor(who)); err != nil {
			return err
		}
		if err := os.Chmod(l.kubeconfigFor(who), 0o600); err != nil {
			return err
		}
	}
	return os.WriteFile(filepath.Join(l.Config(), "tokens.csv"), []byte(csv.String()), 0o600)
}

func restConfig(kubeconfig string) (*rest.Config, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("sandbox kubeconfig %s: %w", kubeconfig, err)
	}
	cfg.QPS = 50
	cfg.Burst = 100
	cfg.UserAgent = "ain-sandbox"
	return cfg, nil
}

// kube is the small client the sandbox needs: typed for core objects, dynamic for CRDs and kwok's.
type kube struct {
	cs  kubernetes.Interface
	dyn dynamic.Interface
}

func newKube(cfg *rest.Config) (*kube, error) {
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	return &kube{cs: cs, dyn: dyn}, nil
}

// resources maps the kinds the sandbox applies to their resource and scope.
var resources = map[string]ainkube.Resource{
	"CustomResourceDefinition": {GVR: schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}},
	"Logs":                     {GVR: schema.GroupVersionResource{Group: "kwok.x-k8s.io", Version: "v1alpha1", Resource: "logs"}, Namespaced: true},
	"ClusterLogs":              {GVR: schema.GroupVersionResource{Group: "kwok.x-k8s.io", Version: "v1alpha1", Resource: "clusterlogs"}},
	"ClusterPortForward":       {GVR: schema.GroupVersionResource{Group: "kwok.x-k8s.io", Version: "v1alpha1", Resource: "clusterportforwards"}},
	"PortForward":              {GVR: schema.GroupVersionResource{Group: "kwok.x-k8s.io", Version: "v1alpha1", Resource: "portforwards"}, Namespaced: true},
}

// apply server-side applies obj (a kind listed in resources) as the sandbox's own field manager.
func (k *kube) apply(ctx context.Context, obj *unstructured.Unstructured) error {
	ap := &ainkube.Applier{Dynamic: k.dyn, Namespace: obj.GetNamespace(), FieldManager: fieldManager, Kinds: resources, Force: true}
	if _, err := ap.Apply(ctx, []runtime.Object{obj}, ainkube.DryRunNone); err != nil {
		return fmt.Errorf("sandbox: %w", err)
	}
	return nil
}

// applyCRDs applies every CRD in the YAML files of dir and waits until they are established.
func (k *kube) applyCRDs(ctx context.Context, dir string, only func(name string) bool) error {
	var names []string
	err := eachObject(dir, func(_ string, obj *unstructured.Unstructured) error {
		if obj.GetKind() != "CustomResourceDefinition" || (only != nil && !only(obj.GetName())) {
			return nil
		}
		names = append(names, obj.GetName())
		return k.apply(ctx, obj)
	})
	if err != nil {
		return fmt.Errorf("CRDs: %w", err)
	}
	crd := k.dyn.Resource(resources["CustomResourceDefinition"].GVR)
	for _, n := range names {
		if err := poll(ctx, 30*time.Second, func() (bool, error) {
			u, err := crd.Get(ctx, n, metav1.GetOptions{})
			if err != nil {
				return false, nil
			}
			conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
			for _, c := range conds {
				cm, _ := c.(map[string]any)
				if cm["type"] == "Established" && cm["status"] == "True" {
					return true, nil
				}
			}
			return false, nil
		}); err != nil {
			return fmt.Errorf("CRD %s not established: %w", n, err)
		}
	}
	return nil
}

// eachObject calls f for every object in the YAML files of dir (file is the file's name).
func eachObject(dir string, f func(file string, obj *unstructured.Unstructured) error) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".yaml") {
			continue
		}
		raw, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			return err
		}
		if err := decodeObjects(raw, func(obj *unstructured.Unstructured) error { return f(e.Name(), obj) }); err != nil {
			return fmt.Errorf("%s: %w", e.Name(), err)
		}
	}
	return nil
}

// decodeObjects calls f for every object of a multi-document YAML (or JSON) text.
func decodeObjects(raw []byte, f func(obj *unstructured.Unstructured) error) error {
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(raw), 4096)
	for {
		var m map[string]any
		if err := dec.Decode(&m); err == io.EOF {
			return nil
		} else if err != nil {
			return err
		}
		if m == nil {
			continue
		}
		if err := f(&unstructured.Unstructured{Object: m}); err != nil {
			return err
		}
	}
}

func poll(ctx context.Context, timeout time.Duration, f func() (bool, error)) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	for {
		ok, err := f()
		if err != nil {
			return err
		}
		if ok {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// ensureOperatorObjects creates what the training-operator waits for before it starts its
// controllers: its namespace, the webhook Secret filled with the shared certificate, and the
// ValidatingWebhookConfiguration pointing at its webhook server on loopback.
func (k *kube) ensureOperatorObjects(ctx context.Context, wc *webhookCerts, port int) error {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "kubeflow"}}
	if _, err := k.cs.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	sec := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "training-operator-webhook-cert", Namespace: "kubeflow"},
		Data: map[string][]byte{
			"ca.crt": wc.CACert, "ca.key": wc.CAKey, "tls.crt": wc.TLSCert, "tls.key": wc.TLSKey,
		},
	}
	if _, err := k.cs.CoreV1().Secrets("kubeflow").Create(ctx, sec, metav1.CreateOptions{}); apierrors.IsAlreadyExists(err) {
		if _, err := k.cs.CoreV1().Secrets("kubeflow").Update(ctx, sec, metav1.UpdateOptions{}); err != nil {
			return err
		}
	} else if err != nil {
		return err
	}
	fail := admissionv1.Fail
	none := admissionv1.SideEffectClassNone
	timeout := int32(10)
	var hooks []admissionv1.ValidatingWebhook
	for _, kind := range []string{"pytorchjob"} { // v1.8.1 serves no webhook for MPIJob
		url := fmt.Sprintf("https://127.0.0.1:%d/validate-kubeflow-org-v1-%s", port, kind)
		hooks = append(hooks, admissionv1.ValidatingWebhook{
			Name:         "validator." + kind + ".training-operator.kubeflow.org",
			ClientConfig: admissionv1.WebhookClientConfig{URL: &url, CABundle: wc.CACert},
			Rules: []admissionv1.RuleWithOperations{{
				Operations: []admissionv1.OperationType{admissionv1.Create, admissionv1.Update},
				Rule:       admissionv1.Rule{APIGroups: []string{"kubeflow.org"}, APIVersions: []string{"v1"}, Resources: []string{kind + "s"}},
			}},
			FailurePolicy:           &fail,
			SideEffects:             &none,
			TimeoutSeconds:          &timeout,
			AdmissionReviewVersions: []string{"v1"},
		})
	}
	vwc := &admissionv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "validator.training-operator.kubeflow.org"},
		Webhooks:   hooks,
	}
	api := k.cs.AdmissionregistrationV1().ValidatingWebhookConfigurations()
	if old, err := api.Get(ctx, vwc.Name, metav1.GetOptions{}); err == nil {
		vwc.ResourceVersion = old.ResourceVersion
		_, err = api.Update(ctx, vwc, metav1.UpdateOptions{})
		return err
	}
	_, err := api.Create(ctx, vwc, metav1.CreateOptions{})
	return err
}

// NodeName is the name of simulated node i (1-based).
func NodeName(i int) string { return "gpu-node-" + strconv.Itoa(i) }

// ensureNodes creates or updates the simulated nodes gpu-node-1..N and removes extra ones.
// kwokPort, when not 0, is where kwok serves the kubelet API (logs, port-forward) now: nodes kept
// from an earlier start are pointed at it.
func (k *kube) ensureNodes(ctx context.Context, c Config, sc *Scenario, kwokPort int) error {
	noRDMA := map[int]bool{}
	for _, i := range sc.Nodes.WithoutRDMA {
		noRDMA[i] = true
	}
	api := k.cs.CoreV1().Nodes()
	for i := 1; i <= c.Nodes; i++ {
		n := simulatedNode(c, i, !noRDMA[i])
		port := int32(kwokPort)
		cur, err := api.Get(ctx, n.Name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			// The TTL annotation is ain's at creation only: kube-controller-manager's TTL
			// controller owns it then and sets 15 s above 100 nodes (k8s.io/kubernetes v1.36.2
			// pkg/controller/ttl/ttl_controller.go ttlBoundaries); written again on every scenario
			// switch, the controller would patch it back each time.
			n.Annotations[corev1.ObjectTTLAnnotationKey] = "0"
			created, err := api.Create(ctx, n, metav1.CreateOptions{})
			if err != nil {
				return fmt.Errorf("creating node %s: %w", n.Name, err)
			}
			created.Status = n.Status
			if port != 0 {
				created.Status.DaemonEndpoints.KubeletEndpoint.Port = port
			}
			if _, err := api.UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
				return fmt.Errorf("node %s status: %w", n.Name, err)
			}
		case err != nil:
			return err
		default:
			// Only what changed is written: every write of a node makes kwok plan its next stage
			// anew, and the labels and annotations of others (kube-controller-manager's, kwok's)
			// are left alone.
			managed := simulatedNode(c, i, true).Labels // every label a scenario may take away
			get := func() (*corev1.Node, error) { return api.Get(ctx, n.Name, metav1.GetOptions{}) }
			cur, err = writeNodeIfChanged(ctx, cur, func(cur *corev1.Node) bool { return mergeNodeMeta(cur, n, managed) },
				func(cur *corev1.Node) (*corev1.Node, error) { return api.Update(ctx, cur, metav1.UpdateOptions{}) }, get)
			if err != nil {
				return fmt.Errorf("updating node %s: %w", n.Name, err)
			}
			_, err = writeNodeIfChanged(ctx, cur, func(cur *corev1.Node) bool { return mergeNodeStatus(cur, n, port) },
				func(cur *corev1.Node) (*corev1.Node, error) {
					return api.UpdateStatus(ctx, cur, metav1.UpdateOptions{})
				}, get)
			if err != nil {
				return fmt.Errorf("updating node %s status: %w", n.Name, err)
			}
		}
	}
	list, err := api.List(ctx, metav1.ListOptions{LabelSelector: LabelSimulated + "=true"})
	if err != nil {
		return err
	}
	for _, n := range list.Items {
		i, err := strconv.Atoi(strings.TrimPrefix(n.Name, "gpu-node-"))
		if err == nil && i > c.Nodes {
			if err := api.Delete(ctx, n.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
				return err
			}
		}
	}
	return nil
}

// writeNodeIfChanged applies change to cur and writes it when change says it changed anything,
// retrying on a conflict (kwok's heartbeats update the node meanwhile) from a fresh get. It
// returns the node as last read or written.
func writeNodeIfChanged(ctx context.Context, cur *corev1.Node, change func(*corev1.Node) bool,
	write func(*corev1.Node) (*corev1.Node, error), get func() (*corev1.Node, error)) (*corev1.Node, error) {
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if cur == nil {
			var err error
			if cur, err = get(); err != nil {
				return err
			}
		}
		if !change(cur) {
			return nil
		}
		written, err := write(cur)
		if err != nil {
			cur = nil // read again (client-go returns an empty object with the error)
			return err
		}
		cur = written
		return nil
	})
	return cur, err
}

// mergeNodeStatus brings cur's capacity, allocatable and, when port is not 0, kubelet port (kwok's)
// to want's and says whether any changed.
func mergeNodeStatus(cur, want *corev1.Node, port int32) bool {
	if port == 0 {
		port = cur.Status.DaemonEndpoints.KubeletEndpoint.Port
	}
	if equality.Semantic.DeepEqual(cur.Status.Capacity, want.Status.Capacity) &&
		equality.Semantic.DeepEqual(cur.Status.Allocatable, want.Status.Allocatable) &&
		cur.Status.DaemonEndpoints.KubeletEndpoint.Port == port {
		return false
	}
	cur.Status.Capacity = want.Status.Capacity
	cur.Status.Allocatable = want.Status.Allocatable
	cur.Status.DaemonEndpoints.KubeletEndpoint.Port = port
	return true
}

// mergeNodeMeta brings cur's labels and annotations to want's and says whether any changed: want's
// are set; a label in managed (one ain may set) that want lacks is removed, and so is an annotation
// of ain's (AnnoPrefix: a node taken down is up again after a scenario change, as before); the
// others' labels and annotations stay.
func mergeNodeMeta(cur, want *corev1.Node, managed map[string]string) bool {
	changed := false
	set := func(m *map[string]string, k, v string) {
		if old, ok := (*m)[k]; !ok || old != v {
			if *m == nil {
				*m = map[string]string{}
			}
			(*m)[k] = v
			changed = true
		}
	}
	for k, v := range want.Labels {
		set(&cur.Labels, k, v)
	}
	for k := range managed {
		if _, ok := want.Labels[k]; !ok {
			if _, ok := cur.Labels[k]; ok {
				delete(cur.Labels, k)
				changed = true
			}
		}
	}
	for k, v := range want.Annotations {
		set(&cur.Annotations, k, v)
	}
	for k := range cur.Annotations {
		if _, ok := want.Annotations[k]; !ok && strings.HasPrefix(k, AnnoPrefix) {
			delete(cur.Annotations, k)
			changed = true
		}
	}
	return changed
}

func simulatedNode(c Config, i int, rdma bool) *corev1.Node {
	name := NodeName(i)
	res := corev1.ResourceList{
		corev1.ResourceCPU:              resource.MustParse("96"),
		corev1.ResourceMemory:           resource.MustParse("1000Gi"),
		corev1.ResourceEphemeralStorage: resource.MustParse("1800Gi"),
		corev1.ResourcePods:             resource.MustParse("110"),
		"nvidia.com/gpu":                *resource.NewQuantity(int64(c.GPUsPerNode), resource.DecimalSI),
		"hugepages-1Gi":                 resource.MustParse("0"),
		"hugepages-2Mi":                 resource.MustParse("0"),
	}
	if rdma {
		res[corev1.ResourceName(c.RDMAResource)] = *resource.NewQuantity(int64(c.RDMACount), resource.DecimalSI)
	}
	linkLayer := "infiniband"
	if c.Fabric == "roce" {
		linkLayer = "ethernet"
	}
	lbl := map[string]string{
		"kubernetes.io/hostname":                         name,
		"kubernetes.io/os":                               "linux",
		"kubernetes.io/arch":                             "amd64",
		"type":                                           "kwok",
		LabelSimulated:                                   "true",
		"node.kubernetes.io/instance-type":               "sim-8xH100-" + c.Fabric,
		"nvidia.com/gpu.present":                         "true",
		"nvidia.com/gpu.count":                           strconv.Itoa(c.GPUsPerNode),
		"nvidia.com/gpu.product":                         "NVIDIA-H100-80GB-HBM3",
		"nvidia.com/gpu.memory":                          "81559",
		"nvidia.com/gpu.family":                          "hopper",
		"nvidia.com/gpu.machine":                         "SIM-HGX-H100",
		"nvidia.com/cuda.driver.major":                   "550",
		"nvidia.com/cuda.driver.minor":                   "90",
		"nvidia.com/cuda.driver.rev":                     "07",
		"nvidia.com/cuda.runtime.major":                  "12",
		"nvidia.com/cuda.runtime.minor":                  "4",
		"nvidia.com/gpu.deploy.device-plugin":            "true",
		"nvidia.com/gpu.deploy.driver":                   "true",
		"nvidia.com/gpu.deploy.gpu-feature-discovery":    "true",
		"nvidia.com/gpu.deploy.dcgm-exporter":            "true",
		"nvidia.com/mig.capable":                         "true",
		"nvidia.com/mig.config":                          "all-disabled",
		"feature.node.kubernetes.io/pci-10de.present":    "true",
		"feature.node.kubernetes.io/pci-15b3.present":    "true",
		"feature.node.kubernetes.io/kernel-version.full": "5.15.0-119-generic",
		"network.nvidia.com/operator.mofed.wait":         "false",
		"ain.dev/link-layer":                             linkLayer, // ain's own label: no operator publishes the link layer
	}
	if rdma {
		lbl["feature.node.kubernetes.io/rdma.capable"] = "true"
		lbl["feature.node.kubernetes.io/rdma.available"] = "true"
	}
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name:        name,
			Labels:      lbl,
			Annotations: map[string]string{"kwok.x-k8s.io/node": "fake"},
		},
		Status: corev1.NodeStatus{Capacity: res, Allocatable: res.DeepCopy()},
	}
}

// ensurePortForwards applies one ClusterPortForward per configured pod port, for every pod.
func (k *kube) ensurePortForwards(ctx context.Context, pfs []PortForward) error {
	for _, pf := range pfs {
		if err := k.applyPortForward(ctx, pf); err != nil {
			return err
		}
	}
	return nil
}

func (k *kube) applyPortForward(ctx context.Context, pf PortForward) error {
	host, port, err := splitHostPort(pf.Target)
	if err != nil {
		return err
	}
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "kwok.x-k8s.io/v1alpha1",
		"kind":       "ClusterPortForward",
		"metadata":   map[string]any{"name": fmt.Sprintf("ain-sandbox-port-%d", pf.PodPort)},
		"spec": map[string]any{
			"forwards": []any{map[string]any{
				"ports":  []any{int64(pf.PodPort)},
				"target": map[string]any{"address": host, "port": int64(port)},
			}},
		},
	}}
	return k.apply(ctx, obj)
}

// DefaultSharedClaim is the PVC name ain's built-in recipes mount (the shared NFS disk); `up`
// creates it in namespace default, bound to a placeholder PersistentVolume.
const DefaultSharedClaim = "nfs-shared"

// EnsureSharedPVC creates the PersistentVolumeClaim namespace/name bound to a placeholder NFS
// PersistentVolume of its own, so that pods mounting it can be scheduled (nothing is mounted:
// the pods are simulated).
func EnsureSharedPVC(ctx context.Context, cfg *rest.Config, namespace, name string) error {
	k, err := newKube(cfg)
	if err != nil {
		return err
	}
	return k.ensureSharedPVC(ctx, namespace, name, true)
}

// ensureSharedPVC makes the pair, and with bound waits for the claim to be Bound (not while the
// sandbox starts: kube-controller-manager, which binds it, is not running yet).
func (k *kube) ensureSharedPVC(ctx context.Context, namespace, name string, bound bool) error {
	pvName := "ain-sandbox-" + namespace + "-" + name
	if len(pvName) > 253 {
		pvName = pvName[:253]
	}
	size := resource.MustParse("10Ti")
	rwx := []corev1.PersistentVolumeAccessMode{corev1.ReadWriteMany}
	pv := &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: pvName, Labels: map[string]string{LabelSimulated: "true"}},
		Spec: corev1.PersistentVolumeSpec{
			Capacity:    corev1.ResourceList{corev1.ResourceStorage: size},
			AccessModes: rwx,
			PersistentVolumeSource: corev1.PersistentVolumeSource{
				NFS: &corev1.NFSVolumeSource{Server: "127.0.0.1", Path: "/shared"},
			},
			ClaimRef:                      &corev1.ObjectReference{Kind: "PersistentVolumeClaim", APIVersion: "v1", Namespace: namespace, Name: name},
			PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimRetain,
			StorageClassName:              "",
		},
	}
	if _, err := k.cs.CoreV1().PersistentVolumes().Create(ctx, pv, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("shared volume: %w", err)
	}
	empty := ""
	pvc := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes:      rwx,
			Resources:        corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: size}},
			VolumeName:       pvName,
			StorageClassName: &empty,
		},
	}
	if _, err := k.cs.CoreV1().PersistentVolumeClaims(namespace).Create(ctx, pvc, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("shared volume claim: %w", err)
	}
	if !bound {
		return nil
	}
	// kube-controller-manager's volume binder binds the pair on its next pass: seconds on a
	// loaded machine, during which a preflight sees the claim Pending (and rightly does not probe
	// it). Whoever asked for the claim gets it Bound.
	var phase corev1.PersistentVolumeClaimPhase
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 60*time.Second, true, func(ctx context.Context) (bool, error) {
		c, err := k.cs.CoreV1().PersistentVolumeClaims(namespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		phase = c.Status.Phase
		return phase == corev1.ClaimBound, nil
	})
	if err != nil {
		return fmt.Errorf("shared volume claim %s/%s not Bound after 60 s (phase %q): %w", namespace, name, phase, err)
	}
	return nil
}
