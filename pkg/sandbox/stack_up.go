package sandbox

import (
	"context"
	"encoding/base64"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"

	ainkube "github.com/ain-hpc/ain/pkg/kube"
)

// The current stack's controllers, run out of cluster the way the legacy training-operator is:
// every listener on 127.0.0.1, the sandbox's own certificates for the
// webhooks (their cert-controllers are switched off), and the webhook configurations copied from
// each module with clientConfig.service replaced by a URL on loopback.

func init() {
	resources["MutatingWebhookConfiguration"] = ainkube.Resource{GVR: schema.GroupVersionResource{Group: "admissionregistration.k8s.io", Version: "v1", Resource: "mutatingwebhookconfigurations"}}
	resources["ValidatingWebhookConfiguration"] = ainkube.Resource{GVR: schema.GroupVersionResource{Group: "admissionregistration.k8s.io", Version: "v1", Resource: "validatingwebhookconfigurations"}}
	resources["ClusterTrainingRuntime"] = ainkube.Resource{GVR: schema.GroupVersionResource{Group: "trainer.kubeflow.org", Version: "v1alpha1", Resource: "clustertrainingruntimes"}}
}

// jobsetConfig is JobSet's configuration file (apiVersion config.jobset.x-k8s.io/v1alpha1, read
// by --config; sigs.k8s.io/jobset v0.12.0 api/config/v1alpha1): the webhook server on loopback
// with the sandbox's certificate (webhook.certDir), metrics off ("0", controller-runtime's value for
// no listener), probes on loopback, leader election as shipped (config/components/manager:
// leaderElect true, the default Lease name, in jobset-system, where its kustomization installs it;
// out of cluster the namespace must be named, so `ain preflight` finds the Lease where it is on a
// real cluster), and internalCertManagement off: otherwise
// its cert rotator (pkg/util/cert) writes a certificate for jobset-webhook-service.jobset-system.svc
// into a Secret and patches the webhook configurations with its own CA.
const jobsetConfig = `apiVersion: config.jobset.x-k8s.io/v1alpha1
kind: Configuration
webhook:
  host: 127.0.0.1
  port: %d
  certDir: %s
metrics:
  bindAddress: "0"
health:
  healthProbeBindAddress: 127.0.0.1:%d
leaderElection:
  leaderElect: true
  resourceLock: leases
  resourceName: 6d4f6a47.jobset.x-k8s.io
  resourceNamespace: jobset-system
  leaseDuration: 15s
  renewDeadline: 10s
  retryPeriod: 2s
internalCertManagement:
  enable: false
`

// trainerConfig is Kubeflow Trainer's configuration file (config.trainer.kubeflow.org/v1alpha1,
// github.com/kubeflow/trainer/v2 v2.3.0 pkg/apis/config/v1alpha1; the shipped one is
// manifests/base/manager/controller_manager_config.yaml). certManagement.enable=false makes
// cmd/trainer-controller-manager skip cert.ManageCerts ("certificates must be provided
// externally"). Its webhook options have no certDir: controller-runtime v0.24 reads the
// certificate from $TMPDIR/k8s-webhook-server/serving-certs (os.TempDir), so the sandbox gives
// the trainer its own TMPDIR. Leader election as shipped (Lease trainer.kubeflow.org), in
// kubeflow-system, the namespace of its manifests/overlays/manager; every duration is written out
// because its config.go copies them into the manager's options even when empty.
const trainerConfig = `apiVersion: config.trainer.kubeflow.org/v1alpha1
kind: Configuration
webhook:
  host: 127.0.0.1
  port: %d
metrics:
  bindAddress: "0"
health:
  healthProbeBindAddress: 127.0.0.1:%d
leaderElection:
  leaderElect: true
  resourceLock: leases
  resourceName: trainer.kubeflow.org
  resourceNamespace: kubeflow-system
  leaseDuration: 15s
  renewDeadline: 10s
  retryPeriod: 2s
certManagement:
  enable: false
`

// webhookSource says where a component's copied webhook manifests are and how its kustomization
// names them.
type webhookSource struct {
	component string
	port      int
	// namePrefix is the kustomize namePrefix of the component's default overlay (JobSet:
	// config/default/kustomization.yaml has namePrefix "jobset-"); Trainer's patches rename its
	// configurations themselves (validator.trainer.kubeflow.org, defaulter.trainer.kubeflow.org).
	namePrefix string
}

func (l Layout) webhookCertDir(component string) string {
	return filepath.Join(l.PKI(), component+"-webhook")
}

// trainerTmp is the trainer's TMPDIR (see trainerConfig).
func (l Layout) trainerTmp() string { return filepath.Join(l.Dir, "tmp", "trainer") }

// prepareCurrent applies the current stack's CRDs, writes its webhook certificates and config
// files and registers its webhook configurations, before its controllers start.
func (k *kube) prepareCurrent(ctx context.Context, l Layout, p *pki, cache string, st *State) error {
	for _, c := range StackCurrent.Controllers() {
		if err := k.applyCRDs(ctx, filepath.Join(component(c).Dir(cache), "crds"), nil); err != nil {
			return err
		}
	}
	dirs := map[string]string{
		"jobset":  l.webhookCertDir("jobset"),
		"trainer": filepath.Join(l.trainerTmp(), "k8s-webhook-server", "serving-certs"),
	}
	for _, d := range dirs {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return err
		}
		if err := p.webhook.write(d, "tls"); err != nil {
			return err
		}
	}
	if err := os.WriteFile(filepath.Join(l.Config(), "jobset.yaml"),
		fmt.Appendf(nil, jobsetConfig, st.Ports.JobSetWebhook, dirs["jobset"], st.Ports.JobSetHealth), 0o600); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(l.Config(), "trainer.yaml"),
		fmt.Appendf(nil, trainerConfig, st.Ports.TrainerWebhook, st.Ports.TrainerHealth), 0o600); err != nil {
		return err
	}
	if err := k.leaseNamespaces(ctx); err != nil {
		return err
	}
	st.Webhooks = nil
	for _, src := range []webhookSource{
		{component: "jobset", port: st.Ports.JobSetWebhook, namePrefix: "jobset-"},
		{component: "trainer", port: st.Ports.TrainerWebhook},
	} {
		objs, eps, err := webhookConfigs(filepath.Join(component(src.component).Dir(cache), "webhook"), src, p.ca.Cert)
		if err != nil {
			return fmt.Errorf("%s webhook configuration: %w", src.component, err)
		}
		for _, o := range objs {
			if err := k.apply(ctx, o); err != nil {
				return err
			}
		}
		st.Webhooks = append(st.Webhooks, eps...)
	}
	st.Webhook = WebhookState{On: true, URL: fmt.Sprintf("https://127.0.0.1:%d (jobset), https://127.0.0.1:%d (trainer)", st.Ports.JobSetWebhook, st.Ports.TrainerWebhook)}
	return nil
}

// webhookConfigs reads the webhook configurations copied from a module (manifests.yaml), applies
// the JSON patches its kustomization applies (files named *mutating* patch the
// MutatingWebhookConfiguration, *validating* the ValidatingWebhookConfiguration, as their
// kustomizations target them), names them as its overlay does, and points every webhook at
// https://127.0.0.1:PORT<service path> with the sandbox CA as caBundle: there is no Service out of
// cluster, and the API server calls a URL on loopback.
func webhookConfigs(dir string, src webhookSource, ca []byte) ([]*unstructured.Unstructured, []WebhookEndpoint, error) {
	raw, err := os.ReadFile(filepath.Join(dir, "manifests.yaml"))
	if err != nil {
		return nil, nil, err
	}
	byKind := map[string][]byte{}
	err = decodeObjects(raw, func(obj *unstructured.Unstructured) error {
		j, err := obj.MarshalJSON()
		byKind[obj.GetKind()] = j
		return err
	})
	if err != nil {
		return nil, nil, fmt.Errorf("manifests.yaml: %w", err)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, nil, err
	}
	for _, e := range entries {
		kind := ""
		switch n := strings.ToLower(e.Name()); {
		case n == "manifests.yaml":
			continue
		case strings.Contains(n, "mutating"):
			kind = "MutatingWebhookConfiguration"
		case strings.Contains(n, "validating"):
			kind = "ValidatingWebhookConfiguration"
		default:
			continue
		}
		if byKind[kind] == nil {
			return nil, nil, fmt.Errorf("%s patches a %s that manifests.yaml lacks", e.Name(), kind)
		}
		pr, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			return nil, nil, err
		}
		pj, err := yaml.YAMLToJSON(pr)
		if err != nil {
			return nil, nil, fmt.Errorf("%s: %w", e.Name(), err)
		}
		patch, err := jsonpatch.DecodePatch(pj)
		if err != nil {
			return nil, nil, fmt.Errorf("%s: %w", e.Name(), err)
		}
		if byKind[kind], err = patch.Apply(byKind[kind]); err != nil {
			return nil, nil, fmt.Errorf("applying %s: %w", e.Name(), err)
		}
	}
	kinds := make([]string, 0, len(byKind))
	for k := range byKind {
		kinds = append(kinds, k)
	}
	sort.Strings(kinds)
	var objs []*unstructured.Unstructured
	var eps []WebhookEndpoint
	base := "https://127.0.0.1:" + strconv.Itoa(src.port)
	for _, kind := range kinds {
		obj := &unstructured.Unstructured{}
		if err := obj.UnmarshalJSON(byKind[kind]); err != nil {
			return nil, nil, err
		}
		obj.SetName(src.namePrefix + obj.GetName())
		hooks, _, _ := unstructured.NestedSlice(obj.Object, "webhooks")
		ep := WebhookEndpoint{Component: src.component, Kind: kind, Name: obj.GetName()}
		for i, h := range hooks {
			hm, _ := h.(map[string]any)
			path, _, _ := unstructured.NestedString(hm, "clientConfig", "service", "path")
			if path == "" {
				return nil, nil, fmt.Errorf("%s %s: webhook %d has no clientConfig.service.path", kind, obj.GetName(), i)
			}
			hm["clientConfig"] = map[string]any{"url": base + path, "caBundle": base64.StdEncoding.EncodeToString(ca)}
			ep.URLs = append(ep.URLs, base+path)
		}
		if err := unstructured.SetNestedSlice(obj.Object, hooks, "webhooks"); err != nil {
			return nil, nil, err
		}
		objs = append(objs, obj)
		eps = append(eps, ep)
	}
	return objs, eps, nil
}

// startCurrent starts the current stack's controllers. JobSet and Trainer read their kubeconfig
// through controller-runtime's GetConfig (--kubeconfig, else $KUBECONFIG); the mpi-operator's
// options take --kubeConfig (and $KUBECONFIG wins, as in its app.Run). Each runs as its own user
// of the sandbox's token file, so audit logs tell them apart.
func startCurrent(start starter, l Layout, cache string, st *State) ([]*Proc, error) {
	var procs []*Proc
	mpi, err := start("mpi-operator", MPIOperatorVersion, component("mpi-operator").Bin(cache, "mpi-operator"), []string{
		"--kubeConfig=" + l.kubeconfigFor("mpi-operator"),
		"--health-probe-bind-address=127.0.0.1:" + strconv.Itoa(st.Ports.MPIOperatorHealth),
		// app/options defaults are QPS 5, burst 10: too slow for a sweep of jobs.
		"--kube-api-qps=50", "--kube-api-burst=100",
		"--monitoring-port=0",
	}, nil, map[string]int{"health": st.Ports.MPIOperatorHealth})
	if err != nil {
		return nil, err
	}
	procs = append(procs, mpi)
	js, err := start("jobset", JobSetVersion, component("jobset").Bin(cache, "jobset"), []string{
		"--config=" + filepath.Join(l.Config(), "jobset.yaml"),
		"--zap-log-level=info",
	}, []string{"KUBECONFIG=" + l.kubeconfigFor("jobset")},
		map[string]int{"webhook": st.Ports.JobSetWebhook, "health": st.Ports.JobSetHealth})
	if err != nil {
		return nil, err
	}
	procs = append(procs, js)
	tr, err := start("trainer", TrainerVersion, component("trainer").Bin(cache, "trainer-controller-manager"), []string{
		"--config=" + filepath.Join(l.Config(), "trainer.yaml"),
	}, []string{"KUBECONFIG=" + l.kubeconfigFor("trainer"), "TMPDIR=" + l.trainerTmp()},
		map[string]int{"webhook": st.Ports.TrainerWebhook, "health": st.Ports.TrainerHealth})
	if err != nil {
		return nil, err
	}
	return append(procs, tr), nil
}

// waitCurrent waits until the controllers answer their probes and their webhook servers listen,
// then installs Trainer's built-in ClusterTrainingRuntimes (through its validating webhook, as
// `kubectl apply -k manifests/base/runtimes` does on a cluster). Each controller's wait runs
// through restarting (upRun.waitRestarting: one that exited is started again).
func (k *kube) waitCurrent(ctx context.Context, procs []*Proc, cache string, st *State,
	restarting func(context.Context, *Proc, func(*Proc) error) error) error {
	plain := &http.Client{Timeout: 2 * time.Second}
	for _, p := range procs {
		path := "/readyz" // controller-runtime's default readiness endpoint; ready once the webhook server serves
		if p.Name == "mpi-operator" {
			path = "/healthz"
		}
		err := restarting(ctx, p, func(p *Proc) error {
			if err := waitHTTP(ctx, p, plain, fmt.Sprintf("http://127.0.0.1:%d%s", p.Ports["health"], path), nil, 120*time.Second); err != nil {
				return err
			}
			if port := p.Ports["webhook"]; port != 0 {
				return waitTCP(ctx, p, port, 30*time.Second)
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	return k.applyDir(ctx, filepath.Join(component("trainer").Dir(cache), "runtimes"), "ClusterTrainingRuntime")
}

// applyDir applies the objects of one kind found in the YAML files of dir.
func (k *kube) applyDir(ctx context.Context, dir, kind string) error {
	return eachObject(dir, func(_ string, obj *unstructured.Unstructured) error {
		if obj.GetKind() != kind {
			return nil
		}
		return k.apply(ctx, obj)
	})
}

// electing are the Leases the current stack's controllers elect their leader with (see
// jobsetConfig, trainerConfig; the mpi-operator's is its controller name in its
// --lock-namespace, default mpi-operator: cmd/mpi-operator/app/server.go and options.go), by
// namespace.
var electing = map[string]string{"jobset-system": "6d4f6a47.jobset.x-k8s.io", "kubeflow-system": "trainer.kubeflow.org", "mpi-operator": "mpi-operator"}

// leaseNamespaces creates the namespaces the controllers' Leases live in, and deletes a Lease a
// previous start left: its holder is gone, and the new process would wait out its duration (15 s)
// before leading.
func (k *kube) leaseNamespaces(ctx context.Context) error {
	for ns, lease := range electing {
		if _, err := k.cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return err
		}
		if err := k.cs.CoordinationV1().Leases(ns).Delete(ctx, lease, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return err
		}
	}
	return nil
}
