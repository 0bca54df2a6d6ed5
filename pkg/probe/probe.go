// Package probe runs probe pods: short-lived pods, each running one shell script on a node (or
// anywhere) with a small image, whose result is read back from the pod's termination message or
// its log. A run's pods are followed with one label-selected watch, bounded by a timeout, and
// always deleted, also when the caller's context is cancelled (Ctrl-C): nothing is left behind.
// Preflight's checks, the RDMA bench, profile detection and doctor build on it.
package probe

import (
	"crypto/rand"
	"encoding/hex"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/ain-hpc/ain/pkg/profile"
)

// Labels on probe pods: LabelProbe says which probe, LabelProbeRun groups one run's pods (one
// watch, one DeleteCollection), LabelProbeShard splits a large run for its cleanup. The
// sandbox's agent matches on LabelProbeRun and LabelPairRole.
const (
	LabelProbe      = "ain.dev/probe"
	LabelProbeRun   = "ain.dev/probe-run"
	LabelProbeShard = "ain.dev/probe-shard"
	AnnotationFor   = "ain.dev/probe-node"
	// LabelManaged marks what ain made.
	LabelManaged = "app.kubernetes.io/managed-by"
	// Container is the probe container's name.
	Container = "probe"
	parallel  = 16
)

// DefaultImage runs the probe pods (sh and grep are all most probes need).
const DefaultImage = "busybox:1.36"

// DefaultTimeout bounds a run when Options.Timeout is not set.
const DefaultTimeout = 2 * time.Minute

// Options say where and how probe pods run.
type Options struct {
	Kube kubernetes.Interface
	// FanOut, when set, creates the per-node probe pods: Kube's identity with a client-side rate
	// limit fit for one request per node; nil: Kube.
	FanOut    kubernetes.Interface
	Namespace string
	// Image runs the pods (default DefaultImage), pulled with PullPolicy (default IfNotPresent).
	Image      string
	PullPolicy corev1.PullPolicy
	// Timeout bounds a run (and each pod's activeDeadlineSeconds); default DefaultTimeout.
	Timeout time.Duration
	// RDMA is what a pod of a Spec with RDMA set requests: the fabric's device resource and its
	// Multus networks. Empty Resource: nothing.
	RDMA RDMA
	// GPUResource is the GPUs' extended resource (nvidia.com/gpu), for the pods that ask for GPUs.
	GPUResource string
	// Progress, when set, receives one line per step of a long wait.
	Progress func(string)
}

// RDMA is the RDMA device resource a probe pod requests and the Multus networks it joins.
type RDMA struct {
	Resource string
	Count    resource.Quantity
	Networks []string
}

// ForProfile fills the RDMA request and the GPU resource from p.
func (o Options) ForProfile(p *profile.Profile) Options {
	if p == nil {
		return o
	}
	o.GPUResource = p.Spec.GPUResource
	o.RDMA = RDMA{}
	if p.RDMA() {
		o.RDMA = RDMA{Resource: p.Spec.RDMA.Resource, Count: p.RDMAQuantity(), Networks: p.Spec.Networks}
	}
	return o
}

// Defaults returns o with the defaults filled in.
func (o Options) Defaults() Options {
	if o.Image == "" {
		o.Image = DefaultImage
	}
	if o.PullPolicy == "" {
		o.PullPolicy = corev1.PullIfNotPresent
	}
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	if o.Progress == nil {
		o.Progress = func(string) {}
	}
	return o
}

// NewRun names a run: its pods carry it in LabelProbeRun.
func NewRun() string {
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// Spec is one probe pod.
type Spec struct {
	// Kind is the LabelProbe value; Name the pod's name.
	Kind, Name string
	// Node pins the pod to a node (tolerating its taints); "": anywhere.
	Node string
	// Script is the shell command the container runs once.
	Script string
	Env    []corev1.EnvVar
	// RDMA requests o.RDMA (the devices, ports and GIDs a rank would see).
	RDMA bool
	// ResultMessage makes the script report through its termination message too (termmsg.go).
	ResultMessage bool
}

// Pod is the pod of s in run: restricted (Pod Security), small, never restarted, gone after
// o.Timeout at the latest.
func Pod(o Options, run string, s Spec) *corev1.Pod {
	o = o.Defaults()
	zero := int64(0)
	deadline := int64(o.Timeout / time.Second)
	res := corev1.ResourceRequirements{
		Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("10m"), corev1.ResourceMemory: resource.MustParse("16Mi")},
		Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("64Mi")},
	}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: s.Name, Namespace: o.Namespace,
			Labels:      map[string]string{LabelManaged: "ain", LabelProbe: s.Kind, LabelProbeRun: run},
			Annotations: map[string]string{},
		},
		Spec: corev1.PodSpec{
			RestartPolicy:                 corev1.RestartPolicyNever,
			ActiveDeadlineSeconds:         &deadline,
			TerminationGracePeriodSeconds: &zero,
			AutomountServiceAccountToken:  new(bool),
			Containers: []corev1.Container{{
				Name: Container, Image: o.Image, ImagePullPolicy: o.PullPolicy,
				Command: []string{"/bin/sh", "-c", s.Script}, Env: s.Env, Resources: res,
			}},
		},
	}
	Restricted(pod)
	if s.Node != "" {
		// Pinned: it must run on this node, whatever its taints say (a probe is read-only).
		pod.Spec.NodeName = s.Node
		pod.Spec.Tolerations = []corev1.Toleration{{Operator: corev1.TolerationOpExists}}
		pod.Annotations[AnnotationFor] = s.Node
	}
	if s.RDMA && o.RDMA.Resource != "" {
		// Request the RDMA resource (and join the Multus networks) so the pod sees exactly the
		// devices, ports and GIDs a rank would see.
		c := &pod.Spec.Containers[0]
		c.Resources.Requests[corev1.ResourceName(o.RDMA.Resource)] = o.RDMA.Count
		c.Resources.Limits[corev1.ResourceName(o.RDMA.Resource)] = o.RDMA.Count
		if len(o.RDMA.Networks) > 0 {
			pod.Annotations["k8s.v1.cni.cncf.io/networks"] = strings.Join(o.RDMA.Networks, ",")
		}
	}
	if s.ResultMessage {
		withResultMessage(pod)
	}
	return pod
}

// Restricted makes a probe pod pass the restricted Pod Security standard: it only reads sysfs or
// resolves names, as nobody, with no capability, no privilege escalation and the runtime's
// default seccomp profile. (The RDMA resource it requests is not a PSA matter.)
func Restricted(pod *corev1.Pod) {
	yes, no, nobody := true, false, int64(65534)
	pod.Spec.SecurityContext = &corev1.PodSecurityContext{
		RunAsNonRoot: &yes, RunAsUser: &nobody, RunAsGroup: &nobody,
		SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
	}
	for i := range pod.Spec.Containers {
		pod.Spec.Containers[i].SecurityContext = &corev1.SecurityContext{
			AllowPrivilegeEscalation: &no,
			Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
		}
	}
}
