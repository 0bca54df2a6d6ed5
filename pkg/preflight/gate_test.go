package preflight

import (
	"context"
	"testing"
	"time"

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
