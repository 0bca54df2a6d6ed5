// Package preflight checks that a cluster is ready for ain's jobs before anything is submitted:
// the API answers and the user may do what ain does (SelfSubjectAccessReview), the
// training-operator's CRDs are served and its controller runs (leader Lease, Deployment,
// admission webhook answering a dry run), enough nodes have the profile's GPU and RDMA resources,
// the Multus networks exist, every candidate node's IB/RoCE ports are ACTIVE (a short-lived
// probe pod per node dumps sysfs, read with package ibport), and a running job's headless
// Services resolve inside the cluster. Every check is PASS, WARN or FAIL with its evidence and a
// fix.
//
// The API cost does not grow with the node count except where it must: nodes are listed once
// (paged), probe pods are watched with one label-selected watch and removed with one
// DeleteCollection, and a probe's result comes back in its container's termination message, in
// the pod status that watch delivers (pkg/probe); only the creates are per node, and the log
// reads of results too large for a termination message.
package preflight

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/ain-hpc/ain/pkg/next"
	"github.com/ain-hpc/ain/pkg/probe"

	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/ain-hpc/ain/pkg/claims"
	"github.com/ain-hpc/ain/pkg/jobs"
	"github.com/ain-hpc/ain/pkg/profile"
	"github.com/ain-hpc/ain/pkg/recipe"
)

// Status is a check's outcome.
type Status string

// Statuses, in increasing severity.
const (
	Pass Status = "PASS"
	Warn Status = "WARN"
	Fail Status = "FAIL"
)

// Check names.
const (
	CheckAPI       = "api"
	CheckRBAC      = "rbac"
	CheckCRDs      = "crds"
	CheckNodes     = "nodes"
	CheckNetworks  = "networks"
	CheckIBPorts   = "ib-ports"
	CheckDNS       = "dns"
	maxEvidence    = 12
	defaultTimeout = probe.DefaultTimeout
)

// Check is one result row. The JSON names are a stable interface.
type Check struct {
	Name     string   `json:"name"`
	Target   string   `json:"target,omitempty"` // a node, a network, a job; empty for the cluster
	Status   Status   `json:"status"`
	Message  string   `json:"message"`
	Evidence []string `json:"evidence,omitempty"`
	Fix      string   `json:"fix,omitempty"`
	// Next are the ain commands the fix suggests running.
	Next []next.Command `json:"next,omitempty"`
	// Read is the read throughput of the model's weight files, on a model check run with
	// Storage.ReadBytes.
	Read *ModelRead `json:"read,omitempty"`
}

// Kind is the "kind" of a saved preflight result (--save-result, -o json), named as ain's bench
// results name theirs (ain.dev/VERSION/NAME): a reader refuses a version newer than it knows.
const Kind = "ain.dev/v1alpha1/PreflightResult"

// Result is a whole preflight run.
type Result struct {
	Kind      string        `json:"kind"`
	Cluster   string        `json:"cluster"`
	Namespace string        `json:"namespace"`
	Profile   string        `json:"profile"`
	Fabric    string        `json:"fabric"`
	StartedAt time.Time     `json:"startedAt"`
	Duration  time.Duration `json:"durationNs"`
	// Cached is set when the result was read from the cache instead of being run.
	Cached bool    `json:"cached,omitempty"`
	Checks []Check `json:"checks"`
	// Probed lists the nodes an IB port probe ran on.
	Probed int `json:"probedNodes"`
}

// Counts returns how many checks have each status.
func (r *Result) Counts() (pass, warn, fail int) {
	for _, c := range r.Checks {
		switch c.Status {
		case Pass:
			pass++
		case Warn:
			warn++
		case Fail:
			fail++
		}
	}
	return
}

// Failed reports whether any check failed.
func (r *Result) Failed() bool {
	_, _, f := r.Counts()
	return f > 0
}

// Summary is one line for people: "7 PASS, 1 WARN, 1 FAIL (ib-ports gpu-node-2)".
func (r *Result) Summary() string {
	p, w, f := r.Counts()
	s := fmt.Sprintf("%d PASS, %d WARN, %d FAIL", p, w, f)
	var failed []string
	for _, c := range r.Checks {
		if c.Status == Fail {
			failed = append(failed, strings.TrimSpace(c.Name+" "+c.Target))
		}
	}
	if len(failed) > 0 {
		if len(failed) > 5 {
			failed = append(failed[:5], fmt.Sprintf("and %d more", len(failed)-5))
		}
		s += " (" + strings.Join(failed, ", ") + ")"
	}
	return s
}

// Options say what to check and with which clients.
type Options struct {
	Kube kubernetes.Interface
	// FanOut, when set, creates the per-node probe pods: Kube's identity with a client-side rate
	// limit fit for one request per node (kube.Clients.FanOut); nil: Kube.
	FanOut    kubernetes.Interface
	Dynamic   dynamic.Interface
	Namespace string
	Cluster   string // for the result and the cache key (the API server URL)
	// User identifies the credentials (kube.Identity, a hash) for the cache key only: what an
	// administrator may list or create says nothing about a student's rights (issue 19: a student
	// was shown an admin's "6 PASS (cached)", then got forbidden).
	User    string
	Profile *profile.Profile
	// Nodes and GPUsPerNode are the recipe's shape (0: no recipe, one suitable node is enough).
	Nodes       int
	GPUsPerNode int
	// Volumes are the recipe's PersistentVolumeClaims (spec.volumes).
	Volumes []claims.Use
	// Storage is what the model check probes on those volumes (the model, dataset and output
	// paths); empty: no probe.
	Storage Storage
	// Tools are what the image check looks for in the recipe's image (recipe.Tools), pulled
	// with ImagePullPolicy (the recipe's; "" the default); no image: no check.
	Tools           recipe.Tools
	ImagePullPolicy string
	// Arches are the recipe image's architectures (spec.architectures, kubernetes.io/arch
	// values); a node of another architecture cannot run a rank. Empty: any.
	Arches []string
	// NodeSelector (a label selector, --nodes) narrows the candidate nodes, on top of the
	// profile's nodeSelector.
	NodeSelector string
	// Job, when set, is a running job whose headless Services the DNS check resolves; empty:
	// every running ain PyTorchJob in the namespace.
	Job string
	// ProbeImage runs the probe pods (any image with sh and grep; default busybox).
	ProbeImage string
	// ProbeTimeout bounds the probes (default 2m).
	ProbeTimeout time.Duration
	// SkipProbes leaves out the probe pods (IB ports, DNS).
	SkipProbes bool
	// Progress, when set, receives one line per step.
	Progress func(string)
	Now      func() time.Time
	// Workload is the recipe's (torch, MPI; "" with no recipe: both) and API the job API forced
	// by --api or the profile ("" or auto: the best the cluster serves); the CRD and permission
	// checks are about the API ain will use.
	Workload jobs.Workload
	API      jobs.API

	// served is what discovery found (Run fills it), discoverErr why it could not.
	served      jobs.Served
	discoverErr error
}

// DefaultProbeImage is the probe pods' image.
const DefaultProbeImage = probe.DefaultImage

func (o *Options) defaults() {
	if o.ProbeImage == "" {
		o.ProbeImage = DefaultProbeImage
	}
	if o.ProbeTimeout <= 0 {
		o.ProbeTimeout = defaultTimeout
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Profile == nil {
		o.Profile = profile.Default()
	}
	if o.Progress == nil {
		o.Progress = func(string) {}
	}
}

// Run runs every check. It returns an error only when the API server cannot be reached or
// refuses the credentials (the caller maps that to an exit code); every other problem is a
// check in the result.
func Run(ctx context.Context, o Options) (*Result, error) {
	o.defaults()
	start := o.Now()
	res := &Result{Kind: Kind, Cluster: o.Cluster, Namespace: o.Namespace, Profile: profileName(o.Profile), Fabric: o.Profile.Spec.Fabric, StartedAt: start}
	api, err := checkAPI(ctx, o)
	if err != nil {
		return nil, err
	}
	res.Checks = append(res.Checks, api)
	o.served, o.discoverErr = jobs.Discover(o.Kube.Discovery())
	o.Progress("checking permissions (SelfSubjectAccessReview)")
	res.Checks = append(res.Checks, checkRBAC(ctx, o)...)
	res.Checks = append(res.Checks, checkCRDs(ctx, o))
	o.Progress("checking that the job controllers run")
	res.Checks = append(res.Checks, checkOperators(ctx, o)...)
	o.Progress("listing nodes")
	nodeChecks, candidates, gpuShort := checkNodesGPUShort(ctx, o)
	res.Checks = append(res.Checks, nodeChecks...)
	o.Progress("checking the GPU Operator's device plugin, driver and dcgm-exporter")
	res.Checks = append(res.Checks, checkGPUOperator(ctx, o, candidates, gpuShort)...)
	vols := checkVolumes(ctx, o)
	res.Checks = append(res.Checks, vols...)
	if !o.SkipProbes {
		res.Checks = append(res.Checks, checkModel(ctx, o, candidates, vols)...)
		res.Checks = append(res.Checks, checkImage(ctx, o, candidates)...)
	}
	res.Checks = append(res.Checks, checkNetworks(ctx, o)...)
	res.Checks = append(res.Checks, checkPodSecurity(ctx, o)...)
	if !o.SkipProbes {
		if o.usesFabric() && len(candidates) > 0 {
			o.Progress(fmt.Sprintf("probing IB ports on %d node(s)", len(candidates)))
			ib := probeIBPorts(ctx, o, candidates)
			res.Probed = len(candidates)
			res.Checks = append(res.Checks, ib...)
		}
		res.Checks = append(res.Checks, checkDNS(ctx, o)...)
	}
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	res.Duration = o.Now().Sub(start)
	return res, nil
}

// usesFabric reports whether the checked workload uses the RDMA fabric: an RDMA profile and a
// recipe of more than one pod (or no recipe). A one-pod job holds no RDMA device (pkg/jobs).
func (o *Options) usesFabric() bool { return o.Profile.RDMA() && o.Nodes != 1 }

func profileName(p *profile.Profile) string {
	if p.Source != "" {
		return p.Source
	}
	return "built-in " + p.Metadata.Name
}

// limit keeps at most maxEvidence lines, saying how many were left out.
func limit(lines []string) []string {
	if len(lines) <= maxEvidence {
		return lines
	}
	out := append([]string(nil), lines[:maxEvidence]...)
	return append(out, fmt.Sprintf("... and %d more", len(lines)-maxEvidence))
}
