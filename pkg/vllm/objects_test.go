package vllm

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/ain-hpc/ain/internal/golden"
	"github.com/ain-hpc/ain/pkg/jobs"
	"github.com/ain-hpc/ain/pkg/profile"
	"github.com/ain-hpc/ain/pkg/recipe"
)

const servingRecipe = `apiVersion: ain.dev/v1alpha1
kind: Serving
metadata:
  name: qwen
spec:
  image: vllm/vllm-openai:v0.30.0
  model: /shared/models/Qwen2.5-7B-Instruct
  replicas: 2
  maxModelLen: 8192
  resources: {cpu: "8", memory: 64Gi}
  volumes:
    - {name: shared, claimName: nfs-shared, mountPath: /shared}
  apiKeySecret: {name: vllm-api-key, key: api-key}
  hfTokenSecret: {name: hf-token, key: token}
  ingress:
    host: llm.course.example
`

func servingObjects(t *testing.T, sets ...string) *Objects {
	t.Helper()
	r, err := recipe.Parse("qwen.yaml", []byte(servingRecipe), sets)
	if err != nil {
		t.Fatal(err)
	}
	objs, err := BuildObjects(r, profile.Default(), ObjectOptions{Namespace: "llm"})
	if err != nil {
		t.Fatal(err)
	}
	return objs
}

func TestServingObjectsGolden(t *testing.T) {
	for name, sets := range map[string][]string{
		"serving-independent": nil,
		"serving-deployment":  {"topology=deployment"},
	} {
		objs := servingObjects(t, sets...)
		got, err := jobs.Encode(objs.All(), "yaml")
		if err != nil {
			t.Fatal(err)
		}
		golden.File(t, filepath.Join("testdata", "golden", name+".yaml"), got)
	}
}

func TestServingObjects(t *testing.T) {
	objs := servingObjects(t)
	if len(objs.Deployments) != 2 || objs.Deployments[1].Name != "qwen-1" || *objs.Deployments[0].Spec.Replicas != 1 {
		t.Fatalf("independent replicas: %d deployments", len(objs.Deployments))
	}
	for _, d := range objs.Deployments {
		c := d.Spec.Template.Spec.Containers[0]
		args := strings.Join(append(c.Command, c.Args...), " ")
		for _, want := range []string{"vllm serve /shared/models/Qwen2.5-7B-Instruct", "--host 0.0.0.0", "--port 8000",
			"--served-model-name Qwen2.5-7B-Instruct", "--tensor-parallel-size 1", "--max-model-len 8192", "--gpu-memory-utilization 0.9"} {
			if !strings.Contains(args, want) {
				t.Errorf("command %q lacks %q", args, want)
			}
		}
		if strings.Contains(args, "--generation-config") {
			// vLLM's default (auto) is kept; ain's checks send their sampling per request.
			t.Errorf("the server's generation config is forced: %s", args)
		}
		// Requests make the pod Burstable, not BestEffort; the memory limit leaves room for a
		// full memory-backed /dev/shm (8Gi default) on top of the 64Gi request.
		memReq, memLim := c.Resources.Requests[corev1.ResourceMemory], c.Resources.Limits[corev1.ResourceMemory]
		if memReq.String() != "64Gi" || memLim.String() != "72Gi" || c.Resources.Requests.Cpu().String() != "8" {
			t.Errorf("resources %+v", c.Resources)
		}
		if strings.Contains(args, "api-key") {
			t.Errorf("the API key is on the command line: %s", args)
		}
		gpu := corev1.ResourceName("nvidia.com/gpu")
		reqGPU, limGPU := c.Resources.Requests[gpu], c.Resources.Limits[gpu]
		if reqGPU.Cmp(limGPU) != 0 || reqGPU.Value() != 1 {
			t.Errorf("GPU request %v limit %v", c.Resources.Requests[gpu], c.Resources.Limits[gpu])
		}
		for _, e := range c.Env {
			if (e.Name == "VLLM_API_KEY" || e.Name == "HF_TOKEN") && (e.Value != "" || e.ValueFrom == nil || e.ValueFrom.SecretKeyRef == nil) {
				t.Errorf("%s is not a secretKeyRef: %+v", e.Name, e)
			}
		}
		env := map[string]string{}
		for _, e := range c.Env {
			env[e.Name] = e.Value
		}
		if env["HF_HOME"] != "/shared/huggingface" || env["HF_HUB_CACHE"] != "/shared/huggingface/hub" || env["HOME"] == "" {
			t.Errorf("env %v", env)
		}
		if c.StartupProbe.HTTPGet.Path != "/health" || int(c.StartupProbe.FailureThreshold)*int(c.StartupProbe.PeriodSeconds) != 1200 {
			t.Errorf("startup probe %+v", c.StartupProbe)
		}
		for _, p := range []*corev1.Probe{c.StartupProbe, c.LivenessProbe, c.ReadinessProbe} {
			if p.TimeoutSeconds < 5 {
				t.Errorf("probe timeout %d s", p.TimeoutSeconds)
			}
		}
		if *d.Spec.ProgressDeadlineSeconds < 1200 {
			t.Errorf("progress deadline %d", *d.Spec.ProgressDeadlineSeconds)
		}
	}
	in := objs.Ingress
	if in == nil || in.Annotations["nginx.ingress.kubernetes.io/proxy-buffering"] != "off" || in.Annotations["nginx.ingress.kubernetes.io/proxy-read-timeout"] != "3600" ||
		in.Spec.TLS[0].SecretName != "qwen-tls" || *in.Spec.IngressClassName != "nginx" || in.Spec.Rules[0].Host != "llm.course.example" {
		t.Fatalf("ingress %+v", in)
	}
	// Only the API and the health check are routed: vLLM's key does not guard /invocations,
	// /tokenize, /metrics... (only /v1, /v2, /inference, /cohere), so they must not be
	// reachable through the ingress.
	var paths []string
	for _, p := range in.Spec.Rules[0].HTTP.Paths {
		paths = append(paths, p.Path+" "+string(*p.PathType)+" -> "+p.Backend.Service.Name)
	}
	if got := strings.Join(paths, ", "); got != "/v1 Prefix -> qwen, /health Exact -> qwen" {
		t.Fatalf("ingress paths: %s", got)
	}
	if objs.Service.Spec.Selector[LabelComponent] != ComponentServer || objs.Service.Spec.Selector[LabelReplica] != "" {
		t.Fatalf("service selector %v", objs.Service.Spec.Selector)
	}
	one := servingObjects(t, "topology=deployment")
	if len(one.Deployments) != 1 || *one.Deployments[0].Spec.Replicas != 2 || one.Deployments[0].Spec.Strategy.RollingUpdate.MaxSurge.IntValue() != 0 {
		t.Fatalf("deployment topology: %+v", one.Deployments)
	}
}

func TestServingValidation(t *testing.T) {
	_, err := recipe.Parse("bad.yaml", []byte(`apiVersion: ain.dev/v1alpha1
kind: Serving
metadata: {name: bad}
spec:
  image: vllm/vllm-openai:v0.30.0
  model: /shared/m
  topology: per-replica
  gpuMemoryUtilization: 1.5
  startupTimeout: 10s
  extraArgs: [--port, "9000"]
  env: {VLLM_API_KEY: plain}
  volumes:
    - {name: shared, claimName: nfs-shared, mountPath: /shared, readOnly: true}
  hfHome: /shared/hf
  ingress: {className: nginx}
`), nil)
	if err == nil {
		t.Fatal("no error")
	}
	for _, want := range []string{
		`bad.yaml:7: spec.topology: "per-replica" is not one of independent, deployment`,
		`bad.yaml:8: spec.gpuMemoryUtilization: must be in (0, 1]`,
		`bad.yaml:9: spec.startupTimeout: "10s"`,
		`bad.yaml:10: spec.extraArgs[0]: --port is set by ain`,
		`bad.yaml:11: spec.env.VLLM_API_KEY: a secret must not be plain env`,
		`bad.yaml:14: spec.hfHome: /shared/hf is on the read-only volume "shared"`,
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("missing %q in:\n%v", want, err)
		}
	}
}

// The TLS Secret follows --name (two deployments of one recipe must not share, or fight
// over, one Secret), and a cert-manager issuer becomes the ingress-shim annotation.
func TestIngressTLSNamingAndIssuer(t *testing.T) {
	r, err := recipe.Parse("qwen.yaml", []byte(servingRecipe), []string{"ingress.clusterIssuer=letsencrypt"})
	if err != nil {
		t.Fatal(err)
	}
	objs, err := BuildObjects(r, profile.Default(), ObjectOptions{Name: "qwen-b", Namespace: "llm"})
	if err != nil {
		t.Fatal(err)
	}
	in := objs.Ingress
	if in.Spec.TLS[0].SecretName != "qwen-b-tls" || in.Annotations[AnnotationClusterIssuer] != "letsencrypt" || in.Spec.Rules[0].HTTP.Paths[0].Backend.Service.Name != "qwen-b" {
		t.Fatalf("tls %+v annotations %v", in.Spec.TLS, in.Annotations)
	}
	// The course recipe itself renders the HTTPS entry.
	course, err := recipe.Parse("vllm.yaml", mustRead(t, "../../recipes/vllm.yaml"), []string{"ingress.host=llm.example.com"})
	if err != nil {
		t.Fatal(err)
	}
	cobjs, err := BuildObjects(course, profile.Default(), ObjectOptions{})
	if err != nil || cobjs.Ingress == nil || cobjs.Ingress.Spec.TLS[0].SecretName != "vllm-tls" || len(cobjs.Ingress.Spec.Rules[0].HTTP.Paths) != 2 {
		t.Fatalf("course recipe: %v %+v", err, cobjs)
	}
}

func mustRead(t *testing.T, p string) []byte {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// Pod hardening: no privilege escalation, no capabilities, seccomp RuntimeDefault, no service
// account token; a preStop pause and vLLM's drain inside the grace period; replicas spread
// over nodes and a PDB for more than one replica, none for one.
func TestServingPodHardening(t *testing.T) {
	objs := servingObjects(t)
	for _, d := range objs.Deployments {
		ps := d.Spec.Template.Spec
		c := ps.Containers[0]
		sc := c.SecurityContext
		if sc == nil || sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation || sc.Capabilities == nil || len(sc.Capabilities.Drop) != 1 || sc.Capabilities.Drop[0] != "ALL" {
			t.Errorf("container securityContext %+v", sc)
		}
		if ps.SecurityContext == nil || ps.SecurityContext.SeccompProfile == nil || ps.SecurityContext.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
			t.Errorf("pod securityContext %+v", ps.SecurityContext)
		}
		if ps.AutomountServiceAccountToken == nil || *ps.AutomountServiceAccountToken {
			t.Errorf("the service account token is mounted")
		}
		args := strings.Join(c.Args, " ")
		if c.Lifecycle == nil || c.Lifecycle.PreStop == nil || c.Lifecycle.PreStop.Exec == nil || !strings.Contains(args, "--shutdown-timeout 90") ||
			*ps.TerminationGracePeriodSeconds < preStopSeconds+shutdownTimeoutSeconds {
			t.Errorf("drain: preStop %+v, args %s, grace %d", c.Lifecycle, args, *ps.TerminationGracePeriodSeconds)
		}
		tsc := ps.TopologySpreadConstraints
		if len(tsc) != 1 || tsc[0].TopologyKey != corev1.LabelHostname || tsc[0].WhenUnsatisfiable != corev1.ScheduleAnyway || tsc[0].LabelSelector.MatchLabels[LabelReplica] != "" ||
			tsc[0].LabelSelector.MatchLabels[jobs.LabelRun] != "qwen" {
			t.Errorf("topology spread %+v", tsc)
		}
	}
	if p := objs.PDB; p == nil || p.Spec.MaxUnavailable.IntValue() != 1 || p.Spec.Selector.MatchLabels[LabelComponent] != ComponentServer || p.Labels[jobs.LabelRun] != "qwen" {
		t.Fatalf("PDB %+v", objs.PDB)
	}
	one := servingObjects(t, "replicas=1")
	if one.PDB != nil || len(one.Deployments[0].Spec.Template.Spec.TopologySpreadConstraints) != 0 {
		t.Errorf("one replica: PDB %+v, spread %+v", one.PDB, one.Deployments[0].Spec.Template.Spec.TopologySpreadConstraints)
	}
	// A vLLM without --shutdown-timeout (before 0.19) or of unknown version would refuse the flag.
	for _, img := range []string{"vllm/vllm-openai:v0.11.0", "vllm/vllm-openai:latest"} {
		old := servingObjects(t, "image="+img)
		if args := strings.Join(old.Deployments[0].Spec.Template.Spec.Containers[0].Args, " "); strings.Contains(args, "--shutdown-timeout") {
			t.Errorf("%s: %s", img, args)
		}
	}
}

// Unset CPU and memory scale with gpusPerReplica (explicit ones are kept), and vLLM's compile
// cache lives on the writable model volume, not in the emptyDir HOME; without one, a warning.
func TestServingScalesWithGPUsAndKeepsCompileCache(t *testing.T) {
	r, err := recipe.Parse("vllm.yaml", mustRead(t, "../../recipes/vllm.yaml"), []string{"gpusPerReplica=2"})
	if err != nil {
		t.Fatal(err)
	}
	objs, err := BuildObjects(r, profile.Default(), ObjectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	c := objs.Deployments[0].Spec.Template.Spec.Containers[0]
	if mem := c.Resources.Requests[corev1.ResourceMemory]; c.Resources.Requests.Cpu().String() != "8" || mem.String() != "64Gi" {
		t.Errorf("2 GPUs: requests %v", c.Resources.Requests)
	}
	env := map[string]string{}
	for _, e := range c.Env {
		env[e.Name] = e.Value
	}
	if env["VLLM_CACHE_ROOT"] != "/shared/vllm-cache" {
		t.Errorf("VLLM_CACHE_ROOT %q", env["VLLM_CACHE_ROOT"])
	}
	// Explicit resources (the test recipe's 8 CPUs, 64Gi) stay as written.
	if c := servingObjects(t, "gpusPerReplica=4").Deployments[0].Spec.Template.Spec.Containers[0]; c.Resources.Requests.Cpu().String() != "8" {
		t.Errorf("explicit resources changed: %v", c.Resources.Requests)
	}
	bare, err := recipe.Parse("bare.yaml", []byte("apiVersion: ain.dev/v1alpha1\nkind: Serving\nmetadata: {name: bare}\nspec: {image: vllm/vllm-openai:v0.30.0, model: Qwen/Qwen3-0.6B}\n"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if w := fmt.Sprint(bare.Warnings()); !strings.Contains(w, "compile cache") || CompileCacheDir(bare.Serving) != "" {
		t.Errorf("no volume: warnings %s", w)
	}
}

// TestServingArchitectures: spec.architectures holds every replica to nodes of those
// architectures (the image runs nowhere else); unset, nothing is required.
func TestServingArchitectures(t *testing.T) {
	pod := servingObjects(t, "architectures=[arm64]").Deployments[0].Spec.Template.Spec
	na := pod.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution
	if na == nil || len(na.NodeSelectorTerms) != 1 || na.NodeSelectorTerms[0].MatchExpressions[0].Key != "kubernetes.io/arch" ||
		na.NodeSelectorTerms[0].MatchExpressions[0].Values[0] != "arm64" {
		t.Errorf("replica node affinity %+v", pod.Affinity)
	}
	if pod := servingObjects(t).Deployments[0].Spec.Template.Spec; pod.Affinity != nil && pod.Affinity.NodeAffinity != nil {
		t.Errorf("no architectures: node affinity %+v", pod.Affinity.NodeAffinity)
	}
}
