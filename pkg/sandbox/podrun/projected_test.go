package podrun

import (
	"os"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// The kube-api-access volume the API server's ServiceAccount admission adds to every pod
// (plugin/pkg/admission/serviceaccount: token, kube-root-ca.crt's ca.crt, the namespace from the
// downward API, defaultMode 0644) is laid out as the projected plugin does.
func TestProjectedKubeAPIAccess(t *testing.T) {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns"}}
	pv := &corev1.ProjectedVolumeSource{DefaultMode: ptr.To[int32](0o644), Sources: []corev1.VolumeProjection{
		{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token", ExpirationSeconds: ptr.To[int64](3607)}},
		{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "kube-root-ca.crt"},
			Items: []corev1.KeyToPath{{Key: "ca.crt", Path: "ca.crt"}}}},
		{DownwardAPI: &corev1.DownwardAPIProjection{Items: []corev1.DownwardAPIVolumeFile{
			{Path: "namespace", FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.namespace"}, Mode: ptr.To[int32](0o600)}}}},
	}}
	src := sources{token: "tok", configMaps: map[string]*corev1.ConfigMap{"kube-root-ca.crt": {Data: map[string]string{"ca.crt": "CA"}}}}
	files, err := projected(pod, pv, src)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]projection{"token": {[]byte("tok"), 0o644}, "ca.crt": {[]byte("CA"), 0o644}, "namespace": {[]byte("ns"), 0o600}}
	if len(files) != len(want) {
		t.Fatalf("files %v, want %v", files, want)
	}
	for k, w := range want {
		if g := files[k]; string(g.data) != string(w.data) || g.mode != w.mode {
			t.Errorf("%s: %q %v, want %q %v", k, g.data, g.mode, w.data, os.FileMode(w.mode))
		}
	}
	// A missing ConfigMap fails as on a node (the kubelet retries; the pod does not start).
	if _, err := projected(pod, pv, sources{token: "tok"}); err == nil {
		t.Error("a missing ConfigMap gave no error")
	}
}
