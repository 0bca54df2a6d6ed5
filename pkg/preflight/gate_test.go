package preflight

import (
	"context"
	"errors"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/ain-hpc/ain/pkg/jobs"
	"github.com/ain-hpc/ain/pkg/profile"
)

// A recent passing result is reused without asking the cluster (the options carry no clients:
// running the checks would fail), with its age.
func TestGateReusesAPassingResult(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	c := Cache{Dir: t.TempDir(), TTL: 5 * time.Minute, Now: func() time.Time { return now }}
	o := Options{Cluster: "https://127.0.0.1:6443", Namespace: "default", Profile: profile.Default(), Nodes: 2, GPUsPerNode: 8}
	if err := c.Save(Key(o), &Result{Checks: []Check{{Name: CheckAPI, Status: Pass}}}); err != nil {
		t.Fatal(err)
	}
	now = now.Add(90 * time.Second)
	res, err := Gate{Cache: c}.Run(context.Background(), o)
	if err != nil || !res.Cached || res.Age != 90*time.Second || len(res.Checks) != 1 {
		t.Fatalf("gate: %+v %v", res, err)
	}
}

// A cached passing result gets its job-controller checks again: the mpi-operator whose Lease is
// fresh keeps the cached result (its operator check answered now), one whose Lease went stale
// after the cached run fails the gate, and the cache entry is gone so the next run checks all.
func TestGateRechecksOperatorsOfACachedResult(t *testing.T) {
	now := time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)
	lease := func(age time.Duration) *coordinationv1.Lease {
		d, holder := int32(15), "mpi-operator-7d9-abc"
		rt := metav1.NewMicroTime(now.Add(-age))
		return &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "mpi-operator", Namespace: "mpi-operator"},
			Spec: coordinationv1.LeaseSpec{HolderIdentity: &holder, LeaseDurationSeconds: &d, RenewTime: &rt}}
	}
	cachedChecks := []Check{{Name: CheckAPI, Status: Pass}, {Name: CheckOperator, Target: "mpi-operator", Status: Pass, Message: "cached"}, {Name: CheckNodes, Status: Pass}}
	for _, c := range []struct {
		name   string
		age    time.Duration
		status Status
	}{{"running", 3 * time.Second, Pass}, {"stopped since", 4 * time.Minute, Fail}} {
		t.Run(c.name, func(t *testing.T) {
			cache := Cache{Dir: t.TempDir(), TTL: 5 * time.Minute, Now: func() time.Time { return now }}
			cs := fake.NewClientset(lease(c.age))
			cs.Resources = []*metav1.APIResourceList{{GroupVersion: jobs.MPIJobV2GVR.GroupVersion().String(), APIResources: []metav1.APIResource{{Name: "mpijobs", Kind: "MPIJob", Namespaced: true}}}}
			o := Options{Kube: cs, Cluster: "https://127.0.0.1:6443", Namespace: "default", Profile: profile.Default(),
				Workload: jobs.WorkloadMPI, Nodes: 2, GPUsPerNode: 8, Now: func() time.Time { return now }}
			if err := cache.Save(Key(o), &Result{Checks: cachedChecks}); err != nil {
				t.Fatal(err)
			}
			res, err := Gate{Cache: cache}.Run(context.Background(), o)
			if res == nil || !res.Cached || !res.Rechecked || len(res.Checks) != 3 || res.Checks[0].Name != CheckAPI || res.Checks[2].Name != CheckNodes {
				t.Fatalf("gate: %+v %v", res, err)
			}
			op := res.Checks[1]
			if op.Name != CheckOperator || op.Status != c.status || op.Message == "cached" {
				t.Errorf("operator check %+v: want %s, answered now", op, c.status)
			}
			var failed *FailedError
			if got := errors.As(err, &failed); got != (c.status == Fail) {
				t.Errorf("gate error %v for %s", err, c.status)
			}
			_, _, stillCached := cache.Load(Key(o))
			if stillCached != (c.status == Pass) {
				t.Errorf("cache entry kept: %v, want %v", stillCached, c.status == Pass)
			}
		})
	}
}
