package podrun

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// A PersistentVolumeClaim volume is the claim's folder itself (shared by every pod that mounts
// the claim, made when missing, read-only as the volume says); a claim without a folder is an
// error naming the volume and the claim.
func TestClaimVolume(t *testing.T) {
	shared := filepath.Join(t.TempDir(), "claims", "ns", "nfs-shared")
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns"}, Spec: corev1.PodSpec{Volumes: []corev1.Volume{
		{Name: "shared", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "nfs-shared", ReadOnly: true}}},
	}}}
	vols, err := makeVolumes(t.TempDir(), pod, sources{claims: map[string]string{"nfs-shared": shared}})
	if err != nil {
		t.Fatal(err)
	}
	if v := vols["shared"]; v == nil || v.dir != shared || !v.readOnly {
		t.Fatalf("volume %+v, want the claim's folder %s, read-only", v, shared)
	}
	if fi, err := os.Stat(shared); err != nil || !fi.IsDir() {
		t.Fatalf("the claim's folder was not made: %v", err)
	}
	_, err = makeVolumes(t.TempDir(), pod, sources{})
	if err == nil || !strings.Contains(err.Error(), `volume "shared"`) || !strings.Contains(err.Error(), `claim "nfs-shared"`) {
		t.Fatalf("error %v, want one naming the volume and the claim", err)
	}
}
