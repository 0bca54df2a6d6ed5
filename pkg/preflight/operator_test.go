package preflight

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/ain-hpc/ain/pkg/jobs"
)

func TestCheckController(t *testing.T) {
	now := time.Date(2026, 12, 3, 17, 0, 0, 0, time.UTC)
	lease := func(holder string, age time.Duration) *coordinationv1.Lease {
		d := int32(15)
		rt := metav1.NewMicroTime(now.Add(-age))
		return &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "mpi-operator", Namespace: "mpi-operator"},
			Spec: coordinationv1.LeaseSpec{HolderIdentity: &holder, LeaseDurationSeconds: &d, RenewTime: &rt}}
	}
	dep := func(want, avail int32) *appsv1.Deployment {
		return &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "mpi-operator", Namespace: "mpi-operator"},
			Spec:   appsv1.DeploymentSpec{Replicas: &want},
			Status: appsv1.DeploymentStatus{AvailableReplicas: avail, Conditions: []appsv1.DeploymentCondition{{Type: appsv1.DeploymentAvailable, Status: "False", Reason: "MinimumReplicasUnavailable", Message: "Deployment does not have minimum availability."}}}}
	}
	forbid := func(cs *fake.Clientset, verb, resource string) {
		cs.PrependReactor(verb, resource, func(a k8stesting.Action) (bool, runtime.Object, error) {
			return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: resource}, "", errors.New("RBAC: no"))
		})
	}
	cases := []struct {
		name   string
		objs   []runtime.Object
		deny   []string // resources whose list and get are forbidden
		status Status
		msg    []string
	}{
		{"fresh lease", []runtime.Object{lease("mpi-operator-7d9-abc", 3*time.Second)}, nil, Pass, []string{"leads", "mpi-operator/mpi-operator", "3s ago"}},
		{"stale lease", []runtime.Object{lease("mpi-operator-7d9-abc", 4*time.Minute), dep(1, 1)}, nil, Fail, []string{"not running", "last renewed 4m0s ago by mpi-operator-7d9-abc", "no pods"}},
		{"released lease", []runtime.Object{lease("", time.Second)}, nil, Fail, []string{"held by no one"}},
		{"no lease, deployment down", []runtime.Object{dep(1, 0)}, nil, Fail, []string{"0 of 1 replica(s) available"}},
		{"no lease, scaled to 0", []runtime.Object{dep(0, 0)}, nil, Fail, []string{"scaled to 0"}},
		{"no lease, deployment up", []runtime.Object{dep(1, 1)}, nil, Pass, []string{"1 of 1 replica(s) available"}},
		{"forbidden", nil, []string{"leases", "deployments"}, Warn, []string{"get leases.coordination.k8s.io mpi-operator in namespace mpi-operator", "get deployments.apps mpi-operator in namespace mpi-operator", "is denied"}},
		{"lease forbidden, deployment read", []runtime.Object{dep(1, 0)}, []string{"leases"}, Fail, []string{"0 of 1"}},
		{"nothing", nil, nil, Warn, []string{"found neither", `"mpi-operator"`}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cs := fake.NewClientset(c.objs...)
			for _, r := range c.deny {
				forbid(cs, "list", r)
				forbid(cs, "get", r)
			}
			o := Options{Kube: cs, Now: func() time.Time { return now }}
			ch := checkController(context.Background(), o, ctlMPIOperator)
			if ch.Status != c.status || ch.Name != CheckOperator || ch.Target != "mpi-operator" {
				t.Errorf("%+v: want %s", ch, c.status)
			}
			for _, m := range c.msg {
				if !strings.Contains(ch.Message, m) {
					t.Errorf("message %q lacks %q", ch.Message, m)
				}
			}
			if ch.Status == Fail && ch.Fix == "" {
				t.Error("a FAIL without a fix")
			}
		})
	}
}

// The webhook probe: a dry run (nothing stored) answered by the API server the three ways it can.
func TestCheckWebhook(t *testing.T) {
	const callErr = `failed calling webhook "validator.training-operator.kubeflow.org": failed to call webhook: Post "https://127.0.0.1:9443/validate-kubeflow-org-v1-pytorchjob?timeout=10s": dial tcp 127.0.0.1:9443: connect: connection refused`
	cases := []struct {
		name   string
		err    error
		ok     bool
		status Status
		msg    string
	}{
		{"down", apierrors.NewInternalError(errors.New(callErr)), true, Fail, `cannot call the admission webhook "validator.training-operator.kubeflow.org"`},
		{"denied", apierrors.NewBadRequest(`admission webhook "validator.training-operator.kubeflow.org" denied the request: spec.pytorchReplicaSpecs[Master].template.spec.containers: Required value: must have at least one container with name pytorch`), true, Pass, "answers"},
		{"forbidden", apierrors.NewForbidden(schema.GroupResource{Group: "kubeflow.org", Resource: "pytorchjobs"}, "", errors.New("no")), true, Warn, "cannot create pytorchjobs.kubeflow.org"},
		{"no webhook", nil, false, "", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dyn := dynfake.NewSimpleDynamicClient(runtime.NewScheme())
			var dry []string
			dyn.PrependReactor("create", "pytorchjobs", func(a k8stesting.Action) (bool, runtime.Object, error) {
				dry = a.(k8stesting.CreateActionImpl).CreateOptions.DryRun
				return true, a.(k8stesting.CreateAction).GetObject(), c.err
			})
			o := Options{Dynamic: dyn, Namespace: "team"}
			ch, ok := checkWebhook(context.Background(), o, jobs.APITrainingOperator, webhookProbes[jobs.APITrainingOperator])
			if len(dry) != 1 || dry[0] != metav1.DryRunAll {
				t.Fatalf("the probe job must be a dry run, got %v", dry)
			}
			if ok != c.ok || ch.Status != c.status || !strings.Contains(ch.Message, c.msg) {
				t.Errorf("%v %+v", ok, ch)
			}
			if c.status == Fail && (!strings.Contains(ch.Evidence[0], "connection refused") || !strings.Contains(ch.Fix, "training-operator")) {
				t.Errorf("evidence %q fix %q", ch.Evidence, ch.Fix)
			}
		})
	}
}

// The optional ClusterRole lets a user read each controller's Lease and Deployment by name, and
// nothing else of them.
func TestNodeReadRulesCoverControllers(t *testing.T) {
	for api, ctls := range controllers {
		for _, c := range ctls {
			for _, r := range []struct{ group, resource, name string }{{"coordination.k8s.io", "leases", c.lease}, {"apps", "deployments", c.deployment}} {
				found := false
				for _, rule := range NodeReadRules {
					if allows([]rbacv1.PolicyRule{rule}, "get", r.group, r.resource, "") {
						if len(rule.ResourceNames) == 0 {
							t.Errorf("%s: get %s is granted for every name", api, r.resource)
						}
						for _, n := range rule.ResourceNames {
							found = found || n == r.name
						}
						if allows([]rbacv1.PolicyRule{rule}, "list", r.group, r.resource, "") {
							t.Errorf("list %s must not be granted", r.resource)
						}
					}
				}
				if !found {
					t.Errorf("%s: NodeReadRules do not let a user get %s %s", api, r.resource, r.name)
				}
			}
		}
	}
}
