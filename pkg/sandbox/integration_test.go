package sandbox_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	kubeflowv1 "github.com/kubeflow/training-operator/pkg/apis/kubeflow.org/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/portforward"
	"k8s.io/client-go/transport/spdy"

	"github.com/ain-hpc/ain/internal/cli"
	"github.com/ain-hpc/ain/pkg/ibport"
	"github.com/ain-hpc/ain/pkg/mpilauncher"
	"github.com/ain-hpc/ain/pkg/nccl"
	"github.com/ain-hpc/ain/pkg/sandbox"
	"github.com/ain-hpc/ain/pkg/sandbox/sandboxtest"
)

// The package's sandbox: 4 nodes, gpu-node-3 without the RDMA resource (scenario no-rdma), so
// that scheduling on the RDMA resource is visible.
func TestMain(m *testing.M) {
	sandboxtest.Main(m, sandbox.Config{Nodes: 4, Scenario: "no-rdma", Stack: sandbox.StackLegacy})
}

var (
	pytorchGVR = schema.GroupVersionResource{Group: "kubeflow.org", Version: "v1", Resource: "pytorchjobs"}
	mpiGVR     = schema.GroupVersionResource{Group: "kubeflow.org", Version: "v1", Resource: "mpijobs"}
)

const rdma = sandbox.DefaultRDMAResource

func TestIntegrationNodes(t *testing.T) {
	sb := sandboxtest.Get(t)
	cs := sb.Clientset(t)
	nodes, err := cs.CoreV1().Nodes().List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(nodes.Items) != 4 {
		t.Fatalf("%d nodes, want 4", len(nodes.Items))
	}
	for _, n := range nodes.Items {
		gpu := n.Status.Allocatable["nvidia.com/gpu"]
		r, hasRDMA := n.Status.Allocatable[rdma]
		if gpu.Value() != 8 || (n.Name == "gpu-node-3") == hasRDMA || hasRDMA && r.Value() != 63 {
			t.Errorf("%s: gpu %v rdma %v (%v)", n.Name, gpu.String(), r.String(), hasRDMA)
		}
		if n.Labels["nvidia.com/gpu.present"] != "true" {
			t.Errorf("%s: GPU Operator labels missing", n.Name)
		}
		for _, taint := range n.Spec.Taints {
			t.Errorf("%s: taint %v", n.Name, taint)
		}
	}
	if !sb.State.Webhook.On {
		t.Errorf("webhook off: %s", sb.State.Webhook.Reason)
	}
	// RBAC and authentication are on: a client without credentials is refused.
	anon := *sb.REST
	anon.BearerToken = ""
	acs, err := kubernetes.NewForConfig(&anon)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := acs.CoreV1().Nodes().List(context.Background(), metav1.ListOptions{}); !apierrors.IsUnauthorized(err) && !apierrors.IsForbidden(err) {
		t.Errorf("anonymous list: %v, want unauthorized/forbidden", err)
	}
	st, err := sandbox.GetStatus(context.Background(), sb.Dir)
	if err != nil || !st.Running || len(st.Nodes) != 4 || st.TotalRSSKiB() == 0 {
		t.Errorf("status: %+v %v", st, err)
	}
	t.Logf("sandbox RSS: %d MiB over %d processes", st.TotalRSSKiB()/1024, len(st.Components))
}

func ncclEnv() []corev1.EnvVar {
	return []corev1.EnvVar{{Name: "NCCL_DEBUG", Value: "INFO"}, {Name: "NCCL_IB_HCA", Value: "mlx5_0"}, {Name: "NCCL_SOCKET_IFNAME", Value: "eth0"}}
}

// rankTemplate is a pod that takes a whole simulated node: 8 GPUs and the RDMA resource.
func rankTemplate(container string, cmd []string, gpus int64) corev1.PodTemplateSpec {
	res := corev1.ResourceList{
		"nvidia.com/gpu": *resource.NewQuantity(gpus, resource.DecimalSI),
		rdma:             resource.MustParse("1"),
		"cpu":            resource.MustParse("8"),
		"memory":         resource.MustParse("64Gi"),
	}
	return corev1.PodTemplateSpec{Spec: corev1.PodSpec{
		Containers: []corev1.Container{{
			Name: container, Image: "nvcr.io/nvidia/pytorch:24.05-py3", Command: cmd, Env: ncclEnv(),
			Resources:       corev1.ResourceRequirements{Requests: res, Limits: res},
			SecurityContext: &corev1.SecurityContext{Capabilities: &corev1.Capabilities{Add: []corev1.Capability{"IPC_LOCK"}}},
			VolumeMounts:    []corev1.VolumeMount{{Name: "dshm", MountPath: "/dev/shm"}},
		}},
		Volumes: []corev1.Volume{{Name: "dshm", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{Medium: corev1.StorageMediumMemory}}}},
	}}
}

func pytorchJob(ns, name, container string) *kubeflowv1.PyTorchJob {
	one, two := int32(1), int32(2)
	tmpl := rankTemplate(container, []string{"torchrun", "--nnodes=3", "train.py"}, 8)
	return &kubeflowv1.PyTorchJob{
		TypeMeta:   metav1.TypeMeta{APIVersion: "kubeflow.org/v1", Kind: "PyTorchJob"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: kubeflowv1.PyTorchJobSpec{PyTorchReplicaSpecs: map[kubeflowv1.ReplicaType]*kubeflowv1.ReplicaSpec{
			kubeflowv1.PyTorchJobReplicaTypeMaster: {Replicas: &one, RestartPolicy: kubeflowv1.RestartPolicyNever, Template: tmpl},
			kubeflowv1.PyTorchJobReplicaTypeWorker: {Replicas: &two, RestartPolicy: kubeflowv1.RestartPolicyNever, Template: *tmpl.DeepCopy()},
		}},
	}
}

// apply server-side applies a typed object, as `ain train` does.
func apply(t *testing.T, d dynamic.Interface, gvr schema.GroupVersionResource, obj runtime.Object, dryRun bool) error {
	t.Helper()
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		t.Fatal(err)
	}
	u := &unstructured.Unstructured{Object: m}
	unstructured.RemoveNestedField(u.Object, "status")
	unstructured.RemoveNestedField(u.Object, "metadata", "creationTimestamp")
	data, err := json.Marshal(u)
	if err != nil {
		t.Fatal(err)
	}
	force := true
	opts := metav1.PatchOptions{FieldManager: "ain-test", Force: &force}
	if dryRun {
		opts.DryRun = []string{metav1.DryRunAll}
	}
	_, err = d.Resource(gvr).Namespace(u.GetNamespace()).Patch(context.Background(), u.GetName(), types.ApplyPatchType, data, opts)
	return err
}

// waitJob waits until the job has condition Succeeded or Failed, and returns which.
func waitJob(t *testing.T, sb *sandboxtest.Sandbox, gvr schema.GroupVersionResource, ns, name string, timeout time.Duration) string {
	t.Helper()
	d := sb.Dynamic(t)
	deadline := time.Now().Add(timeout)
	var last []any
	for time.Now().Before(deadline) {
		u, err := d.Resource(gvr).Namespace(ns).Get(context.Background(), name, metav1.GetOptions{})
		if err == nil {
			last, _, _ = unstructured.NestedSlice(u.Object, "status", "conditions")
			for _, c := range last {
				cm, _ := c.(map[string]any)
				if (cm["type"] == "Succeeded" || cm["type"] == "Failed") && cm["status"] == "True" {
					return cm["type"].(string)
				}
			}
		}
		time.Sleep(250 * time.Millisecond)
	}
	pods, _ := sb.Clientset(t).CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{})
	var ps []string
	for _, p := range pods.Items {
		ps = append(ps, fmt.Sprintf("%s %s node=%q %v", p.Name, p.Status.Phase, p.Spec.NodeName, p.Annotations))
	}
	t.Fatalf("%s/%s did not finish in %s; conditions %v; pods:\n%s\ntraining-operator log:\n%s\nagent log:\n%s", ns, name, timeout, last,
		strings.Join(ps, "\n"), sb.ComponentLog("training-operator", 15), sb.ComponentLog("agent", 15))
	return ""
}

func jobPods(t *testing.T, cs kubernetes.Interface, ns, job string) []corev1.Pod {
	t.Helper()
	pods, err := cs.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{LabelSelector: "training.kubeflow.org/job-name=" + job})
	if err != nil {
		t.Fatal(err)
	}
	return pods.Items
}

// masterPodsSettled returns the job's master pods once none is Pending or Running, or as they are
// at the timeout (the caller's assertions then say what was wrong).
func masterPodsSettled(t *testing.T, cs kubernetes.Interface, ns, job string, timeout time.Duration) []corev1.Pod {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		var masters []corev1.Pod
		settled := true
		for _, p := range jobPods(t, cs, ns, job) {
			if p.Labels["training.kubeflow.org/replica-type"] != "master" {
				continue
			}
			masters = append(masters, p)
			if p.Status.Phase == corev1.PodPending || p.Status.Phase == corev1.PodRunning {
				settled = false
			}
		}
		if settled || time.Now().After(deadline) {
			return masters
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// podLog reads a pod's log through the API server (what `kubectl logs` does).
func podLog(t *testing.T, cs kubernetes.Interface, ns, pod string) string {
	t.Helper()
	rc, err := cs.CoreV1().Pods(ns).GetLogs(pod, &corev1.PodLogOptions{}).Stream(context.Background())
	if err != nil {
		t.Fatalf("logs of %s: %v", pod, err)
	}
	defer rc.Close()
	b, err := io.ReadAll(rc)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// recorded is the sample the agent rendered for the pod, without the CRI prefix.
func recorded(t *testing.T, p corev1.Pod) string {
	t.Helper()
	path := p.Annotations[sandbox.AnnoLogs]
	f, err := os.Open(path)
	if err != nil {
		t.Fatalf("%s: recorded log %q: %v", p.Name, path, err)
	}
	defer f.Close()
	var b strings.Builder
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		parts := strings.SplitN(sc.Text(), " ", 4)
		if len(parts) == 4 {
			b.WriteString(parts[3] + "\n")
		}
	}
	return b.String()
}

func checkRDMAPlacement(t *testing.T, pods []corev1.Pod, want int) {
	t.Helper()
	nodes := map[string]bool{}
	for _, p := range pods {
		if _, ok := p.Spec.Containers[0].Resources.Limits[rdma]; !ok {
			continue
		}
		if p.Spec.NodeName == "gpu-node-3" {
			t.Errorf("%s scheduled on gpu-node-3, which has no %s", p.Name, rdma)
		}
		nodes[p.Spec.NodeName] = true
	}
	if len(nodes) != want {
		t.Errorf("pods on %d nodes (%v), want %d", len(nodes), nodes, want)
	}
}

func TestIntegrationPyTorchJob(t *testing.T) {
	sb := sandboxtest.Get(t)
	ns := sb.Namespace(t)
	cs, d := sb.Clientset(t), sb.Dynamic(t)
	job := pytorchJob(ns, "qlora", "pytorch")
	if err := apply(t, d, pytorchGVR, job, true); err != nil {
		t.Fatalf("server-side dry run: %v", err)
	}
	if err := apply(t, d, pytorchGVR, job, false); err != nil {
		t.Fatalf("apply: %v", err)
	}
	// Idempotent: the same apply again changes nothing and does not fail.
	if err := apply(t, d, pytorchGVR, job, false); err != nil {
		t.Fatalf("second apply: %v", err)
	}
	if got := waitJob(t, sb, pytorchGVR, ns, "qlora", 90*time.Second); got != "Succeeded" {
		t.Fatalf("job %s, want Succeeded", got)
	}
	pods := jobPods(t, cs, ns, "qlora")
	if len(pods) != 3 {
		t.Fatalf("%d pods, want 3", len(pods))
	}
	checkRDMAPlacement(t, pods, 3)
	a := nccl.NewLogAnalyzer()
	for _, p := range pods {
		c := p.Spec.Containers[0]
		if c.SecurityContext == nil || len(c.SecurityContext.Capabilities.Add) == 0 || c.Env[0].Name != "NCCL_DEBUG" {
			t.Errorf("%s: IPC_LOCK or NCCL env lost", p.Name)
		}
		if p.Status.Phase != corev1.PodSucceeded {
			t.Errorf("%s: %s", p.Name, p.Status.Phase)
		}
		got := podLog(t, cs, ns, p.Name)
		if want := recorded(t, p); got != want || !strings.Contains(got, "NCCL INFO Using network IB") {
			t.Errorf("%s: logs through the API server differ from the recorded sample:\n%s\n---\n%s", p.Name, got, want)
		}
		if err := a.Feed(p.Name, strings.NewReader(got)); err != nil {
			t.Fatal(err)
		}
	}
	if rep := a.Report(); rep.Transport != nccl.TransportIB || rep.Ranks == nil || *rep.Ranks != 3 || !rep.OK() {
		t.Errorf("NCCL analysis of the pods' logs: transport %s ranks %v problems %v", rep.Transport, rep.Ranks, rep.Problems)
	}
}

func TestIntegrationWebhookRejectsInvalidPyTorchJob(t *testing.T) {
	sb := sandboxtest.Get(t)
	ns := sb.Namespace(t)
	err := apply(t, sb.Dynamic(t), pytorchGVR, pytorchJob(ns, "bad", "trainer"), false)
	if err == nil || !strings.Contains(err.Error(), "pytorch") || !strings.Contains(err.Error(), "validator.pytorchjob.training-operator.kubeflow.org") {
		t.Fatalf("want the training-operator webhook to reject a PyTorchJob without a container named pytorch, got %v", err)
	}
}

func TestIntegrationMPIJob(t *testing.T) {
	sb := sandboxtest.Get(t)
	ns := sb.Namespace(t)
	cs, d := sb.Clientset(t), sb.Dynamic(t)
	one, three := int32(1), int32(3)
	launcher := rankTemplate("mpi", []string{"mpirun", "-np", "3", "/opt/nccl_tests/build/all_reduce_perf", "-b", "8", "-e", "8G", "-f", "2"}, 0)
	launcher.Spec.Containers[0].Resources = corev1.ResourceRequirements{}
	launcher.Spec.Containers[0].Env = append(launcher.Spec.Containers[0].Env, corev1.EnvVar{Name: "NCCL_ALGO", Value: "Ring"})
	worker := rankTemplate("mpi", []string{"/usr/sbin/sshd", "-De"}, 8)
	job := &kubeflowv1.MPIJob{
		TypeMeta:   metav1.TypeMeta{APIVersion: "kubeflow.org/v1", Kind: "MPIJob"},
		ObjectMeta: metav1.ObjectMeta{Name: "allreduce", Namespace: ns},
		Spec: kubeflowv1.MPIJobSpec{SlotsPerWorker: &one, MPIReplicaSpecs: map[kubeflowv1.ReplicaType]*kubeflowv1.ReplicaSpec{
			kubeflowv1.MPIJobReplicaTypeLauncher: {Replicas: &one, RestartPolicy: kubeflowv1.RestartPolicyNever, Template: launcher},
			kubeflowv1.MPIJobReplicaTypeWorker:   {Replicas: &three, RestartPolicy: kubeflowv1.RestartPolicyNever, Template: worker},
		}},
	}
	if err := apply(t, d, mpiGVR, job, false); err != nil {
		t.Fatalf("apply: %v", err)
	}
	if got := waitJob(t, sb, mpiGVR, ns, "allreduce", 120*time.Second); got != "Succeeded" {
		t.Fatalf("job %s, want Succeeded", got)
	}
	pods := jobPods(t, cs, ns, "allreduce")
	checkRDMAPlacement(t, pods, 3)
	for _, p := range pods {
		if p.Labels["training.kubeflow.org/replica-type"] != "launcher" {
			continue
		}
		out := podLog(t, cs, ns, p.Name)
		runs, err := nccl.ParsePerf(strings.NewReader(out))
		if err != nil || len(runs) != 1 || len(runs[0].Rows) != 31 {
			t.Fatalf("launcher output is not the all_reduce_perf sample: %v\n%s", err, out)
		}
		if rep, _ := nccl.AnalyzeLog(strings.NewReader(out)); rep.Transport != nccl.TransportIB || rep.Ranks == nil || *rep.Ranks != 3 {
			t.Errorf("launcher NCCL lines: %s %v", rep.Transport, rep.Ranks)
		}
		if !strings.Contains(out, "NCCL_ALGO set by environment to Ring") {
			t.Errorf("launcher got the wrong variant (want Ring):\n%s", out[:min(len(out), 2000)])
		}
		if ml, _ := mpilauncher.Analyze(strings.NewReader(out)); !ml.OK() {
			t.Errorf("launcher verdict %+v", ml)
		}
	}
}

// TestIntegrationRenderedJobs applies what `ain render` prints for the built-in recipes.
func TestIntegrationRenderedJobs(t *testing.T) {
	sb := sandboxtest.Get(t)
	for _, c := range []struct {
		recipe string
		gvr    schema.GroupVersionResource
		pods   int
	}{
		{"qlora", pytorchGVR, 3},
		{"allreduce", mpiGVR, 3},
	} {
		t.Run(c.recipe, func(t *testing.T) {
			ns := sb.Namespace(t)
			if err := sandbox.EnsureSharedPVC(context.Background(), sb.REST, ns, sandbox.DefaultSharedClaim); err != nil {
				t.Fatal(err)
			}
			var out, errb bytes.Buffer
			code := cli.Run(context.Background(), cli.Streams{In: strings.NewReader(""), Out: &out, Err: &errb},
				// The legacy stack's APIs: without a cluster to ask, render emits the current ones.
				[]string{"ain", "render", c.recipe, "-n", ns, "-o", "yaml", "--api", "training-operator"})
			if code != 0 {
				t.Fatalf("ain render %s: exit %d: %s", c.recipe, code, errb.String())
			}
			name := applyYAML(t, sb, ns, out.Bytes())
			if got := waitJob(t, sb, c.gvr, ns, name, 120*time.Second); got != "Succeeded" {
				t.Fatalf("%s: %s, want Succeeded", name, got)
			}
			pods := jobPods(t, sb.Clientset(t), ns, name)
			checkRDMAPlacement(t, pods, c.pods)
			for _, p := range pods {
				c0 := p.Spec.Containers[0]
				_, gpu := c0.Resources.Limits["nvidia.com/gpu"]
				if p.Labels["training.kubeflow.org/replica-type"] == "launcher" {
					continue
				}
				hasShm := false
				for _, m := range c0.VolumeMounts {
					hasShm = hasShm || m.MountPath == "/dev/shm"
				}
				hasNCCL := false
				for _, e := range c0.Env {
					hasNCCL = hasNCCL || strings.HasPrefix(e.Name, "NCCL_")
				}
				ipc := c0.SecurityContext != nil && c0.SecurityContext.Capabilities != nil && len(c0.SecurityContext.Capabilities.Add) > 0
				if !gpu || !hasShm || !hasNCCL || !ipc {
					t.Errorf("%s: gpu %v /dev/shm %v NCCL env %v IPC_LOCK %v", p.Name, gpu, hasShm, hasNCCL, ipc)
				}
			}
		})
	}
}

// applyYAML server-side applies every document of a rendered bundle and returns the job's name.
func applyYAML(t *testing.T, sb *sandboxtest.Sandbox, ns string, data []byte) string {
	t.Helper()
	d := sb.Dynamic(t)
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	job := ""
	for {
		var m map[string]any
		if err := dec.Decode(&m); err == io.EOF {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		if m == nil {
			continue
		}
		u := &unstructured.Unstructured{Object: m}
		var gvr schema.GroupVersionResource
		switch u.GetKind() {
		case "PyTorchJob":
			gvr, job = pytorchGVR, u.GetName()
		case "MPIJob":
			gvr, job = mpiGVR, u.GetName()
		case "ConfigMap":
			gvr = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
		case "Service":
			gvr = schema.GroupVersionResource{Version: "v1", Resource: "services"}
		case "Secret":
			gvr = schema.GroupVersionResource{Version: "v1", Resource: "secrets"}
		default:
			t.Fatalf("rendered kind %s not handled by the test", u.GetKind())
		}
		u.SetNamespace(ns)
		body, _ := json.Marshal(u)
		force := true
		if _, err := d.Resource(gvr).Namespace(ns).Patch(context.Background(), u.GetName(), types.ApplyPatchType, body,
			metav1.PatchOptions{FieldManager: "ain-test", Force: &force}); err != nil {
			t.Fatalf("applying %s %s: %v", u.GetKind(), u.GetName(), err)
		}
	}
	if job == "" {
		t.Fatal("no job in the rendered output")
	}
	return job
}

// TestIntegrationScenarioProbe switches to ib-port-init and runs the preflight's probe pod on
// each node: gpu-node-2 reports its IB port INIT (no subnet manager), the others ACTIVE.
func TestIntegrationScenarioProbe(t *testing.T) {
	sb := sandboxtest.Get(t)
	sb.UseScenario(t, "ib-port-init")
	ns := sb.Namespace(t)
	cs := sb.Clientset(t)
	for _, node := range []string{"gpu-node-1", "gpu-node-2"} {
		p := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: "probe-" + node, Namespace: ns},
			Spec: corev1.PodSpec{
				NodeName:      node,
				RestartPolicy: corev1.RestartPolicyNever,
				Containers: []corev1.Container{{Name: "probe", Image: "busybox", Command: []string{"sh", "-c", ibport.SysfsDumpCommand},
					Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{rdma: resource.MustParse("1")}}}},
			},
		}
		if _, err := cs.CoreV1().Pods(ns).Create(context.Background(), p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct {
		node  string
		ready bool
	}{{"gpu-node-1", true}, {"gpu-node-2", false}} {
		name := "probe-" + c.node
		var p *corev1.Pod
		if _, ok := sandboxtest.Poll(60*time.Second, 250*time.Millisecond, func() bool {
			var err error
			p, err = cs.CoreV1().Pods(ns).Get(context.Background(), name, metav1.GetOptions{})
			return err == nil && p.Status.Phase == corev1.PodSucceeded
		}); !ok {
			t.Fatalf("%s did not succeed: %v %v", name, p.Status.Phase, p.Annotations)
		}
		rep, err := ibport.Parse(strings.NewReader(podLog(t, cs, ns, name)))
		if err != nil || rep.Ready != c.ready || len(rep.Ports) == 0 {
			t.Fatalf("%s: %+v %v", name, rep, err)
		}
		if !c.ready && rep.Ports[0].Reason != ibport.ReasonNoSM {
			t.Errorf("%s: reason %s, want %s", name, rep.Ports[0].Reason, ibport.ReasonNoSM)
		}
	}
}

// TestIntegrationPortForward puts a local HTTP server behind every simulated pod's port 8000 and
// reaches it the way kubectl port-forward does, through the API server and kwok.
func TestIntegrationPortForward(t *testing.T) {
	sb := sandboxtest.Get(t)
	ns := sb.Namespace(t)
	cs := sb.Clientset(t)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, `{"object":"list","data":[{"id":"sim-model"}]}`)
	}))
	defer srv.Close()
	target := strings.TrimPrefix(srv.URL, "http://")
	if err := sandbox.ForwardPort(context.Background(), sb.Dir, sandbox.PortForward{PodPort: 8000, Target: target}); err != nil {
		t.Fatal(err)
	}
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "vllm-0", Namespace: ns},
		Spec:       corev1.PodSpec{NodeName: "gpu-node-1", Containers: []corev1.Container{{Name: "vllm", Image: "vllm/vllm-openai", Command: []string{"vllm", "serve"}}}},
	}
	if _, err := cs.CoreV1().Pods(ns).Create(context.Background(), p, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, ok := sandboxtest.Poll(30*time.Second, 200*time.Millisecond, func() bool {
		got, err := cs.CoreV1().Pods(ns).Get(context.Background(), p.Name, metav1.GetOptions{})
		return err == nil && got.Status.Phase == corev1.PodRunning
	}); !ok {
		t.Fatalf("pod not running")
	}
	transport, upgrader, err := spdy.RoundTripperFor(sb.REST)
	if err != nil {
		t.Fatal(err)
	}
	url := cs.CoreV1().RESTClient().Post().Resource("pods").Namespace(ns).Name(p.Name).SubResource("portforward").URL()
	dialer := spdy.NewDialer(upgrader, &http.Client{Transport: transport}, http.MethodPost, url)
	stop, ready := make(chan struct{}), make(chan struct{})
	fw, err := portforward.NewOnAddresses(dialer, []string{"127.0.0.1"}, []string{"0:8000"}, stop, ready, io.Discard, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	errc := make(chan error, 1)
	go func() { errc <- fw.ForwardPorts() }()
	defer close(stop)
	select {
	case <-ready:
	case err := <-errc:
		t.Fatalf("port-forward: %v", err)
	case <-time.After(20 * time.Second):
		t.Fatal("port-forward not ready")
	}
	ports, err := fw.GetPorts()
	if err != nil || len(ports) != 1 {
		t.Fatal(ports, err)
	}
	resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/v1/models", ports[0].Local))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(body), "sim-model") {
		t.Errorf("through the port-forward: %s", body)
	}
}

func mpiJob(ns, name string, workers int32, launcherInits ...string) *kubeflowv1.MPIJob {
	one := int32(1)
	launcher := rankTemplate("mpi", []string{"mpirun", "-np", "3", "/opt/nccl_tests/build/all_reduce_perf", "-b", "8", "-e", "8G"}, 0)
	launcher.Spec.Containers[0].Resources = corev1.ResourceRequirements{}
	for _, n := range launcherInits {
		launcher.Spec.InitContainers = append(launcher.Spec.InitContainers, corev1.Container{Name: n, Image: "busybox", Command: []string{"true"}})
	}
	worker := rankTemplate("mpi", []string{"/usr/sbin/sshd", "-De"}, 1)
	return &kubeflowv1.MPIJob{
		TypeMeta:   metav1.TypeMeta{APIVersion: "kubeflow.org/v1", Kind: "MPIJob"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: kubeflowv1.MPIJobSpec{SlotsPerWorker: &one, MPIReplicaSpecs: map[kubeflowv1.ReplicaType]*kubeflowv1.ReplicaSpec{
			kubeflowv1.MPIJobReplicaTypeLauncher: {Replicas: &one, RestartPolicy: kubeflowv1.RestartPolicyNever, Template: launcher},
			kubeflowv1.MPIJobReplicaTypeWorker:   {Replicas: &workers, RestartPolicy: kubeflowv1.RestartPolicyNever, Template: worker},
		}},
	}
}

// TestIntegrationScenarios runs a job under each failure scenario and checks the outcome and
// what the logs say, as ain's analysers read them.
func TestIntegrationScenarios(t *testing.T) {
	sb := sandboxtest.Get(t)
	t.Run("job-fails", func(t *testing.T) {
		sb.UseScenario(t, "job-fails")
		ns := sb.Namespace(t)
		if err := apply(t, sb.Dynamic(t), pytorchGVR, pytorchJob(ns, "crash", "pytorch"), false); err != nil {
			t.Fatal(err)
		}
		if got := waitJob(t, sb, pytorchGVR, ns, "crash", 90*time.Second); got != "Failed" {
			t.Fatalf("job %s, want Failed", got)
		}
		// The operator marks the job Failed as soon as any replica fails; in this scenario every
		// rank crashes, but the master's own status may land a moment after a worker's.
		for _, p := range masterPodsSettled(t, sb.Clientset(t), ns, "crash", 30*time.Second) {
			st := p.Status.ContainerStatuses
			if p.Status.Phase != corev1.PodFailed || len(st) == 0 || st[0].State.Terminated == nil || st[0].State.Terminated.ExitCode != 1 {
				t.Errorf("%s: %s %+v", p.Name, p.Status.Phase, st)
			}
			if log := podLog(t, sb.Clientset(t), ns, p.Name); !strings.Contains(log, "NCCL WARN NET/IB : Got completion from peer") {
				t.Errorf("%s: no NCCL error in the log", p.Name)
			}
		}
	})
	t.Run("socket-fallback", func(t *testing.T) {
		sb.UseScenario(t, "socket-fallback")
		ns := sb.Namespace(t)
		if err := apply(t, sb.Dynamic(t), pytorchGVR, pytorchJob(ns, "slow", "pytorch"), false); err != nil {
			t.Fatal(err)
		}
		if got := waitJob(t, sb, pytorchGVR, ns, "slow", 90*time.Second); got != "Succeeded" {
			t.Fatalf("job %s, want Succeeded", got)
		}
		a := nccl.NewLogAnalyzer()
		for _, p := range jobPods(t, sb.Clientset(t), ns, "slow") {
			_ = a.Feed(p.Name, strings.NewReader(podLog(t, sb.Clientset(t), ns, p.Name)))
		}
		if rep := a.Report(); rep.Transport != nccl.TransportSocket || rep.OK() {
			t.Errorf("transport %s ok %v, want socket with a problem", rep.Transport, rep.OK())
		}
	})
	t.Run("late-workers", func(t *testing.T) {
		sb.UseScenario(t, "late-workers")
		ns := sb.Namespace(t)
		d := sb.Dynamic(t)
		// Without a gate the launcher runs before its workers are Ready and fails (failure 1).
		if err := apply(t, d, mpiGVR, mpiJob(ns, "ungated", 2), false); err != nil {
			t.Fatal(err)
		}
		// With ain's gate (an init container waiting for the workers) the job succeeds.
		if err := apply(t, d, mpiGVR, mpiJob(ns, "gated", 2, "wait-for-workers"), false); err != nil {
			t.Fatal(err)
		}
		if got := waitJob(t, sb, mpiGVR, ns, "ungated", 90*time.Second); got != "Failed" {
			t.Errorf("ungated: %s, want Failed", got)
		}
		for _, p := range jobPods(t, sb.Clientset(t), ns, "ungated") {
			if p.Labels["training.kubeflow.org/replica-type"] == "launcher" {
				rep, _ := mpilauncher.Analyze(strings.NewReader(podLog(t, sb.Clientset(t), ns, p.Name)))
				if rep.Verdict != mpilauncher.VerdictLauncherBeforeWorkers {
					t.Errorf("launcher verdict %s", rep.Verdict)
				}
			}
			if p.Labels["training.kubeflow.org/replica-type"] == "worker" && p.Annotations[sandbox.AnnoReadyAfter] != "20s" {
				t.Errorf("%s: ready-after %q", p.Name, p.Annotations[sandbox.AnnoReadyAfter])
			}
		}
		if got := waitJob(t, sb, mpiGVR, ns, "gated", 90*time.Second); got != "Succeeded" {
			t.Errorf("gated: %s, want Succeeded", got)
		}
	})
}

// kwok replans a node's stage on every write of it. With the heartbeat's delay counted from the
// node's last change, a node written more often than every 20 s got no heartbeat at all (issue
// 32's CI run: none for two minutes while tests switched scenarios, then the node lifecycle
// controller marked the GPU Operator's pods not Ready). Here the scenario flips every 4 s for a
// minute, each flip taking gpu-node-3's RDMA label away or giving it back, and every node's
// heartbeat stays within kwok's 20-30 s.
func TestIntegrationHeartbeatWhileNodesChange(t *testing.T) {
	sb := sandboxtest.Get(t)
	cs := sb.Clientset(t)
	ctx := context.Background()
	prev := sb.State.Config.Scenario
	t.Cleanup(func() {
		if err := sandbox.SetScenario(ctx, sb.Dir, prev); err != nil {
			t.Errorf("restoring scenario %s: %v", prev, err)
		}
	})
	rv := func(name string) string {
		n, err := cs.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return n.ResourceVersion
	}
	// Each node's oldest heartbeat age seen, sampled after every flip: 30 s at most between
	// heartbeats, 1 s of the time's truncation, the rest for a loaded machine.
	oldest := map[string]time.Duration{}
	sample := func() {
		nodes, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range nodes.Items {
			for _, c := range n.Status.Conditions {
				if age := time.Since(c.LastHeartbeatTime.Time); c.Type == corev1.NodeReady && age > oldest[n.Name] {
					oldest[n.Name] = age
				}
			}
		}
	}
	before := rv("gpu-node-3")
	for i, end := 0, time.Now().Add(60*time.Second); time.Now().Before(end); i++ {
		sc := []string{"healthy", "no-rdma"}[i%2]
		if err := sandbox.SetScenario(ctx, sb.Dir, sc); err != nil {
			t.Fatalf("scenario %s: %v", sc, err)
		}
		time.Sleep(4 * time.Second)
		sample()
	}
	if rv("gpu-node-3") == before {
		t.Fatal("the scenario flips did not write gpu-node-3: the test proves nothing")
	}
	for name, age := range oldest {
		if age > 40*time.Second {
			t.Errorf("%s: a heartbeat %s old, want at most 30 s", name, age.Round(time.Second))
		}
	}
	if len(oldest) == 0 {
		t.Fatal("no node with a Ready condition")
	}
}

// What sandboxtest prints when a package's tests fail: each node's heartbeat, and the cluster's last
// 20 Warning events, oldest first (the API server's type=Warning field selector drops the Normal
// one). The test's 25 events are dated an hour ahead, so they are the cluster's newest.
func TestIntegrationDiagnose(t *testing.T) {
	sb := sandboxtest.Get(t)
	ns := sb.Namespace(t)
	cs := sb.Clientset(t)
	ahead := time.Now().Add(time.Hour).Truncate(time.Second)
	event := func(typ string, i int) {
		_, err := cs.CoreV1().Events(ns).Create(context.Background(), &corev1.Event{
			ObjectMeta:     metav1.ObjectMeta{GenerateName: "diag-", Namespace: ns},
			InvolvedObject: corev1.ObjectReference{Kind: "Pod", Namespace: ns, Name: fmt.Sprintf("diag-%02d", i)},
			Type:           typ, Reason: "Diag" + typ, Message: "made by the test",
			LastTimestamp: metav1.NewTime(ahead.Add(time.Duration(i) * time.Second)),
		}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
	}
	event(corev1.EventTypeNormal, 99)
	for i := 24; i >= 0; i-- { // created newest first: the output must sort them
		event(corev1.EventTypeWarning, i)
	}
	var b bytes.Buffer
	sb.Diagnose(context.Background(), &b)
	out := b.String()
	first, last := strings.Index(out, "pod "+ns+"/diag-05: DiagWarning: made by the test (x1)"), strings.Index(out, "pod "+ns+"/diag-24: ")
	if first < 0 || last < first || strings.Contains(out, "/diag-04:") || strings.Contains(out, "DiagNormal") {
		t.Errorf("want the test's Warning events 05 to 24, oldest first, and no Normal one:\n%s", out)
	}
	if !strings.Contains(out, ", the last 20\n") {
		t.Errorf("the bound is not said:\n%s", out)
	}
	if !strings.Contains(out, "node gpu-node-1: Ready True, last heartbeat ") || !strings.Contains(out, "agent log, last ") {
		t.Errorf("no node or agent lines:\n%s", out)
	}
}
