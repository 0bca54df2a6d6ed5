package preflight

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/ain-hpc/ain/pkg/profile"
)

// psaReject answers a pod create the way the API server's PodSecurity admission plugin does
// when the namespace enforces baseline (message format of k8s.io/pod-security-admission).
func psaReject(cs *fake.Clientset, dryRuns *int) {
	cs.PrependReactor("create", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if len(a.(k8stesting.CreateActionImpl).CreateOptions.DryRun) > 0 {
			*dryRuns++
		}
		return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, "ain-psa-check-x",
			errorString(`violates PodSecurity "baseline:latest": non-default capabilities (container "rank" must not include "IPC_LOCK" in securityContext.capabilities.add)`))
	})
}

type errorString string

func (e errorString) Error() string { return string(e) }

func TestPodSecurityBaselineFails(t *testing.T) {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team-a", Labels: map[string]string{PSAEnforceLabel: "baseline"}}}
	cs := fake.NewClientset(ns)
	dry := 0
	psaReject(cs, &dry)
	o := Options{Kube: cs, Namespace: "team-a", Profile: profile.Default()}
	o.defaults()
	checks := checkPodSecurity(context.Background(), o)
	if len(checks) != 1 || checks[0].Status != Fail {
		t.Fatalf("%+v", checks)
	}
	c := checks[0]
	if !strings.Contains(c.Message, `enforces the "baseline" Pod Security standard`) ||
		!strings.Contains(c.Fix, "kubectl label --overwrite namespace team-a pod-security.kubernetes.io/enforce=privileged") {
		t.Errorf("%+v", c)
	}
	if dry != 1 || !strings.Contains(strings.Join(c.Evidence, "|"), "pod-security.kubernetes.io/enforce=baseline") {
		t.Errorf("dry-runs %d, evidence %v", dry, c.Evidence)
	}
}

func TestPodSecurityPrivilegedPasses(t *testing.T) {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team-a", Labels: map[string]string{PSAEnforceLabel: "privileged", PSAWarnLabel: "baseline"}}}
	cs := fake.NewClientset(ns)
	o := Options{Kube: cs, Namespace: "team-a", Profile: profile.Default()}
	o.defaults()
	checks := checkPodSecurity(context.Background(), o)
	if len(checks) != 2 || checks[0].Status != Pass || checks[1].Status != Warn || !strings.Contains(checks[1].Message, "warn=baseline") {
		t.Fatalf("%+v", checks)
	}
	// A one-pod job holds no RDMA device and adds no IPC_LOCK: nothing to check.
	o.Nodes = 1
	if c := checkPodSecurity(context.Background(), o); len(c) != 0 {
		t.Errorf("one pod: %+v", c)
	}
	o.Nodes = 0
	// Socket fabric: no IPC_LOCK, nothing to check.
	o.Profile = profile.Default()
	o.Profile.Spec.Fabric = profile.FabricSocket
	if c := checkPodSecurity(context.Background(), o); len(c) != 0 {
		t.Errorf("socket: %+v", c)
	}
}

// A one-pod CPU job (qlora-merge: nodes 1, gpusPerNode 0) needs neither a GPU nor the RDMA
// resource on its node.
func TestCheckNodesCPUJob(t *testing.T) {
	cs := fake.NewClientset(node("cpu-1", 0, 0, true))
	o := Options{Kube: cs, Namespace: "default", Profile: profile.Default(), Nodes: 1, GPUsPerNode: 0}
	o.defaults()
	checks, cands := checkNodes(context.Background(), o)
	if len(cands) != 1 || checks[0].Status != Pass {
		t.Fatalf("%+v", checks)
	}
	o.Nodes, o.GPUsPerNode = 2, 1
	if checks, _ = checkNodes(context.Background(), o); checks[0].Status != Fail {
		t.Errorf("a 2-node GPU job on a CPU node: %+v", checks[0])
	}
}
