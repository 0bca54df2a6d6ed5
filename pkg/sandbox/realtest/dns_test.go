package realtest

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/ain-hpc/ain/pkg/sandbox/sandboxtest"
)

// realPod is a pod of the mpi-operator's base image (a row of the real-image table) that runs
// script with sh.
func realPod(name, script string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"app": name}},
		Spec: corev1.PodSpec{
			RestartPolicy: corev1.RestartPolicyNever,
			Containers: []corev1.Container{{Name: "main", Image: "mpioperator/base:v0.8.0",
				Command: []string{"sh", "-c", script}}},
		},
	}
}

// waitPod polls pod ns/name until done says so, for at most within.
func waitPod(t *testing.T, cs kubernetes.Interface, sb *sandboxtest.Sandbox, ns, name string, within time.Duration, done func(*corev1.Pod) bool) *corev1.Pod {
	t.Helper()
	var last *corev1.Pod
	if _, ok := sandboxtest.Poll(within, 250*time.Millisecond, func() bool {
		p, err := cs.CoreV1().Pods(ns).Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			return false
		}
		last = p
		return done(p)
	}); !ok {
		phase := corev1.PodPhase("absent")
		if last != nil {
			phase = last.Status.Phase
		}
		t.Fatalf("pod %s/%s (%s) not as awaited within %s\nagent:\n%s", ns, name, phase, within, sb.ComponentLog("agent", 40))
	}
	return last
}

// podLog is pod ns/name's log as the API server serves it.
func podLog(t *testing.T, cs kubernetes.Interface, ns, name string) string {
	t.Helper()
	b, err := cs.CoreV1().Pods(ns).GetLogs(name, &corev1.PodLogOptions{}).DoRaw(context.Background())
	if err != nil {
		t.Fatalf("log of %s/%s: %v", ns, name, err)
	}
	return string(b)
}

// TestIntegrationRealPodResolvesClusterDNS: a real pod resolves, through the sandbox's CoreDNS
// and with glibc's resolver (getent, as torchrun and ssh do), the pod DNS name a headless
// Service gives a pod with hostname and subdomain (<hostname>.<subdomain>.<ns>.svc.cluster.local,
// the names JobSet and the mpi-operator give workers) and a ClusterIP Service's name by its
// resolv.conf search path; a name that no Service has does not resolve. The names are in another
// namespace, so no /etc/hosts entry can answer for them. Checked to fail with real mode off
// (AIN_REALTEST_OFF=1: the simulated client pod never ends) and with the pods' nameserver left at
// the bridge's address, where nothing answers (both names fail to resolve, getent exits 2).
func TestIntegrationRealPodResolvesClusterDNS(t *testing.T) {
	sb := NeedReal(t)
	cs := sb.Clientset(t)
	ctx := context.Background()
	ns, other := sb.Namespace(t), sb.Namespace(t)

	// A worker as JobSet and the mpi-operator make them: hostname, subdomain, a headless Service.
	w := realPod("w-0", "sleep 120")
	w.Labels["app"] = "workers"
	w.Spec.Hostname, w.Spec.Subdomain = "w-0", "workers"
	if _, err := cs.CoreV1().Pods(other).Create(ctx, w, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	port := []corev1.ServicePort{{Name: "ssh", Port: 22}}
	for _, svc := range []*corev1.Service{
		{ObjectMeta: metav1.ObjectMeta{Name: "workers"}, Spec: corev1.ServiceSpec{ClusterIP: corev1.ClusterIPNone, Selector: map[string]string{"app": "workers"}, Ports: port}},
		{ObjectMeta: metav1.ObjectMeta{Name: "web"}, Spec: corev1.ServiceSpec{Selector: map[string]string{"app": "workers"}, Ports: port}},
	} {
		if _, err := cs.CoreV1().Services(other).Create(ctx, svc, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	w = waitPod(t, cs, sb, other, "w-0", 60*time.Second, func(p *corev1.Pod) bool {
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue {
				return p.Status.PodIP != ""
			}
		}
		return false
	})
	// The EndpointSlice controller publishes the Ready pod with its hostname.
	if _, ok := sandboxtest.Poll(30*time.Second, 250*time.Millisecond, func() bool {
		sl, err := cs.DiscoveryV1().EndpointSlices(other).List(ctx, metav1.ListOptions{LabelSelector: discoveryv1.LabelServiceName + "=workers"})
		if err != nil {
			return false
		}
		for _, s := range sl.Items {
			for _, e := range s.Endpoints {
				if e.Hostname != nil && *e.Hostname == "w-0" && e.Conditions.Ready != nil && *e.Conditions.Ready {
					return true
				}
			}
		}
		return false
	}); !ok {
		t.Fatal("the headless Service's EndpointSlice never listed w-0 Ready")
	}
	web, err := cs.CoreV1().Services(other).Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}

	podName := fmt.Sprintf("w-0.workers.%s.svc.cluster.local", other)
	script := fmt.Sprintf(`cat /etc/resolv.conf
for n in %s web.%s nosuch.%s.svc.cluster.local; do getent hosts $n; echo "$n rc=$?"; done`, podName, other, other)
	if _, err := cs.CoreV1().Pods(ns).Create(ctx, realPod("client", script), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitPod(t, cs, sb, ns, "client", 60*time.Second, func(p *corev1.Pod) bool {
		return p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed
	})
	log := podLog(t, cs, ns, "client")
	t.Logf("client's log:\n%s", log)
	for _, want := range []string{
		"nameserver 10.96.0.10\n",
		fmt.Sprintf("search %s.svc.cluster.local svc.cluster.local cluster.local\n", ns),
		"options ndots:5\n",
		w.Status.PodIP + " ", podName + " rc=0\n",
		web.Spec.ClusterIP + " ", fmt.Sprintf("web.%s.svc.cluster.local", other), fmt.Sprintf("web.%s rc=0\n", other),
		// getent's exit code 2: the key was not found.
		fmt.Sprintf("nosuch.%s.svc.cluster.local rc=2\n", other),
	} {
		if !strings.Contains(log, want) {
			t.Errorf("client's log lacks %q", want)
		}
	}
	if t.Failed() {
		dnsLog, _ := os.ReadFile(filepath.Join(sb.Dir, "realpods", "coredns.log"))
		t.Logf("agent:\n%s\ncoredns:\n%s", sb.ComponentLog("agent", 40), dnsLog)
	}
	kd, err := cs.CoreV1().Services("kube-system").Get(ctx, "kube-dns", metav1.GetOptions{})
	if err != nil || kd.Spec.ClusterIP != "10.96.0.10" {
		t.Errorf("kube-system/kube-dns: %v %+v, want ClusterIP 10.96.0.10", err, kd)
	}
}
