package preflight

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"

	authv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/ain-hpc/ain/pkg/jobs"
	"github.com/ain-hpc/ain/pkg/probe"
	"github.com/ain-hpc/ain/pkg/profile"
)

// NADResource is Multus' NetworkAttachmentDefinition.
var NADResource = schema.GroupVersionResource{Group: "k8s.cni.cncf.io", Version: "v1", Resource: "network-attachment-definitions"}

// nodePageSize bounds one node list page: 200 nodes are one call, 5000 are ten.
const nodePageSize = 500

func checkAPI(ctx context.Context, o Options) (Check, error) {
	v, err := o.Kube.Discovery().ServerVersion()
	if err != nil {
		return Check{}, fmt.Errorf("reading the API server version: %w", err)
	}
	return Check{Name: CheckAPI, Status: Pass, Message: "the API server answers (Kubernetes " + v.GitVersion + ")"}, nil
}

// access is one thing ain does, asked with a SelfSubjectAccessReview.
type access struct {
	verb, group, resource, sub string
	cluster                    bool // cluster-scoped
	optional                   bool // denied is WARN, not FAIL
	why                        string
}

// accesses lists what ain's commands do (train, status, logs, delete, preflight) on the job
// APIs they will use (jobAPIs).
func accesses(o Options) []access {
	var out []access
	for _, api := range jobAPIs(o) {
		for _, r := range jobResources[api] {
			for _, v := range []string{"create", "get", "list", "watch", "patch", "delete"} {
				out = append(out, access{verb: v, group: r.Group, resource: r.Resource, why: "ain train/status/delete (" + string(api) + ")"})
			}
		}
	}
	for _, v := range []string{"get", "list", "watch", "create", "delete"} {
		out = append(out, access{verb: v, group: "", resource: "pods", why: "watching ranks, probe pods"})
	}
	out = append(out,
		access{verb: "get", resource: "pods", sub: "log", why: "reading ranks' logs"},
		access{verb: "list", resource: "services", why: "DNS check of a running job", optional: true},
		access{verb: "list", resource: "events", why: "explaining Pending pods", optional: true},
		access{verb: "list", resource: "nodes", cluster: true, why: "node resources, explaining Pending pods", optional: true},
	)
	return out
}

// jobResources are the resources ain creates per job API (a TrainJob comes with its runtime).
var jobResources = map[jobs.API][]schema.GroupVersionResource{
	jobs.APITrainingOperator: {jobs.PyTorchJobGVR, jobs.MPIJobGVR},
	jobs.APIMPIOperator:      {jobs.MPIJobV2GVR},
	jobs.APITrainer:          {jobs.TrainJobGVR, jobs.TrainingRuntimeGVR},
}

// jobAPIs are the job APIs ain will use here: the one chosen for the recipe's workload, or, with
// no recipe, every one chosen for a workload (torch, MPI). Unchosen (nothing served): the defaults.
func jobAPIs(o Options) []jobs.API { return chosenAPIs(o, true) }

// chosenAPIs are the APIs chosen per workload from what the cluster serves; withDefaults
// also chooses, for a workload nothing served runs, what ain would use by default.
func chosenAPIs(o Options, withDefaults bool) []jobs.API {
	workloads := []jobs.Workload{jobs.WorkloadTorch, jobs.WorkloadMPI}
	if o.Workload != "" {
		workloads = []jobs.Workload{o.Workload}
	}
	var out []jobs.API
	seen := map[jobs.API]bool{}
	for _, w := range workloads {
		api, err := jobs.ChooseAPI(w, o.served, o.API)
		if err != nil && withDefaults {
			api, err = jobs.ChooseAPI(w, jobs.Served{}, o.API)
		}
		if err == nil && !seen[api] {
			seen[api] = true
			out = append(out, api)
		}
	}
	return out
}

func (a access) String() string {
	r := a.resource
	if a.group != "" {
		r += "." + a.group
	}
	if a.sub != "" {
		r += "/" + a.sub
	}
	return a.verb + " " + r
}

func checkRBAC(ctx context.Context, o Options) []Check {
	acc := accesses(o)
	denied := make([]string, len(acc))
	errs := make([]error, len(acc))
	probe.EachBounded(len(acc), 8, func(i int) {
		a := acc[i]
		ra := &authv1.ResourceAttributes{Verb: a.verb, Group: a.group, Resource: a.resource, Subresource: a.sub}
		if !a.cluster {
			ra.Namespace = o.Namespace
		}
		r, err := o.Kube.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, &authv1.SelfSubjectAccessReview{
			Spec: authv1.SelfSubjectAccessReviewSpec{ResourceAttributes: ra},
		}, metav1.CreateOptions{})
		if err != nil {
			errs[i] = err
			return
		}
		if !r.Status.Allowed {
			denied[i] = r.Status.Reason
			if denied[i] == "" {
				denied[i] = "denied"
			}
		}
	})
	var must, may []string
	for i, a := range acc {
		where := " in namespace " + o.Namespace
		if a.cluster {
			where = " (cluster-wide)"
		}
		switch {
		case errs[i] != nil:
			must = append(must, fmt.Sprintf("%s%s: could not ask: %v", a, where, errs[i]))
		case denied[i] != "" && a.optional:
			may = append(may, fmt.Sprintf("cannot %s%s (%s)", a, where, a.why))
		case denied[i] != "":
			must = append(must, fmt.Sprintf("cannot %s%s (%s)", a, where, a.why))
		}
	}
	fix := "ask your cluster admin for a Role/RoleBinding in namespace " + o.Namespace +
		" granting these verbs (check one with `kubectl auth can-i create mpijobs.kubeflow.org -n " + o.Namespace + "`)"
	var out []Check
	switch {
	case len(must) > 0:
		out = append(out, Check{Name: CheckRBAC, Status: Fail, Message: fmt.Sprintf("%d of %d permission(s) ain needs are denied", len(must), len(acc)), Evidence: limit(must), Fix: fix})
	default:
		out = append(out, Check{Name: CheckRBAC, Status: Pass, Message: fmt.Sprintf("%d permission(s) checked with SelfSubjectAccessReview: allowed", len(acc)-len(may))})
	}
	if len(may) > 0 {
		out = append(out, Check{Name: CheckRBAC, Target: "optional", Status: Warn, Message: fmt.Sprintf("%d optional permission(s) denied: some explanations will be missing", len(may)), Evidence: may, Fix: fix})
	}
	return out
}

// checkCRDs says, per workload (the recipe's, or torch and MPI), which job API ain will submit
// and that the cluster serves it. A cluster serving none FAILs naming what to install, never
// an install that would replace a CRD the cluster uses (mpijobs.kubeflow.org is either the
// training-operator's v1 or the mpi-operator's v2beta1); a forced API (--api, the profile's
// spec.jobAPI) the cluster does not serve FAILs with the reason.
func checkCRDs(_ context.Context, o Options) Check {
	if o.discoverErr != nil {
		return Check{Name: CheckCRDs, Status: Fail, Message: "could not ask the API server which job APIs it serves: " + o.discoverErr.Error(),
			Fix: "kubectl api-resources | grep -e kubeflow.org -e trainer.kubeflow.org"}
	}
	ev := o.served.Evidence()
	workloads := []jobs.Workload{jobs.WorkloadTorch, jobs.WorkloadMPI}
	if o.Workload != "" {
		workloads = []jobs.Workload{o.Workload}
	}
	var uses, fails, fixes []string
	for _, w := range workloads {
		api, err := jobs.ChooseAPI(w, o.served, o.API)
		var na *jobs.NoAPIError
		var ns *jobs.NotServedError
		switch {
		case err == nil:
			uses = append(uses, fmt.Sprintf("%s recipes run as %s", w, api.Describe()))
		case errors.As(err, &na):
			fails, fixes = append(fails, err.Error()), append(fixes, na.Fix())
		case errors.As(err, &ns):
			fails, fixes = append(fails, err.Error()), append(fixes, ns.Fix())
		default:
			fails = append(fails, err.Error())
		}
	}
	if len(fails) > 0 {
		return Check{Name: CheckCRDs, Status: Fail, Message: strings.Join(fails, "; "), Evidence: ev, Fix: strings.Join(fixes, "; ")}
	}
	return Check{Name: CheckCRDs, Status: Pass, Message: strings.Join(uses, "; "), Evidence: ev}
}

// nodeSelector combines the profile's nodeSelector with --nodes.
func nodeSelector(o Options) (string, error) {
	var parts []string
	if len(o.Profile.Spec.NodeSelector) > 0 {
		parts = append(parts, labels.SelectorFromSet(o.Profile.Spec.NodeSelector).String())
	}
	if s := strings.TrimSpace(o.NodeSelector); s != "" {
		if _, err := labels.Parse(s); err != nil {
			return "", fmt.Errorf("--nodes %q: %w", s, err)
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, ","), nil
}

// listNodes lists the nodes matching sel, a page of nodePageSize at a time.
func listNodes(ctx context.Context, o Options, sel string) ([]corev1.Node, error) {
	var out []corev1.Node
	cont := ""
	for {
		l, err := o.Kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: sel, Limit: nodePageSize, Continue: cont})
		if err != nil {
			return nil, err
		}
		out = append(out, l.Items...)
		if l.Continue == "" {
			return out, nil
		}
		cont = l.Continue
	}
}

// checkNodes finds the nodes a rank can run on and says whether they are enough.
func checkNodes(ctx context.Context, o Options) ([]Check, []corev1.Node) {
	checks, cands, _ := checkNodesGPUShort(ctx, o)
	return checks, cands
}

// checkNodesGPUShort is checkNodes that also returns the nodes left out only for too few
// allocatable GPUs, for the GPU Operator check to say why (one node list for both).
func checkNodesGPUShort(ctx context.Context, o Options) ([]Check, []corev1.Node, []corev1.Node) {
	p := o.Profile
	sel, err := nodeSelector(o)
	if err != nil {
		return []Check{{Name: CheckNodes, Status: Fail, Message: err.Error(), Fix: "use a label selector such as nvidia.com/gpu.present=true or pool=a100"}}, nil, nil
	}
	nodes, err := listNodes(ctx, o, sel)
	if err != nil {
		if apierrors.IsForbidden(err) {
			return []Check{{Name: CheckNodes, Status: Warn, Message: "cannot list nodes: GPU/RDMA allocatable and IB ports not checked", Evidence: []string{err.Error()}, Fix: "ask for a ClusterRole with list on nodes"}}, nil, nil
		}
		return []Check{{Name: CheckNodes, Status: Fail, Message: "listing nodes: " + err.Error()}}, nil, nil
	}
	where := "in the cluster"
	if sel != "" {
		where = "matching " + sel
	}
	if len(nodes) == 0 {
		return []Check{{Name: CheckNodes, Status: Fail, Message: "no node " + where, Fix: "check the selector (--nodes, the profile's nodeSelector) against kubectl get nodes --show-labels"}}, nil, nil
	}
	gpuNeed := int64(max(o.GPUsPerNode, 1))
	if o.Nodes > 0 {
		gpuNeed = int64(o.GPUsPerNode) // a recipe's shape: 0 GPUs is a CPU job (qlora-merge)
	}
	fabric := o.usesFabric()
	gpuRes := corev1.ResourceName(p.Spec.GPUResource)
	rdmaRes := corev1.ResourceName(p.Spec.RDMA.Resource)
	rdmaNeed := int64(p.Spec.RDMA.Count)
	tol := tolerations(p)
	var cands, short []corev1.Node
	problems := map[string][]string{} // kind -> evidence
	for _, n := range nodes {
		var why []string
		kinds := map[string]bool{}
		if !nodeReady(&n) {
			why, kinds["notready"] = append(why, "not Ready"), true
		}
		if n.Spec.Unschedulable {
			why, kinds["cordoned"] = append(why, "cordoned (unschedulable)"), true
		}
		if t := untolerated(n.Spec.Taints, tol); t != "" {
			why, kinds["taint"] = append(why, "taint "+t+" not tolerated by the profile"), true
		}
		if a := n.Labels[corev1.LabelArchStable]; len(o.Arches) > 0 && !slices.Contains(o.Arches, a) {
			why, kinds["arch"] = append(why, fmt.Sprintf("%s=%s (the image is built for %s)", corev1.LabelArchStable, a, strings.Join(o.Arches, ","))), true
		}
		if g := alloc(&n, gpuRes); g < gpuNeed {
			why, kinds["gpu"] = append(why, fmt.Sprintf("%s allocatable %d (needs %d)", gpuRes, g, gpuNeed)), true
		}
		if fabric {
			if r := alloc(&n, rdmaRes); r < rdmaNeed {
				why, kinds["rdma"] = append(why, fmt.Sprintf("%s allocatable %d (needs %d)", rdmaRes, r, rdmaNeed)), true
			}
		}
		if len(why) == 0 {
			cands = append(cands, n)
			continue
		}
		if len(kinds) == 1 && kinds["gpu"] {
			short = append(short, n)
		}
		for k := range kinds {
			problems[k] = append(problems[k], n.Name+": "+strings.Join(why, ", "))
		}
	}
	need := max(o.Nodes, 1)
	what := fmt.Sprintf("%d %s", gpuNeed, gpuRes)
	if fabric {
		what += fmt.Sprintf(" and %d %s", rdmaNeed, rdmaRes)
	}
	var out []Check
	if len(cands) >= need {
		msg := fmt.Sprintf("%d of %d node(s) %s can run a rank (%s each)", len(cands), len(nodes), where, what)
		if o.Nodes > 0 {
			msg += fmt.Sprintf("; the recipe needs %d", o.Nodes)
		}
		out = append(out, Check{Name: CheckNodes, Status: Pass, Message: msg})
	} else {
		out = append(out, Check{Name: CheckNodes, Status: Fail,
			Message: fmt.Sprintf("only %d of %d node(s) %s can run a rank (%s each); the recipe needs %d", len(cands), len(nodes), where, what, need),
			Fix:     "free or add nodes, lower spec.nodes / spec.gpusPerNode, or fix the nodes below"})
	}
	fixes := map[string]string{
		"notready": "the node is not Ready: kubectl describe node NAME (kubelet, network plugin)",
		"cordoned": "the node is cordoned: kubectl uncordon NAME once it is healthy",
		"taint":    "add a matching toleration to the profile (spec.tolerations), or use other nodes",
		"gpu":      "the GPU device plugin (GPU Operator) must advertise " + string(gpuRes) + " there: kubectl -n gpu-operator get pods -o wide",
		"arch":     "the recipe's image does not run there: use nodes of its architectures (spec.architectures), or an image built for theirs",
		"rdma":     "the RDMA device plugin (Network Operator rdma-shared-dev-plugin) must advertise " + string(rdmaRes) + " there: check its pod on the node and that its config's resourceName matches the profile's spec.rdma.resource",
	}
	labelsOf := map[string]string{"notready": "not Ready", "cordoned": "cordoned", "taint": "untolerated taints", "gpu": "without the GPUs", "arch": "of another CPU architecture", "rdma": "without the RDMA resource"}
	var kinds []string
	for k := range problems {
		kinds = append(kinds, k)
	}
	sort.Strings(kinds)
	for _, k := range kinds {
		out = append(out, Check{Name: CheckNodes, Target: k, Status: Warn,
			Message: fmt.Sprintf("%d node(s) %s", len(problems[k]), labelsOf[k]), Evidence: limit(problems[k]), Fix: fixes[k]})
	}
	return out, cands, short
}

func alloc(n *corev1.Node, r corev1.ResourceName) int64 {
	q, ok := n.Status.Allocatable[r]
	if !ok {
		return 0
	}
	return q.Value()
}

func nodeReady(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

func tolerations(p *profile.Profile) []corev1.Toleration {
	var out []corev1.Toleration
	for _, t := range p.Spec.Tolerations {
		out = append(out, corev1.Toleration{Key: t.Key, Operator: corev1.TolerationOperator(t.Operator), Value: t.Value, Effect: corev1.TaintEffect(t.Effect)})
	}
	return out
}

// untolerated returns the first NoSchedule/NoExecute taint none of tol tolerates.
func untolerated(taints []corev1.Taint, tol []corev1.Toleration) string {
	for i := range taints {
		t := &taints[i]
		if t.Effect == corev1.TaintEffectPreferNoSchedule {
			continue
		}
		ok := false
		for j := range tol {
			if tolerates(&tol[j], t) {
				ok = true
				break
			}
		}
		if !ok {
			return t.ToString()
		}
	}
	return ""
}

// tolerates is the scheduler's rule: effect matches (or is empty), then Exists matches the key
// (an empty key matches every taint), Equal matches key and value.
func tolerates(tl *corev1.Toleration, t *corev1.Taint) bool {
	if tl.Effect != "" && tl.Effect != t.Effect {
		return false
	}
	if tl.Operator == corev1.TolerationOpExists {
		return tl.Key == "" || tl.Key == t.Key
	}
	return tl.Key == t.Key && tl.Value == t.Value
}

// splitNetwork parses "name", "ns/name", "name@ifname" (package profile validated it).
func splitNetwork(ref, defNS string) (ns, name string) {
	ns, name = defNS, ref
	if a, b, ok := strings.Cut(name, "/"); ok {
		ns, name = a, b
	}
	name, _, _ = strings.Cut(name, "@")
	return ns, name
}

func checkNetworks(ctx context.Context, o Options) []Check {
	nets := o.Profile.Spec.Networks
	if !o.Profile.RDMA() || len(nets) == 0 {
		return []Check{{Name: CheckNetworks, Status: Pass, Message: "the profile names no Multus network: pods use the cluster network only"}}
	}
	fixCRD := "install Multus (the NVIDIA Network Operator deploys it with secondaryNetwork.multus.deploy: true), or remove spec.networks from the profile"
	if _, err := o.Kube.Discovery().ServerResourcesForGroupVersion("k8s.cni.cncf.io/v1"); err != nil {
		if apierrors.IsNotFound(err) {
			return []Check{{Name: CheckNetworks, Status: Fail,
				Message:  "the profile names Multus networks but the NetworkAttachmentDefinition CRD (k8s.cni.cncf.io/v1) is not installed",
				Evidence: []string{"GET /apis/k8s.cni.cncf.io/v1: 404 Not Found", "profile spec.networks: " + strings.Join(nets, ", ")}, Fix: fixCRD}}
		}
		return []Check{{Name: CheckNetworks, Status: Fail, Message: "could not read k8s.cni.cncf.io/v1: " + err.Error(), Fix: fixCRD}}
	}
	var out []Check
	for _, ref := range nets {
		ns, name := splitNetwork(ref, o.Namespace)
		_, err := o.Dynamic.Resource(NADResource).Namespace(ns).Get(ctx, name, metav1.GetOptions{})
		switch {
		case err == nil:
			out = append(out, Check{Name: CheckNetworks, Target: ns + "/" + name, Status: Pass, Message: "NetworkAttachmentDefinition exists"})
		case apierrors.IsNotFound(err):
			out = append(out, Check{Name: CheckNetworks, Target: ns + "/" + name, Status: Fail,
				Message:  fmt.Sprintf("NetworkAttachmentDefinition %s/%s not found (profile spec.networks: %s)", ns, name, ref),
				Evidence: []string{err.Error()},
				Fix:      "create it (e.g. a MacvlanNetwork/HostDeviceNetwork of the Network Operator), or fix spec.networks: kubectl get network-attachment-definitions -A"})
		default:
			out = append(out, Check{Name: CheckNetworks, Target: ns + "/" + name, Status: Fail, Message: "reading it: " + err.Error()})
		}
	}
	return out
}

// quantity formats n of a resource for messages.
func quantity(n int64) string { return resource.NewQuantity(n, resource.DecimalSI).String() }
