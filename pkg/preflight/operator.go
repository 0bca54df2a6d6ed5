package preflight

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/ain-hpc/ain/pkg/next"

	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/ain-hpc/ain/pkg/jobs"
	"github.com/ain-hpc/ain/pkg/kube"
	"github.com/ain-hpc/ain/pkg/lazyre"
)

// CheckOperator is the check that the controller of the chosen job API runs. The CRDs being
// served says nothing about it: with the training-operator, mpi-operator or Trainer down (or its
// admission webhook unreachable) a job is accepted, or refused with a TLS trace, and then waits
// without pods forever (issue 19).
const CheckOperator = "operator"

// controller is a job controller as its project installs it. The names are the projects' own,
// read in their sources at the versions ain supports:
//   - training-operator v1.8.1: Deployment "training-operator" (manifests/base/deployment.yaml) in
//     namespace "kubeflow" (manifests/overlays/standalone); --leader-elect defaults to false and the
//     shipped Deployment does not set it, so there is usually no Lease; when on, the Lease is
//     "1ca428e5.training-operator.kubeflow.org" (cmd/training-operator.v1/main.go). Its admission
//     webhook validates PyTorchJobs (none for MPIJob).
//   - mpi-operator v0.8.0: always elects a leader, Lease "mpi-operator" (its controller name) in
//     --lock-namespace, default "mpi-operator" (cmd/mpi-operator/app/server.go, options.go);
//     Deployment mpi-operator/mpi-operator (deploy/v2beta1/mpi-operator.yaml). No webhook.
//   - Trainer v2.3.0: Lease "trainer.kubeflow.org" (manifests/base/manager/
//     controller_manager_config.yaml, leaderElect: true), Deployment
//     "kubeflow-trainer-controller-manager" in "kubeflow-system" (manifests/overlays/manager).
//     A TrainJob runs as a JobSet: JobSet v0.12.0's Lease "6d4f6a47.jobset.x-k8s.io"
//     (api/config/v1alpha1 defaults.go), Deployment jobset-system/jobset-controller-manager.
type controller struct {
	name       string
	namespace  string // where its install puts it
	lease      string
	deployment string
}

var (
	ctlTrainingOperator = controller{"training-operator", "kubeflow", "1ca428e5.training-operator.kubeflow.org", "training-operator"}
	ctlMPIOperator      = controller{"mpi-operator", "mpi-operator", "mpi-operator", "mpi-operator"}
	ctlTrainer          = controller{"Kubeflow Trainer", "kubeflow-system", "trainer.kubeflow.org", "kubeflow-trainer-controller-manager"}
	ctlJobSet           = controller{"JobSet", "jobset-system", "6d4f6a47.jobset.x-k8s.io", "jobset-controller-manager"}
)

// controllers are the controllers each job API needs.
var controllers = map[jobs.API][]controller{
	jobs.APITrainingOperator: {ctlTrainingOperator},
	jobs.APIMPIOperator:      {ctlMPIOperator},
	jobs.APITrainer:          {ctlTrainer, ctlJobSet},
}

// webhookProbe is a job a controller's validating webhook refuses, though the CRD schema
// accepts it: a dry-run create of it is answered "denied" by a webhook that runs, and "failed
// calling webhook" by one the API server cannot reach. Nothing is stored (dryRun=All).
type webhookProbe struct {
	gvr  schema.GroupVersionResource
	kind string
	spec map[string]any
}

// webhookProbes per job API. The training-operator v1.8.1 refuses a PyTorchJob without a
// container named "pytorch" (pkg/webhooks/pytorch); Trainer v2.3.0 refuses a TrainJob whose
// runtime kind it does not know ("unsupported runtime", pkg/webhooks/trainjob_webhook.go; the CRD
// leaves runtimeRef.kind free).
var webhookProbes = map[jobs.API]webhookProbe{
	jobs.APITrainingOperator: {jobs.PyTorchJobGVR, "PyTorchJob", map[string]any{
		"pytorchReplicaSpecs": map[string]any{"Master": map[string]any{"replicas": int64(1),
			"template": map[string]any{"spec": map[string]any{"containers": []any{map[string]any{"name": "ain-preflight", "image": DefaultProbeImage}}}}}}}},
	jobs.APITrainer: {jobs.TrainJobGVR, "TrainJob", map[string]any{
		"runtimeRef": map[string]any{"name": "ain-preflight", "kind": "AinPreflightNoSuchRuntime"}}},
}

// leaseGrace is added to a Lease's own duration before it is called stale: a renewal may be a
// retry period late.
const leaseGrace = 10 * time.Second

// servedAPIs are the job APIs ain will use that the cluster serves (checkCRDs says the rest).
func servedAPIs(o Options) []jobs.API { return chosenAPIs(o, false) }

// checkOperators says, for each job API ain will use, whether its controllers run and its
// admission webhook answers.
func checkOperators(ctx context.Context, o Options) []Check {
	if o.discoverErr != nil {
		return nil // checkCRDs failed already
	}
	var out []Check
	for _, api := range servedAPIs(o) {
		answered := false // the webhook gave a definite answer, up or down
		if p, ok := webhookProbes[api]; ok {
			if c, ok := checkWebhook(ctx, o, api, p); ok {
				out = append(out, c)
				answered = c.Status != Warn
			}
		}
		for i, ctl := range controllers[api] {
			c := checkController(ctx, o, ctl)
			// The webhook server runs in the controller's own process (the training-operator's
			// manager, Trainer's controller manager): a webhook that answered proves that process
			// runs, one that cannot be called was said; not finding (or not being allowed to read)
			// its Lease or Deployment then adds nothing.
			if i == 0 && answered && c.Status == Warn {
				continue
			}
			out = append(out, c)
		}
	}
	return out
}

// deniedRE finds the webhook that refused a request (k8s.io/apiserver's admission error:
// `admission webhook "NAME" denied the request: REASON`).
var deniedRE = lazyre.New(`admission webhook "([^"]+)" denied the request`)

// checkWebhook dry-runs the API's probe job. ok is false when the answer says nothing about a
// webhook (no webhook validates the kind here): the controller checks then speak alone.
func checkWebhook(ctx context.Context, o Options, api jobs.API, p webhookProbe) (Check, bool) {
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": p.gvr.GroupVersion().String(), "kind": p.kind,
		"metadata": map[string]any{"generateName": "ain-preflight-", "namespace": o.Namespace},
		"spec":     p.spec,
	}}
	target := p.gvr.Resource + "." + p.gvr.Group
	_, err := o.Dynamic.Resource(p.gvr).Namespace(o.Namespace).Create(ctx, obj, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
	if err == nil {
		return Check{}, false
	}
	if name, reason := kube.WebhookName(err); name != "" {
		return Check{Name: CheckOperator, Target: target, Status: Fail,
			Message:  fmt.Sprintf("the API server cannot call the admission webhook %q of the %s: every %s ain submits is refused", name, controllers[api][0].name, p.kind),
			Evidence: []string{"dry-run create of a " + p.kind + ": " + reason},
			Fix:      fmt.Sprintf("the %s is down or its webhook Service has no ready endpoint: kubectl get pods,endpointslices -A | grep -e %s; kubectl get validatingwebhookconfigurations,mutatingwebhookconfigurations | grep kubeflow", controllers[api][0].name, controllers[api][0].deployment)}, true
	}
	if m := deniedRE().FindStringSubmatch(err.Error()); m != nil {
		return Check{Name: CheckOperator, Target: target, Status: Pass,
			Message: fmt.Sprintf("the admission webhook %q answers (it refused a deliberately invalid %s in a dry run)", m[1], p.kind)}, true
	}
	if apierrors.IsForbidden(err) {
		return Check{Name: CheckOperator, Target: target, Status: Warn,
			Message:  fmt.Sprintf("cannot create %s in namespace %s (dry run): whether its admission webhook answers is not checked", target, o.Namespace),
			Evidence: []string{err.Error()}}, true
	}
	return Check{}, false
}

// checkController finds the controller's leader Lease, else its Deployment, and says whether it
// runs. A namespaced user may read neither: a WARN naming what was denied.
func checkController(ctx context.Context, o Options, ctl controller) Check {
	now := o.Now()
	var denied []string
	lease, err := findLease(ctx, o, ctl)
	switch {
	case err != nil && apierrors.IsForbidden(err):
		denied = append(denied, fmt.Sprintf("get leases.coordination.k8s.io %s in namespace %s", ctl.lease, ctl.namespace))
	case err != nil:
		return Check{Name: CheckOperator, Target: ctl.name, Status: Warn, Message: "reading the leader Lease of the " + ctl.name + ": " + err.Error()}
	case lease != nil:
		return leaseCheck(ctl, lease, now)
	}
	dep, err := findDeployment(ctx, o, ctl)
	switch {
	case err != nil && apierrors.IsForbidden(err):
		denied = append(denied, fmt.Sprintf("get deployments.apps %s in namespace %s", ctl.deployment, ctl.namespace))
	case err != nil:
		return Check{Name: CheckOperator, Target: ctl.name, Status: Warn, Message: "reading the Deployment of the " + ctl.name + ": " + err.Error()}
	case dep != nil:
		return deploymentCheck(ctl, dep)
	}
	if len(denied) > 0 {
		return Check{Name: CheckOperator, Target: ctl.name, Status: Warn,
			Message:  "cannot tell whether the " + ctl.name + " runs: " + strings.Join(denied, " and ") + " is denied",
			Evidence: denied,
			Fix:      "ask your cluster admin for the optional read (the Role with node reads), or ask them whether the " + ctl.name + " runs",
			Next:     []next.Command{"preflight --print-role --node-read"}}
	}
	return Check{Name: CheckOperator, Target: ctl.name, Status: Warn,
		Message: fmt.Sprintf("found neither the %s's leader Lease %q nor its Deployment %q in any namespace: it may run under another name or outside the cluster, or not at all", ctl.name, ctl.lease, ctl.deployment),
		Fix:     "if jobs stay without pods, check that the " + ctl.name + " runs: kubectl get deploy -A | grep -i " + ctl.deployment}
}

// byName is a list option selecting one name in every namespace.
func byName(name string) metav1.ListOptions {
	return metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("metadata.name", name).String()}
}

// findLease finds the controller's leader Lease (the most recently renewed, if several): see
// findNamed.
func findLease(ctx context.Context, o Options, ctl controller) (*coordinationv1.Lease, error) {
	leases := func(ns string) getLister[*coordinationv1.Lease, *coordinationv1.LeaseList] {
		return o.Kube.CoordinationV1().Leases(ns)
	}
	return findNamed(ctx, leases, func(l *coordinationv1.LeaseList) []coordinationv1.Lease { return l.Items },
		ctl.namespace, ctl.lease, func(a, b *coordinationv1.Lease) bool { return renewed(a).After(renewed(b)) })
}

// getLister is the Get and List of a typed client (client-go's LeaseInterface, DeploymentInterface).
type getLister[T, L any] interface {
	Get(ctx context.Context, name string, opts metav1.GetOptions) (T, error)
	List(ctx context.Context, opts metav1.ListOptions) (L, error)
}

// findNamed lists the objects called name in every namespace (an admin may) and keeps the one
// better prefers, else gets it in the install's namespace ns (what the optional ClusterRole
// grants, by name). nil, nil: none.
func findNamed[T, L any](ctx context.Context, client func(ns string) getLister[*T, L], items func(L) []T, ns, name string, better func(a, b *T) bool) (*T, error) {
	l, err := client("").List(ctx, byName(name))
	if err == nil {
		var best *T
		all := items(l)
		for i := range all {
			if best == nil || better(&all[i], best) {
				best = &all[i]
			}
		}
		return best, nil
	}
	if !apierrors.IsForbidden(err) {
		return nil, err
	}
	obj, err := client(ns).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	return obj, err
}

func renewed(l *coordinationv1.Lease) time.Time {
	if l.Spec.RenewTime != nil {
		return l.Spec.RenewTime.Time
	}
	if l.Spec.AcquireTime != nil {
		return l.Spec.AcquireTime.Time
	}
	return time.Time{}
}

// leaseCheck judges a leader Lease: held and renewed within its duration (plus leaseGrace) is a
// running leader; otherwise no replica of the controller leads, and none reconciles jobs.
func leaseCheck(ctl controller, l *coordinationv1.Lease, now time.Time) Check {
	where := l.Namespace + "/" + l.Name
	holder := ""
	if l.Spec.HolderIdentity != nil {
		holder = *l.Spec.HolderIdentity
	}
	dur := 15 * time.Second // client-go's and controller-runtime's default lease duration
	if l.Spec.LeaseDurationSeconds != nil && *l.Spec.LeaseDurationSeconds > 0 {
		dur = time.Duration(*l.Spec.LeaseDurationSeconds) * time.Second
	}
	last := renewed(l)
	age := now.Sub(last).Round(time.Second)
	fix := fmt.Sprintf("start the %s again, or see why it stopped: kubectl -n %s get deploy,pods; kubectl -n %s logs deploy/%s --previous", ctl.name, l.Namespace, l.Namespace, ctl.deployment)
	ev := []string{fmt.Sprintf("Lease %s: holder %q, renewTime %s, leaseDurationSeconds %d", where, holder, last.UTC().Format(time.RFC3339), int(dur/time.Second))}
	switch {
	case holder == "":
		return Check{Name: CheckOperator, Target: ctl.name, Status: Fail,
			Message: fmt.Sprintf("the %s is not running: its leader Lease %s is held by no one (released %s ago); jobs you submit will get no pods", ctl.name, where, age), Evidence: ev, Fix: fix}
	case last.IsZero() || now.Sub(last) > dur+leaseGrace:
		return Check{Name: CheckOperator, Target: ctl.name, Status: Fail,
			Message: fmt.Sprintf("the %s is not running: its leader Lease %s was last renewed %s ago by %s, past its %s duration; jobs you submit will get no pods", ctl.name, where, age, holder, dur), Evidence: ev, Fix: fix}
	}
	return Check{Name: CheckOperator, Target: ctl.name, Status: Pass,
		Message: fmt.Sprintf("the %s leads: Lease %s renewed %s ago by %s", ctl.name, where, age, holder)}
}

// findDeployment finds the controller's Deployment (the one with most available replicas, if
// several): see findNamed.
func findDeployment(ctx context.Context, o Options, ctl controller) (*appsv1.Deployment, error) {
	deployments := func(ns string) getLister[*appsv1.Deployment, *appsv1.DeploymentList] {
		return o.Kube.AppsV1().Deployments(ns)
	}
	return findNamed(ctx, deployments, func(l *appsv1.DeploymentList) []appsv1.Deployment { return l.Items },
		ctl.namespace, ctl.deployment, func(a, b *appsv1.Deployment) bool { return a.Status.AvailableReplicas > b.Status.AvailableReplicas })
}

// deploymentCheck judges a controller's Deployment by its available replicas (one is enough:
// the others wait for the Lease).
func deploymentCheck(ctl controller, d *appsv1.Deployment) Check {
	where := d.Namespace + "/" + d.Name
	want := int32(1)
	if d.Spec.Replicas != nil {
		want = *d.Spec.Replicas
	}
	if d.Status.AvailableReplicas > 0 {
		return Check{Name: CheckOperator, Target: ctl.name, Status: Pass,
			Message: fmt.Sprintf("the %s runs: Deployment %s has %d of %d replica(s) available", ctl.name, where, d.Status.AvailableReplicas, want)}
	}
	var ev []string
	for _, c := range d.Status.Conditions {
		if c.Status != "True" || c.Type == appsv1.DeploymentReplicaFailure {
			ev = append(ev, fmt.Sprintf("%s=%s %s: %s", c.Type, c.Status, c.Reason, c.Message))
		}
	}
	msg := fmt.Sprintf("the %s is not running: Deployment %s has 0 of %d replica(s) available; jobs you submit will get no pods", ctl.name, where, want)
	if want == 0 {
		msg = fmt.Sprintf("the %s is not running: Deployment %s is scaled to 0; jobs you submit will get no pods", ctl.name, where)
	}
	return Check{Name: CheckOperator, Target: ctl.name, Status: Fail, Message: msg, Evidence: ev,
		Fix: fmt.Sprintf("kubectl -n %s describe deploy %s; kubectl -n %s logs deploy/%s", d.Namespace, d.Name, d.Namespace, d.Name)}
}
