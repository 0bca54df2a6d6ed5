package vllm

import (
	"fmt"
	"maps"
	"math"
	"path"
	"sort"
	"strconv"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/ain-hpc/ain/pkg/image"
	"github.com/ain-hpc/ain/pkg/jobs"
	"github.com/ain-hpc/ain/pkg/profile"
	"github.com/ain-hpc/ain/pkg/recipe"
)

// Labels and names of the serving objects.
const (
	LabelComponent     = "ain.dev/component"
	ComponentServer    = "model-server"
	LabelReplica       = "ain.dev/replica"
	AnnotationModel    = "ain.dev/served-model-name"
	ContainerName      = "vllm"
	PortName           = "http"
	HomeVolume         = "home"
	homeDir            = "/home/vllm"
	probePeriodSeconds = 10
)

// ingress-nginx annotations for streaming: no response buffering (tokens reach the client
// as vLLM writes them; buffering was measured to move TTFT p50 from 22 to 287 ms), no request
// buffering, and read/send timeouts longer than the longest generation.
const (
	nginxProxyBuffering        = "nginx.ingress.kubernetes.io/proxy-buffering"
	nginxProxyRequestBuffering = "nginx.ingress.kubernetes.io/proxy-request-buffering"
	nginxProxyReadTimeout      = "nginx.ingress.kubernetes.io/proxy-read-timeout"
	nginxProxySendTimeout      = "nginx.ingress.kubernetes.io/proxy-send-timeout"
	nginxProxyBodySize         = "nginx.ingress.kubernetes.io/proxy-body-size"
)

// ObjectOptions are per-deployment settings that are not part of the recipe.
type ObjectOptions struct {
	// Name overrides metadata.name.
	Name string
	// Namespace for every object (empty leaves it to the client's default).
	Namespace string
}

// Objects are what a serving recipe renders to.
type Objects struct {
	Name        string
	Deployments []*appsv1.Deployment
	Service     *corev1.Service
	// PDB keeps voluntary evictions (a node drain) to one replica at a time; nil for one replica.
	PDB *policyv1.PodDisruptionBudget
	// The entry, by spec.expose: an Ingress, or a Gateway API HTTPRoute with the Gateway ain
	// creates for it (nil when the route attaches to an existing Gateway); nothing for none.
	Ingress   *networkingv1.Ingress
	Gateway   *gatewayv1.Gateway
	HTTPRoute *gatewayv1.HTTPRoute
}

// All lists the objects in apply order.
func (o *Objects) All() []runtime.Object {
	var out []runtime.Object
	for _, d := range o.Deployments {
		out = append(out, d)
	}
	out = append(out, o.Service)
	if o.PDB != nil {
		out = append(out, o.PDB)
	}
	if o.Ingress != nil {
		out = append(out, o.Ingress)
	}
	if o.Gateway != nil {
		out = append(out, o.Gateway)
	}
	if o.HTTPRoute != nil {
		out = append(out, o.HTTPRoute)
	}
	return out
}

// Selector is the label selector of every model server pod of a deployment.
func Selector(name string) map[string]string {
	return map[string]string{jobs.LabelRun: name, LabelComponent: ComponentServer}
}

// BuildObjects renders a serving recipe for the cluster p describes: pure, no I/O.
func BuildObjects(r *recipe.Recipe, p *profile.Profile, o ObjectOptions) (*Objects, error) {
	s := r.Serving
	if s == nil {
		return nil, fmt.Errorf("recipe %s is kind %s, not Serving: run it with `ain train`", r.Metadata.Name, r.Kind)
	}
	name := o.Name
	if name == "" {
		name = r.Metadata.Name
	}
	// Deployment NAME-N, pods NAME-N-<hash>-<id>: keep room for both.
	if errs := validation.IsDNS1123Label(name); len(errs) > 0 || len(name) > recipe.MaxNameLen {
		return nil, fmt.Errorf("name %q: use at most %d lower-case letters, digits and '-', starting and ending with a letter or digit", name, recipe.MaxNameLen)
	}
	out := &Objects{Name: name}
	meta := func(n string, extra map[string]string) metav1.ObjectMeta {
		l := jobs.Labels(r, name)
		l[LabelComponent] = ComponentServer
		for k, v := range extra {
			l[k] = v
		}
		return metav1.ObjectMeta{Name: n, Namespace: o.Namespace, Labels: l, Annotations: map[string]string{AnnotationModel: s.ServedModelName}}
	}
	switch s.Topology {
	case recipe.TopologyDeployment:
		d, err := deployment(r, p, meta(name, nil), int32(s.Replicas))
		if err != nil {
			return nil, err
		}
		out.Deployments = append(out.Deployments, d)
	default:
		for i := 0; i < s.Replicas; i++ {
			d, err := deployment(r, p, meta(fmt.Sprintf("%s-%d", name, i), map[string]string{LabelReplica: strconv.Itoa(i)}), 1)
			if err != nil {
				return nil, err
			}
			out.Deployments = append(out.Deployments, d)
		}
	}
	svcMeta := meta(name, nil)
	out.Service = &corev1.Service{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Service"},
		ObjectMeta: svcMeta,
		Spec: corev1.ServiceSpec{
			Selector: Selector(name),
			Ports: []corev1.ServicePort{{
				Name: PortName, Port: recipe.DefaultServingPort, TargetPort: intstr.FromString(PortName), Protocol: corev1.ProtocolTCP,
			}},
		},
	}
	if s.Replicas > 1 {
		// A node drain evicts one replica at a time; ain's own rollouts are not evictions and
		// keep their strategy (one replica down at a time too).
		one := intstr.FromInt32(1)
		out.PDB = &policyv1.PodDisruptionBudget{
			TypeMeta:   metav1.TypeMeta{APIVersion: "policy/v1", Kind: "PodDisruptionBudget"},
			ObjectMeta: meta(name, nil),
			Spec: policyv1.PodDisruptionBudgetSpec{
				MaxUnavailable: &one,
				Selector:       &metav1.LabelSelector{MatchLabels: Selector(name)},
			},
		}
	}
	// auto is decided against the cluster by ain serve (Cluster.ChooseEntry), which then
	// passes the resolved spec; here, without one, it is decided as render does.
	entry, _ := s.WithEntry(s.OfflineEntry())
	switch entry.Expose {
	case recipe.ExposeIngress:
		out.Ingress = ingress(entry.Ingress, meta(name, nil), name)
	case recipe.ExposeGateway:
		g := entry.Gateway
		if g.ClassName == "" && g.Name == "" {
			return nil, &NoGatewayError{}
		}
		if g.ClassName != "" {
			out.Gateway = gateway(g, meta(name, nil), name)
		}
		out.HTTPRoute = httpRoute(g, meta(name, nil), name)
	}
	return out, nil
}

// NoGatewayError says a Gateway API entry names neither a GatewayClass nor a Gateway, and no
// cluster was asked for the one accepted GatewayClass.
type NoGatewayError struct{}

func (e *NoGatewayError) Error() string {
	return "spec.gateway names no Gateway: set spec.gateway.className (ain creates a Gateway of that GatewayClass; --gateway-class) or spec.gateway.name (an existing Gateway; --gateway [NAMESPACE/]NAME); ain serve uses the cluster's only accepted GatewayClass when there is one"
}

// Paths the entry (Ingress or HTTPRoute) routes to vLLM. vLLM's API key middleware
// (vllm/entrypoints/serve/middleware/authenticate.py) guards the prefixes /v1, /v2, /inference
// and /cohere (vLLM 0.11's api_server.py guarded /v1 alone); everything else answers without
// the key: /invocations (full inference), /tokenize, /detokenize, /pooling, /score, /metrics,
// /load and the profiler routes. ain's clients use /v1 and /health only, so the entry routes
// the API prefix and the exact health path, nothing else (not the other guarded prefixes
// either: what is not routed cannot be attacked); everything else gets the controller's 404.
const (
	IngressAPIPath    = "/v1"
	IngressHealthPath = "/health"
)

// AnnotationClusterIssuer asks cert-manager's ingress-shim to issue the Ingress's TLS
// certificate from that ClusterIssuer into the Secret the Ingress names.
const AnnotationClusterIssuer = "cert-manager.io/cluster-issuer"

// TLSSecretName is the Secret with the Ingress's certificate: spec.ingress.tlsSecret, else
// the deployment's name (after --name) plus "-tls".
func TLSSecretName(in *recipe.ServingIngress, name string) string {
	return tlsSecretName(in.TLSSecret, name)
}

func tlsSecretName(set, name string) string {
	if set != "" {
		return set
	}
	return name + "-tls"
}

func ingress(in *recipe.ServingIngress, im metav1.ObjectMeta, name string) *networkingv1.Ingress {
	timeout := strconv.Itoa(in.ProxyReadTimeout)
	im.Annotations[nginxProxyBuffering] = "off"
	im.Annotations[nginxProxyRequestBuffering] = "off"
	im.Annotations[nginxProxyReadTimeout] = timeout
	im.Annotations[nginxProxySendTimeout] = timeout
	im.Annotations[nginxProxyBodySize] = "32m"
	if in.ClusterIssuer != "" {
		im.Annotations[AnnotationClusterIssuer] = in.ClusterIssuer
	}
	prefix, exact := networkingv1.PathTypePrefix, networkingv1.PathTypeExact
	backend := networkingv1.IngressBackend{Service: &networkingv1.IngressServiceBackend{
		Name: name, Port: networkingv1.ServiceBackendPort{Name: PortName},
	}}
	class := in.ClassName
	tls := networkingv1.IngressTLS{SecretName: TLSSecretName(in, name)}
	if in.Host != "" {
		tls.Hosts = []string{in.Host}
	}
	return &networkingv1.Ingress{
		TypeMeta:   metav1.TypeMeta{APIVersion: "networking.k8s.io/v1", Kind: "Ingress"},
		ObjectMeta: im,
		Spec: networkingv1.IngressSpec{
			IngressClassName: &class,
			TLS:              []networkingv1.IngressTLS{tls},
			Rules: []networkingv1.IngressRule{{
				Host: in.Host,
				IngressRuleValue: networkingv1.IngressRuleValue{HTTP: &networkingv1.HTTPIngressRuleValue{
					Paths: []networkingv1.HTTPIngressPath{
						{Path: IngressAPIPath, PathType: &prefix, Backend: backend},
						{Path: IngressHealthPath, PathType: &exact, Backend: backend},
					},
				}},
			}},
		},
	}
}

// VLLMArgs is the `vllm serve` command line of a replica. The API key is not on it: vLLM
// reads VLLM_API_KEY from the environment (a secretKeyRef), so it never shows in argv.
func VLLMArgs(s *recipe.ServingSpec) []string {
	args := []string{"vllm", "serve", s.Model,
		"--host", "0.0.0.0",
		"--port", strconv.Itoa(recipe.DefaultServingPort),
		"--served-model-name", s.ServedModelName,
		"--tensor-parallel-size", strconv.Itoa(s.GPUsPerReplica),
		"--gpu-memory-utilization", strconv.FormatFloat(s.GPUMemoryUtilization, 'f', -1, 64),
	}
	if s.GenerationConfig != "" && s.GenerationConfig != "auto" {
		// "auto" is vLLM's default: left off the command line.
		args = append(args, "--generation-config", s.GenerationConfig)
	}
	if s.MaxModelLen > 0 {
		args = append(args, "--max-model-len", strconv.Itoa(s.MaxModelLen))
	}
	if s.DType != "" {
		args = append(args, "--dtype", s.DType)
	}
	if drains(s.Image) {
		args = append(args, "--shutdown-timeout", strconv.Itoa(shutdownTimeoutSeconds))
	}
	return append(args, s.ExtraArgs...)
}

// Draining a replica on each roll. Without --shutdown-timeout vLLM aborts its in-flight
// requests on SIGTERM (the default 0; vllm PR #36666, "Re-add shutdown timeout", merged
// 2026-03-10: with N > 0 it rejects new requests and waits up to N s for running ones). The
// preStop sleep runs first, while the pod is already out of the Service's endpoints, so that
// kube-proxy and the ingress controller stop sending it new requests before vLLM starts
// refusing them. The grace period covers both plus the engine's own exit.
const (
	preStopSeconds         = 10
	shutdownTimeoutSeconds = 90
	terminationGrace       = preStopSeconds + shutdownTimeoutSeconds + 20
	// drainFrom is the first release ain knows to have --shutdown-timeout (an older vLLM
	// refuses an unknown flag and would not start).
	drainFrom = "0.19.0"
)

// drains reports whether image is a vLLM that knows --shutdown-timeout (by its tag's version;
// a tag that tells no version gets no flag, and its in-flight requests are aborted on a roll).
func drains(image string) bool {
	v := CheckImage(image).Version
	return v != "" && compareVersions(v, drainFrom) >= 0
}

func deployment(r *recipe.Recipe, p *profile.Profile, meta metav1.ObjectMeta, replicas int32) (*appsv1.Deployment, error) {
	s := r.Serving
	pod, err := podSpec(s, p, meta.Labels[jobs.LabelRun])
	if err != nil {
		return nil, err
	}
	selector := Selector(meta.Labels[jobs.LabelRun])
	if rep, ok := meta.Labels[LabelReplica]; ok {
		selector[LabelReplica] = rep
	}
	// A model can take long to load; the rollout must not be declared failed before the
	// startup probe gives up.
	deadline := int32(math.Max(1200, s.StartupDuration().Seconds()+600))
	d := &appsv1.Deployment{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
		ObjectMeta: meta,
		Spec: appsv1.DeploymentSpec{
			Replicas:                &replicas,
			Selector:                &metav1.LabelSelector{MatchLabels: selector},
			ProgressDeadlineSeconds: &deadline,
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: meta.Labels, Annotations: map[string]string{AnnotationModel: s.ServedModelName}},
				Spec:       pod,
			},
		},
	}
	if replicas == 1 {
		// One pod holding the GPU: a surge pod would wait for a GPU that is not free.
		d.Spec.Strategy = appsv1.DeploymentStrategy{Type: appsv1.RecreateDeploymentStrategyType}
	} else {
		zero, one := intstr.FromInt32(0), intstr.FromInt32(1)
		d.Spec.Strategy = appsv1.DeploymentStrategy{Type: appsv1.RollingUpdateDeploymentStrategyType,
			RollingUpdate: &appsv1.RollingUpdateDeployment{MaxSurge: &zero, MaxUnavailable: &one}}
	}
	return d, nil
}

func podSpec(s *recipe.ServingSpec, p *profile.Profile, name string) (corev1.PodSpec, error) {
	res, err := servingResources(s, p)
	if err != nil {
		return corev1.PodSpec{}, err
	}
	shm, err := resource.ParseQuantity(s.ShmSize)
	if err != nil {
		return corev1.PodSpec{}, fmt.Errorf("spec.shmSize: %w", err)
	}
	args := VLLMArgs(s)
	probe := func(period, timeout, failures int32) *corev1.Probe {
		return &corev1.Probe{
			ProbeHandler:  corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/health", Port: intstr.FromString(PortName)}},
			PeriodSeconds: period, TimeoutSeconds: timeout, FailureThreshold: failures, SuccessThreshold: 1,
		}
	}
	startupFailures := int32(math.Ceil(s.StartupDuration().Seconds() / probePeriodSeconds))
	c := corev1.Container{
		Name:            ContainerName,
		Image:           s.Image,
		ImagePullPolicy: corev1.PullPolicy(s.ImagePullPolicy),
		Command:         args[:2],
		Args:            args[2:],
		Ports:           []corev1.ContainerPort{{Name: PortName, ContainerPort: recipe.DefaultServingPort, Protocol: corev1.ProtocolTCP}},
		Env:             servingEnv(s),
		Resources:       res,
		// /health answers once the engine runs; the startup probe allows for loading the weights,
		// then liveness and readiness use timeouts a busy server meets (the kubelet's default
		// 1 s marks a loaded replica NotReady).
		StartupProbe: probe(probePeriodSeconds, 5, startupFailures),
		// Six misses (a minute): a saturated engine can answer /health late, and a liveness
		// kill aborts every stream in flight (llm-d-benchmark and others raised theirs for this).
		LivenessProbe:  probe(10, 10, 6),
		ReadinessProbe: probe(5, 5, 3),
		Lifecycle: &corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{
			Exec: &corev1.ExecAction{Command: []string{"sleep", strconv.Itoa(preStopSeconds)}},
		}},
		// No privilege escalation and no capabilities: vLLM needs none to use the GPUs the
		// device plugin hands it. The official image runs as root (docker/Dockerfile has no
		// USER), so runAsNonRoot would make the kubelet refuse to start it; root without
		// capabilities cannot override file permissions (CAP_DAC_OVERRIDE) either.
		SecurityContext: &corev1.SecurityContext{
			AllowPrivilegeEscalation: ptrTo(false),
			Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
		},
		VolumeMounts: []corev1.VolumeMount{
			{Name: jobs.ShmVolume, MountPath: "/dev/shm"},
			{Name: HomeVolume, MountPath: homeDir},
		},
	}
	vols := []corev1.Volume{
		{Name: jobs.ShmVolume, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{Medium: corev1.StorageMediumMemory, SizeLimit: &shm}}},
		{Name: HomeVolume, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
	}
	for _, v := range s.Volumes {
		vols = append(vols, corev1.Volume{Name: v.Name, VolumeSource: corev1.VolumeSource{
			PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: v.ClaimName, ReadOnly: v.ReadOnly},
		}})
		c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: v.Name, MountPath: v.MountPath, SubPath: v.SubPath, ReadOnly: v.ReadOnly})
	}
	var tols []corev1.Toleration
	for _, t := range p.Spec.Tolerations {
		tols = append(tols, corev1.Toleration{Key: t.Key, Operator: corev1.TolerationOperator(t.Operator), Value: t.Value, Effect: corev1.TaintEffect(t.Effect)})
	}
	var sel map[string]string
	if len(p.Spec.NodeSelector) > 0 {
		sel = map[string]string{}
		for k, v := range p.Spec.NodeSelector {
			sel[k] = v
		}
	}
	grace := int64(terminationGrace)
	pod := corev1.PodSpec{
		Containers:                    []corev1.Container{c},
		Volumes:                       vols,
		NodeSelector:                  sel,
		Tolerations:                   tols,
		TerminationGracePeriodSeconds: &grace,
		// vLLM never calls the Kubernetes API: a mounted token would only serve an attacker.
		AutomountServiceAccountToken: ptrTo(false),
		SecurityContext: &corev1.PodSecurityContext{
			SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
		},
	}
	if err := image.RequireArches(&pod, s.Architectures); err != nil {
		return pod, err
	}
	if s.Replicas > 1 {
		// Replicas on different nodes, when the scheduler can: one node lost takes one replica.
		// ScheduleAnyway, not DoNotSchedule: free GPUs are scarce, and a replica that could run
		// beside another (one 8-GPU node) must not stay Pending for the sake of spreading.
		pod.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{{
			MaxSkew: 1, TopologyKey: corev1.LabelHostname, WhenUnsatisfiable: corev1.ScheduleAnyway,
			LabelSelector: &metav1.LabelSelector{MatchLabels: Selector(name)},
		}}
	}
	return pod, nil
}

func ptrTo[T any](v T) *T { return &v }

// CompileCacheDir is where vLLM keeps its torch.compile / inductor cache: VLLM_CACHE_ROOT
// (vllm/envs.py; default ~/.cache/vllm, which here is the pod's emptyDir HOME, rebuilt on every
// restart) on the first writable model volume, shared by the replicas; "" without one.
func CompileCacheDir(s *recipe.ServingSpec) string {
	for _, v := range s.Volumes {
		if !v.ReadOnly && v.MountPath != "" {
			return path.Join(v.MountPath, "vllm-cache")
		}
	}
	return ""
}

// servingEnv: the Hugging Face cache and vLLM's compile cache on the model volume, HOME on a writable emptyDir (the
// image may run as non-root), secrets by reference only, then the recipe's env, sorted.
func servingEnv(s *recipe.ServingSpec) []corev1.EnvVar {
	env := []corev1.EnvVar{{Name: "HOME", Value: homeDir}}
	if s.HFHome != "" {
		env = append(env,
			corev1.EnvVar{Name: "HF_HOME", Value: s.HFHome},
			corev1.EnvVar{Name: "HF_HUB_CACHE", Value: path.Join(s.HFHome, "hub")})
	}
	if dir := CompileCacheDir(s); dir != "" && s.Env["VLLM_CACHE_ROOT"] == "" {
		env = append(env, corev1.EnvVar{Name: "VLLM_CACHE_ROOT", Value: dir})
	}
	secret := func(name string, ref *recipe.SecretRef) corev1.EnvVar {
		return corev1.EnvVar{Name: name, ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
			LocalObjectReference: corev1.LocalObjectReference{Name: ref.Name}, Key: ref.Key,
		}}}
	}
	if s.APIKeySecret != nil {
		env = append(env, secret("VLLM_API_KEY", s.APIKeySecret))
	}
	if s.HFTokenSecret != nil {
		env = append(env, secret("HF_TOKEN", s.HFTokenSecret))
	}
	keys := make([]string, 0, len(s.Env))
	for k := range s.Env {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		env = append(env, corev1.EnvVar{Name: k, Value: s.Env[k]})
	}
	sort.SliceStable(env, func(i, j int) bool { return env[i].Name < env[j].Name })
	return env
}

// servingResources: GPUs as request = limit, CPU and memory as requests, and a memory limit of
// the request plus shmSize: a memory-backed emptyDir's pages are charged to the container's
// memory cgroup (Kubernetes docs, "emptyDir ... medium: Memory ... counts against the
// container's memory limit"), so the limit must leave room for a full /dev/shm.
func servingResources(s *recipe.ServingSpec, p *profile.Profile) (corev1.ResourceRequirements, error) {
	gpu := *resource.NewQuantity(int64(s.GPUsPerReplica), resource.DecimalSI)
	req := corev1.ResourceList{corev1.ResourceName(p.Spec.GPUResource): gpu}
	lim := corev1.ResourceList{corev1.ResourceName(p.Spec.GPUResource): gpu}
	cpuMem, err := s.Resources.Requests("spec.resources")
	if err != nil {
		return corev1.ResourceRequirements{}, err
	}
	maps.Copy(req, cpuMem)
	if q, ok := cpuMem[corev1.ResourceMemory]; ok {
		limit := q.DeepCopy()
		if shm, err := resource.ParseQuantity(s.ShmSize); err == nil {
			limit.Add(shm)
		}
		lim[corev1.ResourceMemory] = limit
	}
	return corev1.ResourceRequirements{Requests: req, Limits: lim}, nil
}

// CredentialSecret is a Secret `ain serve` creates for a credential (--api-key-from-env,
// --hf-token-file ...). Its data is the credential: never print it (dry-run output leaves it
// out).
func CredentialSecret(name, namespace, key string, value []byte, labels map[string]string) *corev1.Secret {
	return &corev1.Secret{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace, Labels: labels},
		Type:       corev1.SecretTypeOpaque,
		Data:       map[string][]byte{key: value},
	}
}
