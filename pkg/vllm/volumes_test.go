package vllm

import (
	"context"
	"errors"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/ain-hpc/ain/pkg/recipe"
)

func claim(name string, phase corev1.PersistentVolumeClaimPhase, spec []corev1.PersistentVolumeAccessMode, bound ...corev1.PersistentVolumeAccessMode) *corev1.PersistentVolumeClaim {
	return &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "llm"},
		Spec:   corev1.PersistentVolumeClaimSpec{AccessModes: spec},
		Status: corev1.PersistentVolumeClaimStatus{Phase: phase, AccessModes: bound}}
}

// The model volume's claim is read before the apply: missing, or ReadWriteOnce(Pod) with
// replicas that may land on different nodes, is refused with a typed error; ReadWriteMany,
// ReadOnlyMany, a single replica and a Pending (WaitForFirstConsumer) claim pass.
func TestCheckClaims(t *testing.T) {
	rwo, rwx, rox, rwop := corev1.ReadWriteOnce, corev1.ReadWriteMany, corev1.ReadOnlyMany, corev1.ReadWriteOncePod
	spec := func(replicas int, claimName string) *recipe.ServingSpec {
		return &recipe.ServingSpec{Replicas: replicas, Volumes: []recipe.Volume{{Name: "shared", ClaimName: claimName, MountPath: "/shared"}}}
	}
	cl := &Cluster{Namespace: "llm", Kube: (fake.NewClientset(
		claim("nfs", corev1.ClaimBound, []corev1.PersistentVolumeAccessMode{rwx}, rwx),
		claim("ro", corev1.ClaimBound, []corev1.PersistentVolumeAccessMode{rox}, rox),
		claim("disk", corev1.ClaimBound, []corev1.PersistentVolumeAccessMode{rwo}, rwo),
		claim("one-pod", corev1.ClaimBound, []corev1.PersistentVolumeAccessMode{rwop}, rwop),
		claim("wffc-rwx", corev1.ClaimPending, []corev1.PersistentVolumeAccessMode{rwx}),
		claim("wffc-rwo", corev1.ClaimPending, []corev1.PersistentVolumeAccessMode{rwo}),
	))}
	ctx := context.Background()
	for _, ok := range []*recipe.ServingSpec{spec(2, "nfs"), spec(3, "ro"), spec(1, "disk"), spec(2, "wffc-rwx"), {Replicas: 2}} {
		if err := cl.CheckClaims(ctx, ok); err != nil {
			t.Errorf("%+v: %v", ok.Volumes, err)
		}
	}
	for _, name := range []string{"disk", "one-pod", "wffc-rwo"} {
		err := cl.CheckClaims(ctx, spec(2, name))
		var cp *ClaimProblem
		if !errors.As(err, &cp) || cp.Missing || cp.Claim != name || !strings.Contains(err.Error(), "Multi-Attach") {
			t.Errorf("%s: %v", name, err)
		}
	}
	err := cl.CheckClaims(ctx, spec(1, "nfs-typo"))
	var cp *ClaimProblem
	if !errors.As(err, &cp) || !cp.Missing || !strings.Contains(err.Error(), "PersistentVolumeClaim nfs-typo does not exist in namespace llm") {
		t.Errorf("missing claim: %v", err)
	}
}
