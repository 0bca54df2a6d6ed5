package claims_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/ain-hpc/ain/pkg/claims"
	"github.com/ain-hpc/ain/pkg/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m) }

func pvc(name, class string, phase corev1.PersistentVolumeClaimPhase, modes ...corev1.PersistentVolumeAccessMode) *corev1.PersistentVolumeClaim {
	c := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns"},
		Spec: corev1.PersistentVolumeClaimSpec{AccessModes: modes, StorageClassName: &class}, Status: corev1.PersistentVolumeClaimStatus{Phase: phase}}
	if phase == corev1.ClaimBound {
		c.Status.AccessModes = modes
	}
	return c
}

func class(name string, mode storagev1.VolumeBindingMode) *storagev1.StorageClass {
	return &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: name}, VolumeBindingMode: &mode}
}

// TestCheck: missing, Lost and single-node claims are problems for pods on several nodes;
// Pending is expected under WaitForFirstConsumer and noted under Immediate.
func TestCheck(t *testing.T) {
	rwx, rwo := corev1.ReadWriteMany, corev1.ReadWriteOnce
	cs := fake.NewClientset(
		pvc("nfs", "nfs-csi", corev1.ClaimBound, rwx), pvc("disk", "ssd", corev1.ClaimBound, rwo),
		pvc("lost", "nfs-csi", corev1.ClaimLost, rwx), pvc("wffc", "local", corev1.ClaimPending, rwx),
		pvc("stuck", "fast", corev1.ClaimPending, rwx),
		class("local", storagev1.VolumeBindingWaitForFirstConsumer), class("fast", storagev1.VolumeBindingImmediate),
	)
	ctx := context.Background()
	use := func(c string) []claims.Use { return []claims.Use{{Volume: "shared", Claim: c}} }
	for c, want := range map[string]string{"missing": "does not exist in namespace ns", "lost": "is Lost", "disk": "Multi-Attach"} {
		_, err := claims.Check(ctx, cs, "ns", use(c), 2, "ranks")
		var p *claims.Problem
		if !errors.As(err, &p) || p.Claim != c || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", c, err, want)
		}
	}
	if sts, err := claims.Check(ctx, cs, "ns", use("disk"), 1, "ranks"); err != nil || len(sts) != 1 || sts[0].Pending() != "" {
		t.Errorf("one pod on an RWO claim: %v %v", sts, err)
	}
	sts, err := claims.Check(ctx, cs, "ns", append(use("wffc"), claims.Use{Volume: "s2", Claim: "stuck"}, claims.Use{Volume: "s3", Claim: "nfs"}), 3, "ranks")
	if err != nil || len(sts) != 3 {
		t.Fatalf("%v %v", sts, err)
	}
	if !sts[0].WaitForFirstConsumer || sts[0].Pending() != "" {
		t.Errorf("WaitForFirstConsumer claim: %+v", sts[0])
	}
	if n := sts[1].Pending(); !strings.Contains(n, `StorageClass "fast" binds immediately`) {
		t.Errorf("Immediate Pending claim: %q", n)
	}
	if got := claims.ModesString(sts[2].Modes); got != "RWX" {
		t.Errorf("modes %q", got)
	}
}
