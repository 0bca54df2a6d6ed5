package kclient_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/ain-hpc/ain/pkg/kclient"
	"github.com/ain-hpc/ain/pkg/kclient/kclienttest"
)

// TestPodsListAndLogs: the typed client sends what client-go's generated clientset sends (path,
// label selector, log options as query parameters, protobuf preferred with JSON accepted, the
// user agent), request for request, and decodes the JSON answer into typed objects.
func TestPodsListAndLogs(t *testing.T) {
	cfg := &rest.Config{UserAgent: "ain-test", QPS: 50, Burst: 100}
	ours := podRequests(t, cfg, kclient.NewForConfig)
	theirs := podRequests(t, cfg, func(c *rest.Config) (kclient.Interface, error) {
		cs, err := kubernetes.NewForConfig(c)
		return kclienttest.FromClientset(cs), err
	})
	t.Logf("requests:\n%s", strings.Join(ours, "\n"))
	if strings.Join(ours, "\n") != strings.Join(theirs, "\n") {
		t.Errorf("requests:\n%s\nclient-go's clientset:\n%s", strings.Join(ours, "\n"), strings.Join(theirs, "\n"))
	}
}

func podRequests(t *testing.T, cfg *rest.Config, newClient func(*rest.Config) (kclient.Interface, error)) []string {
	var seen []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen = append(seen, r.Method+" "+r.URL.String()+" accept="+r.Header.Get("Accept")+" type="+r.Header.Get("Content-Type")+" ua="+r.Header.Get("User-Agent"))
		switch r.URL.Path {
		case "/api/v1/namespaces/team/pods":
			w.Header().Set("Content-Type", "application/json")
			_ = json.NewEncoder(w).Encode(corev1.PodList{TypeMeta: metav1.TypeMeta{Kind: "PodList", APIVersion: "v1"},
				Items: []corev1.Pod{{ObjectMeta: metav1.ObjectMeta{Name: "w-0", Namespace: "team"}, Spec: corev1.PodSpec{NodeName: "n1"}}}})
		case "/api/v1/namespaces/team/pods/w-0/log":
			_, _ = io.WriteString(w, "NCCL INFO ready\n")
		case "/api/v1/namespaces/team/pods/w-1", "/api/v1/namespaces/team/pods/w-1/status", "/apis/apps/v1/namespaces/team/deployments/d":
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, `{"kind":"Status","apiVersion":"v1","status":"Success"}`)
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	cfg = rest.CopyConfig(cfg)
	cfg.Host = srv.URL
	c, err := newClient(cfg)
	if err != nil {
		t.Fatal(err)
	}
	l, err := c.CoreV1().Pods("team").List(context.Background(), metav1.ListOptions{LabelSelector: "job=w"})
	if err != nil || len(l.Items) != 1 || l.Items[0].Name != "w-0" || l.Items[0].Spec.NodeName != "n1" {
		t.Fatalf("List: %+v %v", l, err)
	}
	b, err := c.CoreV1().Pods("team").GetLogs("w-0", &corev1.PodLogOptions{Container: "probe", TailLines: ptr(int64(5))}).Do(context.Background()).Raw()
	if err != nil || string(b) != "NCCL INFO ready\n" {
		t.Fatalf("GetLogs: %q %v", b, err)
	}
	if _, err := c.CoreV1().Nodes().Get(context.Background(), "gone", metav1.GetOptions{}); err == nil {
		t.Fatal("Get of a missing node: no error")
	}
	// The other verbs: only the requests are compared (the server answers no objects).
	ctx := context.Background()
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "w-1"}}
	_, _ = c.CoreV1().Pods("team").Create(ctx, pod, metav1.CreateOptions{FieldManager: "ain"})
	_, _ = c.CoreV1().Pods("team").UpdateStatus(ctx, pod, metav1.UpdateOptions{})
	_, _ = c.CoreV1().Pods("team").Patch(ctx, "w-1", "application/merge-patch+json", []byte(`{}`), metav1.PatchOptions{FieldManager: "ain"}, "status")
	_ = c.CoreV1().Pods("team").Delete(ctx, "w-1", metav1.DeleteOptions{})
	_ = c.CoreV1().Pods("team").DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{LabelSelector: "job=w", TimeoutSeconds: ptr(int64(3))})
	_, _ = c.AppsV1().Deployments("team").Get(ctx, "d", metav1.GetOptions{ResourceVersion: "0"})
	if w, err := c.CoreV1().Pods("team").Watch(ctx, metav1.ListOptions{ResourceVersion: "7", AllowWatchBookmarks: true}); err == nil {
		w.Stop()
	}
	if len(seen) != 10 {
		t.Errorf("%d requests, want 10:\n%s", len(seen), strings.Join(seen, "\n"))
	}
	all := seen
	want := []string{
		"GET /api/v1/namespaces/team/pods?labelSelector=job%3Dw accept=application/vnd.kubernetes.protobuf,application/json type= ua=ain-test",
		"GET /api/v1/namespaces/team/pods/w-0/log?container=probe&tailLines=5 accept=application/json, */* type= ua=ain-test",
		"GET /api/v1/nodes/gone accept=application/vnd.kubernetes.protobuf,application/json type= ua=ain-test",
	}
	if strings.Join(seen[:3], "\n") != strings.Join(want, "\n") {
		t.Errorf("requests:\n%s\nwant:\n%s", strings.Join(seen[:3], "\n"), strings.Join(want, "\n"))
	}
	return all
}

func ptr[T any](v T) *T { return &v }
