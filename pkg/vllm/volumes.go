package vllm

import (
	"context"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ain-hpc/ain/pkg/recipe"
)

// ClaimProblem says why a model volume's PersistentVolumeClaim cannot serve the recipe:
// Missing, or an access mode that lets only one node (ReadWriteOnce) or one pod
// (ReadWriteOncePod) mount it while the replicas may run on several nodes. Without this check
// the second replica's pod waits on FailedAttachVolume "Multi-Attach error" and ain gives up
// only at its startup timeout.
type ClaimProblem struct {
	Claim, Namespace, Volume string
	Missing                  bool
	AccessModes              []corev1.PersistentVolumeAccessMode
	Replicas                 int
}

func (e *ClaimProblem) Error() string {
	if e.Missing {
		return fmt.Sprintf("volume %q: PersistentVolumeClaim %s does not exist in namespace %s", e.Volume, e.Claim, e.Namespace)
	}
	return fmt.Sprintf("volume %q: PersistentVolumeClaim %s is %v, which one node (ReadWriteOnce) or one pod (ReadWriteOncePod) mounts at a time, and the %d replicas may be scheduled on different nodes: the second would wait on a Multi-Attach error",
		e.Volume, e.Claim, e.AccessModes, e.Replicas)
}

// CheckClaims reads the claims the recipe's volumes name, before anything is applied: a
// missing claim, or one only a single node can mount while more than one replica runs, is a
// *ClaimProblem. A Pending claim is fine (a WaitForFirstConsumer class binds it when the first
// pod is scheduled); its requested modes are checked. Without the right to read claims (an
// RBAC Forbidden) the check is skipped: the apply itself does not need it.
func (c *Cluster) CheckClaims(ctx context.Context, s *recipe.ServingSpec) error {
	for _, v := range s.Volumes {
		pvc, err := c.Kube.CoreV1().PersistentVolumeClaims(c.Namespace).Get(ctx, v.ClaimName, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			return &ClaimProblem{Claim: v.ClaimName, Namespace: c.Namespace, Volume: v.Name, Missing: true}
		case apierrors.IsForbidden(err):
			return nil
		case err != nil:
			return fmt.Errorf("reading PersistentVolumeClaim %s: %w", v.ClaimName, err)
		}
		if s.Replicas < 2 {
			continue
		}
		modes := pvc.Status.AccessModes // what the bound volume has
		if len(modes) == 0 {
			modes = pvc.Spec.AccessModes // what a Pending claim asks for
		}
		if !slices.Contains(modes, corev1.ReadWriteMany) && !slices.Contains(modes, corev1.ReadOnlyMany) {
			return &ClaimProblem{Claim: v.ClaimName, Namespace: c.Namespace, Volume: v.Name, AccessModes: modes, Replicas: s.Replicas}
		}
	}
	return nil
}
