// Package claims checks the PersistentVolumeClaims a workload mounts before anything is applied:
// that each exists, is not Lost, will bind, and has an access mode every pod can use when the
// pods may run on several nodes. Without it a missing claim shows up as Pending pods, and a
// ReadWriteOnce claim as a "Multi-Attach error" on the second node, minutes later.
package claims

import (
	"context"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// Use is one volume of the workload and the claim it names.
type Use struct {
	Volume, Claim string
}

// Problem says why a claim cannot serve the workload.
type Problem struct {
	Claim, Namespace, Volume string
	Missing                  bool
	// Lost: the claim's volume is gone (phase Lost).
	Lost bool
	// AccessModes the claim has (or asks for, while Pending), when they let only one node (or
	// one pod) mount it while Pods pods may run on different nodes.
	AccessModes []corev1.PersistentVolumeAccessMode
	Pods        int
	// What names the pods ("replicas", "ranks").
	What string
}

func (e *Problem) Error() string {
	switch {
	case e.Missing:
		return fmt.Sprintf("volume %q: PersistentVolumeClaim %s does not exist in namespace %s", e.Volume, e.Claim, e.Namespace)
	case e.Lost:
		return fmt.Sprintf("volume %q: PersistentVolumeClaim %s is Lost: its PersistentVolume no longer exists", e.Volume, e.Claim)
	}
	return fmt.Sprintf("volume %q: PersistentVolumeClaim %s is %v, which one node (ReadWriteOnce) or one pod (ReadWriteOncePod) mounts at a time, and the %d %s may be scheduled on different nodes: the second would wait on a Multi-Attach error",
		e.Volume, e.Claim, e.AccessModes, e.Pods, e.What)
}

// Status is what Check found about one claim that has no Problem.
type Status struct {
	Use
	Phase corev1.PersistentVolumeClaimPhase
	Modes []corev1.PersistentVolumeAccessMode
	// Class is the claim's StorageClass; WaitForFirstConsumer says a Pending claim binds when
	// its first pod is scheduled (the class's volumeBindingMode), so Pending is expected.
	Class                string
	WaitForFirstConsumer bool
	// VolumeName is the PersistentVolume the claim names (static binding): the PV controller
	// binds a Pending claim to it by itself.
	VolumeName string
}

// Pending is a note for a claim that is Pending and will not bind by itself ("" otherwise).
func (s Status) Pending() string {
	if s.Phase != corev1.ClaimPending || s.WaitForFirstConsumer || s.VolumeName != "" {
		return ""
	}
	if s.Class == "" {
		return fmt.Sprintf("PersistentVolumeClaim %s is Pending: no StorageClass and no PersistentVolume matches it yet: kubectl describe pvc %s shows why", s.Claim, s.Claim)
	}
	return fmt.Sprintf("PersistentVolumeClaim %s is Pending (StorageClass %q binds immediately, so no volume could be provisioned or matched yet): kubectl describe pvc %s shows why", s.Claim, s.Class, s.Claim)
}

// Check reads every claim in uses. A missing or Lost claim, or one only a single node can mount
// while pods > 1, is a *Problem (the first found). Forbidden reads return (nil, nil, nil): the
// apply itself does not need them. Other API errors are returned.
func Check(ctx context.Context, kc kubernetes.Interface, ns string, uses []Use, pods int, what string) ([]Status, error) {
	var out []Status
	for _, u := range uses {
		pvc, err := kc.CoreV1().PersistentVolumeClaims(ns).Get(ctx, u.Claim, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			return out, &Problem{Claim: u.Claim, Namespace: ns, Volume: u.Volume, Missing: true}
		case apierrors.IsForbidden(err):
			return nil, nil
		case err != nil:
			return out, fmt.Errorf("reading PersistentVolumeClaim %s: %w", u.Claim, err)
		}
		if pvc.Status.Phase == corev1.ClaimLost {
			return out, &Problem{Claim: u.Claim, Namespace: ns, Volume: u.Volume, Lost: true}
		}
		modes := pvc.Status.AccessModes // what the bound volume has
		if len(modes) == 0 {
			modes = pvc.Spec.AccessModes // what a Pending claim asks for
		}
		if pods > 1 && !slices.Contains(modes, corev1.ReadWriteMany) && !slices.Contains(modes, corev1.ReadOnlyMany) {
			return out, &Problem{Claim: u.Claim, Namespace: ns, Volume: u.Volume, AccessModes: modes, Pods: pods, What: what}
		}
		st := Status{Use: u, Phase: pvc.Status.Phase, Modes: modes, VolumeName: pvc.Spec.VolumeName}
		if pvc.Spec.StorageClassName != nil {
			st.Class = *pvc.Spec.StorageClassName
		}
		if st.Phase == corev1.ClaimPending && st.Class != "" {
			sc, err := kc.StorageV1().StorageClasses().Get(ctx, st.Class, metav1.GetOptions{})
			// Unreadable (cluster-scoped, often not granted): assume it waits, say nothing.
			st.WaitForFirstConsumer = err != nil || (sc.VolumeBindingMode != nil && *sc.VolumeBindingMode == storagev1.VolumeBindingWaitForFirstConsumer)
		}
		out = append(out, st)
	}
	return out, nil
}

// ModesString is modes as kubectl prints them (RWX, ROX, RWO, RWOP).
func ModesString(modes []corev1.PersistentVolumeAccessMode) string {
	short := map[corev1.PersistentVolumeAccessMode]string{corev1.ReadWriteMany: "RWX", corev1.ReadOnlyMany: "ROX", corev1.ReadWriteOnce: "RWO", corev1.ReadWriteOncePod: "RWOP"}
	var s []string
	for _, m := range modes {
		s = append(s, short[m])
	}
	return strings.Join(s, ",")
}
