package recipe

import (
	"fmt"
	"maps"
	"path"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/validation"
)

// Serving topologies.
const (
	// TopologyIndependent is one Deployment of one pod per replica (the default). The course
	// runs two independent single-GPU replicas: each has its own rollout, progress deadline and
	// status, so a replica stuck loading weights (a slow NFS mount, a bad GPU) does not hold
	// back the others, one can be restarted or pinned to a node alone, and `ain serve status`
	// names the replica that is not ready. The Service spreads requests over all of them.
	TopologyIndependent = "independent"
	// TopologyDeployment is one Deployment with `replicas` pods: one object to scale, rolling
	// updates done by Kubernetes, but one progress deadline for all.
	TopologyDeployment = "deployment"
)

// Serving defaults.
const (
	DefaultServingPort          = 8000
	DefaultGPUMemoryUtilization = 0.9
	DefaultStartupTimeout       = "20m"
	DefaultServingShm           = "8Gi"
	// DefaultGenerationConfig keeps vLLM's own default ("auto": the model's
	// generation_config.json sampling defaults apply). ain's deterministic checks send their
	// sampling per request instead of forcing it on every client of the server.
	DefaultGenerationConfig = "auto"
	// DefaultServingCPU and DefaultServingMemory are each replica's requests per GPU (times
	// gpusPerReplica): without them the pods are BestEffort, the first evicted under node
	// memory pressure. vLLM holds the tokenizer, the scheduler and, while loading, the weights'
	// pages in host memory.
	DefaultServingCPU       = "4"
	DefaultServingMemory    = "32Gi"
	DefaultIngressClass     = "nginx"
	DefaultProxyReadTimeout = 3600
)

// ServingSpec is the serving section (kind Serving): vLLM's OpenAI-compatible server on
// `replicas` pods of `gpusPerReplica` GPUs, a Service and an Ingress.
type ServingSpec struct {
	// Image is the vLLM OpenAI-compatible server image (vllm/vllm-openai:TAG).
	Image string `yaml:"image" json:"image"`
	// Architectures are the CPU architectures (kubernetes.io/arch values) the image is built
	// for; replicas are held to nodes of these. Unset: any node.
	Architectures []string `yaml:"architectures,omitempty" json:"architectures,omitempty"`
	// ImagePullPolicy is Always, IfNotPresent or Never (default IfNotPresent).
	ImagePullPolicy string `yaml:"imagePullPolicy,omitempty" json:"imagePullPolicy,omitempty"`
	// Model is the model path (on the model volume) or Hugging Face name vLLM serves.
	Model string `yaml:"model" json:"model"`
	// ServedModelName is the name clients ask for (--served-model-name); default the last
	// element of model ("Qwen2.5-7B-Instruct").
	ServedModelName string `yaml:"servedModelName,omitempty" json:"servedModelName,omitempty"`
	// Replicas is the number of model server replicas.
	Replicas int `yaml:"replicas" json:"replicas"`
	// Topology is independent (one Deployment per replica, default) or deployment (one
	// Deployment with `replicas` pods).
	Topology string `yaml:"topology,omitempty" json:"topology,omitempty"`
	// GPUsPerReplica is the GPUs per replica, vLLM's --tensor-parallel-size.
	GPUsPerReplica int `yaml:"gpusPerReplica" json:"gpusPerReplica"`
	// MaxModelLen is --max-model-len (0: the model's own).
	MaxModelLen int `yaml:"maxModelLen,omitempty" json:"maxModelLen,omitempty"`
	// GPUMemoryUtilization is --gpu-memory-utilization (default 0.9).
	GPUMemoryUtilization float64 `yaml:"gpuMemoryUtilization,omitempty" json:"gpuMemoryUtilization,omitempty"`
	// DType is --dtype (auto, bfloat16, float16); empty leaves vLLM's default.
	DType string `yaml:"dtype,omitempty" json:"dtype,omitempty"`
	// GenerationConfig is --generation-config: "auto" (default, vLLM's own) applies the
	// sampling defaults in the model's generation_config.json to requests that do not set them;
	// "vllm" ignores them server-wide. ain's answer checks send every sampling field they rely
	// on per request, so they do not need "vllm".
	GenerationConfig string `yaml:"generationConfig,omitempty" json:"generationConfig,omitempty"`
	// ExtraArgs are appended to `vllm serve` (e.g. [--enable-lora, --lora-modules, a=/path]).
	ExtraArgs []string `yaml:"extraArgs,omitempty" json:"extraArgs,omitempty"`
	// Env is extra container environment (not secrets: see apiKeySecret, hfTokenSecret).
	Env map[string]string `yaml:"env,omitempty" json:"env,omitempty"`
	// Resources are the CPU and memory each replica requests (default 4 CPUs and 32Gi per GPU
	// of the replica). The
	// memory limit is the request plus shmSize: pages of a memory-backed /dev/shm are charged
	// to the container's memory cgroup, so a limit without them would OOM-kill a busy replica.
	Resources Resources `yaml:"resources,omitempty" json:"resources,omitempty"`
	// ShmSize sizes the memory-backed /dev/shm (default 8Gi).
	ShmSize string `yaml:"shmSize,omitempty" json:"shmSize,omitempty"`
	// Volumes are PersistentVolumeClaims: the shared (NFS) model disk.
	Volumes []Volume `yaml:"volumes,omitempty" json:"volumes,omitempty"`
	// HFHome is HF_HOME and HF_HUB_CACHE's parent; it must be on a writable volume because
	// Hugging Face writes .lock files next to the weights. Default: <first volume>/huggingface.
	HFHome string `yaml:"hfHome,omitempty" json:"hfHome,omitempty"`
	// APIKeySecret names the Secret key holding the API key (VLLM_API_KEY); empty: no key.
	APIKeySecret *SecretRef `yaml:"apiKeySecret,omitempty" json:"apiKeySecret,omitempty"`
	// HFTokenSecret names the Secret key holding a Hugging Face token (HF_TOKEN).
	HFTokenSecret *SecretRef `yaml:"hfTokenSecret,omitempty" json:"hfTokenSecret,omitempty"`
	// StartupTimeout bounds model loading (startupProbe on /health); default 20m.
	StartupTimeout string `yaml:"startupTimeout,omitempty" json:"startupTimeout,omitempty"`
	// Ingress exposes the Service over HTTPS.
	Ingress *ServingIngress `yaml:"ingress,omitempty" json:"ingress,omitempty"`
}

// SecretRef points at one key of a Secret in the serving namespace.
type SecretRef struct {
	Name string `yaml:"name" json:"name"`
	Key  string `yaml:"key" json:"key"`
}

// ServingIngress is the HTTPS ingress in front of the replicas. It routes only the API (/v1)
// and the health check (/health) to vLLM: vLLM's API key guards the prefixes /v1, /v2,
// /inference and /cohere (vllm/entrypoints/serve/middleware/authenticate.py; 0.11 guarded /v1
// alone), so /invocations, /tokenize, /pooling, /score or /metrics, which answer without
// it, must not be reachable from outside.
type ServingIngress struct {
	// Host is the DNS name clients use (--host). Empty: the rule matches any host on the
	// ingress controller's address, and a certificate can name no host: set it for real use.
	Host string `yaml:"host,omitempty" json:"host,omitempty"`
	// ClassName is the IngressClass (default nginx: ingress-nginx).
	ClassName string `yaml:"className,omitempty" json:"className,omitempty"`
	// TLSSecret is the kubernetes.io/tls Secret with the certificate (default: the
	// deployment's name, as given by --name, plus "-tls"). ain checks it before applying
	// (type, certificate, expiry, host). A Secret named here must exist; when the default one
	// is missing and no clusterIssuer is set, ain creates a self-signed one for the host (or,
	// without a host, the controller's published address, if any) whose CA it keeps in the
	// Secret's ca.crt.
	TLSSecret string `yaml:"tlsSecret,omitempty" json:"tlsSecret,omitempty"`
	// ClusterIssuer, when set, is the cert-manager ClusterIssuer that issues the certificate
	// into TLSSecret (annotation cert-manager.io/cluster-issuer); ain then leaves the Secret
	// to cert-manager.
	ClusterIssuer string `yaml:"clusterIssuer,omitempty" json:"clusterIssuer,omitempty"`
	// ProxyReadTimeout is seconds ingress-nginx waits between two reads of a stream
	// (default 3600: long generations must not be cut).
	ProxyReadTimeout int `yaml:"proxyReadTimeout,omitempty" json:"proxyReadTimeout,omitempty"`
}

// defaultServing fills serving defaults.
func (r *Recipe) defaultServing(s *ServingSpec) {
	// An explicit 0 is refused by Validate, not replaced.
	if !r.hasField("spec.replicas") {
		orDefault(r, &s.Replicas, "spec.replicas", 1, "")
	}
	if !r.hasField("spec.gpusPerReplica") {
		orDefault(r, &s.GPUsPerReplica, "spec.gpusPerReplica", 1, "")
	}
	orDefault(r, &s.Topology, "spec.topology", TopologyIndependent, "")
	orDefault(r, &s.ImagePullPolicy, "spec.imagePullPolicy", "IfNotPresent", "")
	if s.ServedModelName == "" && s.Model != "" {
		s.ServedModelName = path.Base(strings.TrimSuffix(s.Model, "/"))
		r.noteDefault("spec.servedModelName", s.ServedModelName)
	}
	orDefault(r, &s.GPUMemoryUtilization, "spec.gpuMemoryUtilization", DefaultGPUMemoryUtilization, "0.9")
	orDefault(r, &s.GenerationConfig, "spec.generationConfig", DefaultGenerationConfig, "")
	// Unset CPU and memory scale with the GPUs: each tensor-parallel rank is a worker process
	// of its own (tokenizer and scheduler stay one), and the weights' pages pass through host
	// memory per GPU shard while loading.
	g := max(s.GPUsPerReplica, 1)
	mem := fmt.Sprintf("%dGi", 32*g)
	orDefault(r, &s.Resources.CPU, "spec.resources.cpu", fmt.Sprint(4*g), "")
	orDefault(r, &s.Resources.Memory, "spec.resources.memory", mem, mem+" (the limit adds spec.shmSize)")
	orDefault(r, &s.ShmSize, "spec.shmSize", DefaultServingShm, "")
	orDefault(r, &s.StartupTimeout, "spec.startupTimeout", DefaultStartupTimeout, "")
	if s.HFHome == "" && len(s.Volumes) > 0 && s.Volumes[0].MountPath != "" && !s.Volumes[0].ReadOnly {
		s.HFHome = path.Join(s.Volumes[0].MountPath, "huggingface")
		r.noteDefault("spec.hfHome", s.HFHome)
	}
	if in := s.Ingress; in != nil {
		orDefault(r, &in.ClassName, "spec.ingress.className", DefaultIngressClass, "")
		orDefault(r, &in.ProxyReadTimeout, "spec.ingress.proxyReadTimeout", DefaultProxyReadTimeout, "")
	}
}

func (r *Recipe) hasField(p string) bool { return r.doc != nil && r.doc.Has(p) }

// StartupDuration is StartupTimeout parsed (the default when unset or invalid).
func (s *ServingSpec) StartupDuration() time.Duration {
	d, err := time.ParseDuration(s.StartupTimeout)
	if err != nil || d <= 0 {
		d, _ = time.ParseDuration(DefaultStartupTimeout)
	}
	return d
}

// validateServing checks the serving section.
func (r *Recipe) validateServing(s *ServingSpec, v *validator) {
	v.required("spec.image", s.Image)
	v.image("spec.image", s.Image)
	v.architectures("spec.architectures", s.Architectures)
	v.required("spec.model", s.Model)
	v.min("spec.replicas", s.Replicas, 1)
	v.max("spec.replicas", s.Replicas, MaxReplicas)
	v.min("spec.gpusPerReplica", s.GPUsPerReplica, 1)
	v.oneOf("spec.topology", s.Topology, TopologyIndependent, TopologyDeployment)
	v.oneOf("spec.imagePullPolicy", s.ImagePullPolicy, "Always", "IfNotPresent", "Never")
	if s.ServedModelName != "" && strings.ContainsAny(s.ServedModelName, " \t\n") {
		v.addf("spec.servedModelName", "%q: no spaces (clients send it as the model name)", s.ServedModelName)
	}
	// go-openai v1.43.0's ReasoningValidator (reasoning_validator.go), run by its
	// CreateChatCompletion(Stream), refuses max_tokens, logprobs, temperature/top_p other than 1,
	// n > 1 and penalties for model names starting o1, o3, o4 or gpt-5 (case-sensitive prefixes)
	// and applies its GPT-6 rules to four exact IDs. ain's own requests do not go through it.
	n := s.ServedModelName
	if strings.HasPrefix(n, "o1") || strings.HasPrefix(n, "o3") || strings.HasPrefix(n, "o4") || strings.HasPrefix(n, "gpt-5") ||
		n == "gpt-6-astra" || n == "gpt-6-sol" || n == "gpt-6-luna" || n == "gpt-6.1-sol" {
		v.warnf("spec.servedModelName", "%q is named like an OpenAI reasoning model: Go clients built on go-openai refuse requests to it that set max_tokens, a temperature other than 1 and more (its OpenAI-only rules; ain's own requests are not affected)", s.ServedModelName)
	}
	if s.MaxModelLen < 0 {
		v.addf("spec.maxModelLen", "must not be negative (0: the model's own)")
	}
	if s.GPUMemoryUtilization <= 0 || s.GPUMemoryUtilization > 1 {
		v.addf("spec.gpuMemoryUtilization", "must be in (0, 1], got %g", s.GPUMemoryUtilization)
	}
	if s.DType != "" {
		v.oneOf("spec.dtype", s.DType, "auto", "half", "float16", "bfloat16", "float", "float32")
	}
	v.oneOf("spec.generationConfig", s.GenerationConfig, "vllm", "auto")
	for i, a := range s.ExtraArgs {
		for _, owned := range []string{"--host", "--port", "--served-model-name", "--tensor-parallel-size", "--api-key", "--generation-config"} {
			if a == owned || strings.HasPrefix(a, owned+"=") {
				v.addf(fmt.Sprintf("spec.extraArgs[%d]", i), "%s is set by ain from the recipe's fields; set the field instead", owned)
			}
		}
	}
	for _, k := range slices.Sorted(maps.Keys(s.Env)) {
		if !envNameRE().MatchString(k) {
			v.addf("spec.env."+k, "%q is not a valid environment variable name", k)
		}
		switch k {
		case "VLLM_API_KEY":
			v.addf("spec.env."+k, "a secret must not be plain env: use spec.apiKeySecret (a Secret reference)")
		case "HF_TOKEN", "HUGGING_FACE_HUB_TOKEN":
			v.addf("spec.env."+k, "a secret must not be plain env: use spec.hfTokenSecret (a Secret reference)")
		}
	}
	v.quantity("spec.resources.cpu", s.Resources.CPU)
	v.quantity("spec.resources.memory", s.Resources.Memory)
	v.quantity("spec.shmSize", s.ShmSize)
	r.validateVolumes(s.Volumes, v)
	if !slices.ContainsFunc(s.Volumes, func(vol Volume) bool { return !vol.ReadOnly && vol.MountPath != "" }) && s.Env["VLLM_CACHE_ROOT"] == "" {
		v.warnf("spec.volumes", "no writable volume: vLLM's compile cache (VLLM_CACHE_ROOT, default ~/.cache/vllm) stays in the pod's emptyDir HOME and is rebuilt after every restart; mount the model volume writable (ain then points VLLM_CACHE_ROOT at it) or set spec.env.VLLM_CACHE_ROOT")
	}
	if d, err := time.ParseDuration(s.StartupTimeout); err != nil || d < time.Minute {
		v.addf("spec.startupTimeout", "%q: want a duration of at least 1m such as 20m (model load time)", s.StartupTimeout)
	}
	if s.HFHome != "" {
		if !path.IsAbs(s.HFHome) {
			v.addf("spec.hfHome", "%q: want an absolute path", s.HFHome)
		} else if vol := volumeAt(s.Volumes, s.HFHome); vol == nil {
			v.warnf("spec.hfHome", "%s is on no volume: downloads are lost with the pod and every replica fetches the model again", s.HFHome)
		} else if vol.ReadOnly {
			v.addf("spec.hfHome", "%s is on the read-only volume %q: Hugging Face writes .lock files there", s.HFHome, vol.Name)
		}
	}
	for _, ref := range []struct {
		p string
		s *SecretRef
	}{{"spec.apiKeySecret", s.APIKeySecret}, {"spec.hfTokenSecret", s.HFTokenSecret}} {
		if ref.s == nil {
			continue
		}
		v.required(ref.p+".name", ref.s.Name)
		v.required(ref.p+".key", ref.s.Key)
		if ref.s.Name != "" && len(validation.IsDNS1123Subdomain(ref.s.Name)) > 0 {
			v.addf(ref.p+".name", "%q is not a valid Secret name", ref.s.Name)
		}
	}
	if in := s.Ingress; in != nil {
		if in.Host != "" && len(validation.IsDNS1123Subdomain(strings.TrimPrefix(in.Host, "*."))) > 0 {
			v.addf("spec.ingress.host", "%q is not a DNS name", in.Host)
		}
		if in.TLSSecret != "" && len(validation.IsDNS1123Subdomain(in.TLSSecret)) > 0 {
			v.addf("spec.ingress.tlsSecret", "%q is not a valid Secret name", in.TLSSecret)
		}
		if in.ClusterIssuer != "" && len(validation.IsDNS1123Subdomain(in.ClusterIssuer)) > 0 {
			v.addf("spec.ingress.clusterIssuer", "%q is not a valid ClusterIssuer name", in.ClusterIssuer)
		}
		if in.Host == "" {
			v.warnf("spec.ingress.host", "no host: the Ingress answers for any name on the controller's address, and no certificate can be verified for it; pass --host NAME (a DNS name pointing at the ingress controller)")
		}
		if in.ProxyReadTimeout < 0 {
			v.addf("spec.ingress.proxyReadTimeout", "must not be negative")
		}
	}
}

// volumeAt returns the volume whose mount path holds p.
func volumeAt(vols []Volume, p string) *Volume {
	var best *Volume
	for i := range vols {
		m := strings.TrimSuffix(vols[i].MountPath, "/")
		if m != "" && (p == m || strings.HasPrefix(p, m+"/")) && (best == nil || len(m) > len(best.MountPath)) {
			best = &vols[i]
		}
	}
	return best
}
