package sandbox

import (
	"context"
	_ "embed"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/ain-hpc/ain/pkg/sandbox/podrun"
)

// CoreDNSVersion is the CoreDNS the real pods resolve through (github.com/coredns/coredns, served
// by the module proxy at this version).
const CoreDNSVersion = "v1.12.4"

// corednsMain is the wrapper main of the CoreDNS build (why: see the file's comment).
//
//go:embed data/wrappers/coredns.go.txt
var corednsMain []byte

// corednsComponent is CoreDNS with its kubernetes plugin, which real pods resolve through
// (prepareRealPods). It is built after Kubernetes, against Kubernetes' dependency versions
// (kubernetesPins: k8s.io/client-go, api and apimachinery at KubernetesStagingVer instead of
// CoreDNS's v0.34.0, and the rest as minimums): with the same versions and flags, the
// Go build cache already holds those packages from the Kubernetes build, so CoreDNS compiles
// little more than itself and its plugins (with the plugins cut to those the Corefile uses; see
// the wrapper main).
func corednsComponent() Component {
	return Component{Name: "coredns", Version: CoreDNSVersion, Rev: "k8s" + KubernetesStagingVer, Binaries: []string{"coredns"}, build: func(ctx context.Context, b *builder, dir string) error {
		pins, _, err := kubernetesPins(ctx, b)
		if err != nil {
			return err
		}
		_, err = buildWrapped(ctx, b, dir, "github.com/coredns/coredns", CoreDNSVersion, pins, nil, corednsMain, map[string]string{"coredns": "."})
		return err
	}}
}

// The cluster DNS Service, as kubeadm makes it: kube-dns in kube-system, at the tenth address of
// the Service range (kubeadm's GetDNSIP; up.go's --service-cluster-ip-range is 10.96.0.0/16), the
// address a kubelet's --cluster-dns names and writes into each pod's resolv.conf.
const (
	clusterDNSIP     = "10.96.0.10"
	clusterDNSDomain = podrun.DefaultClusterDomain
)

// clusterDNS is CoreDNS serving the cluster's names to the real pods.
type clusterDNS struct {
	cmd  *exec.Cmd
	done chan struct{}
}

// corefile serves the cluster domain and the reverse zones from the API server (Services,
// EndpointSlices, pods), as a cluster's CoreDNS does (kubeadm's Corefile: `kubernetes
// cluster.local in-addr.arpa ip6.arpa { pods insecure }`), on addr only. Other names are
// refused: this machine has no upstream to forward them to.
func corefile(addr, kubeconfig string) string {
	return fmt.Sprintf(`%[3]s:53 in-addr.arpa:53 ip6.arpa:53 {
    bind %[1]s
    errors
    kubernetes %[3]s in-addr.arpa ip6.arpa {
        kubeconfig %[2]s
        pods insecure
    }
}
`, addr, kubeconfig, clusterDNSDomain)
}

// startClusterDNS makes the cluster DNS Service's IP an address of the pods' bridge (the pods'
// default route leads there: a kube-proxy's DNAT to the CoreDNS pod, in one step), creates the
// kube-dns Service, and starts CoreDNS (bin) on that address. It returns once CoreDNS answers
// for the Service's own name, so every real pod started afterwards resolves.
func startClusterDNS(ctx context.Context, cs kubernetes.Interface, n *podrun.Network, bin, dir, kubeconfig string, log io.Writer) (*clusterDNS, error) {
	if err := exec.Command("ip", "addr", "add", clusterDNSIP+"/32", "dev", n.Bridge).Run(); err != nil {
		return nil, fmt.Errorf("cluster DNS: adding %s to %s: %w", clusterDNSIP, n.Bridge, err)
	}
	if err := ensureKubeDNSService(ctx, cs); err != nil {
		return nil, err
	}
	conf := filepath.Join(dir, "Corefile")
	if err := os.WriteFile(conf, []byte(corefile(clusterDNSIP, kubeconfig)), 0o644); err != nil {
		return nil, err
	}
	logf, err := os.OpenFile(filepath.Join(dir, "coredns.log"), os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
	if err != nil {
		return nil, err
	}
	defer logf.Close()
	cmd := exec.Command(bin, "-conf", conf)
	cmd.Dir = dir
	cmd.Stdout, cmd.Stderr = logf, logf
	// CoreDNS goes with the agent even when the agent is killed (started from the spawner's
	// thread: Pdeathsig fires when the starting thread exits, see proc.go).
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
	onSpawnerThread(func() { err = cmd.Start() })
	if err != nil {
		return nil, fmt.Errorf("cluster DNS: %w", err)
	}
	d := &clusterDNS{cmd: cmd, done: make(chan struct{})}
	go func() {
		err := cmd.Wait()
		fmt.Fprintf(log, "sandbox agent: cluster DNS: coredns (pid %d) ended: %v\n", cmd.Process.Pid, err)
		close(d.done)
	}()
	// The kubernetes plugin answers once its informers have synced (or after 5 s without).
	r := &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, network, _ string) (net.Conn, error) {
		var dl net.Dialer
		return dl.DialContext(ctx, network, net.JoinHostPort(clusterDNSIP, "53"))
	}}
	name := "kube-dns.kube-system.svc." + clusterDNSDomain
	deadline := time.Now().Add(30 * time.Second)
	for {
		qctx, cancel := context.WithTimeout(ctx, time.Second)
		addrs, err := r.LookupHost(qctx, name)
		cancel()
		if err == nil && len(addrs) == 1 && addrs[0] == clusterDNSIP {
			return d, nil
		}
		select {
		case <-d.done:
			log, _ := os.ReadFile(filepath.Join(dir, "coredns.log"))
			return nil, fmt.Errorf("cluster DNS: coredns exited: %s", strings.TrimSpace(string(log)))
		case <-ctx.Done():
			d.stop()
			return nil, ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			d.stop()
			log, _ := os.ReadFile(filepath.Join(dir, "coredns.log"))
			return nil, fmt.Errorf("cluster DNS: %s did not resolve through coredns at %s within 30s (last: %v %v); its log:\n%s", name, clusterDNSIP, addrs, err, log)
		}
	}
}

// ensureKubeDNSService creates kube-system/kube-dns at clusterDNSIP as kubeadm's CoreDNS
// addon does (ports dns 53/UDP, dns-tcp 53/TCP, label k8s-app=kube-dns). It has no selector:
// CoreDNS runs on the host, not as a pod.
func ensureKubeDNSService(ctx context.Context, cs kubernetes.Interface) error {
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "kube-dns", Namespace: metav1.NamespaceSystem,
			Labels: map[string]string{"k8s-app": "kube-dns", "kubernetes.io/name": "CoreDNS"}},
		Spec: corev1.ServiceSpec{ClusterIP: clusterDNSIP, Ports: []corev1.ServicePort{
			{Name: "dns", Port: 53, Protocol: corev1.ProtocolUDP},
			{Name: "dns-tcp", Port: 53, Protocol: corev1.ProtocolTCP},
		}},
	}
	_, err := cs.CoreV1().Services(metav1.NamespaceSystem).Create(ctx, svc, metav1.CreateOptions{FieldManager: fieldManager})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("cluster DNS: the kube-dns Service: %w", err)
	}
	return nil
}

// stop ends CoreDNS by its pid: SIGTERM, then SIGKILL after 5 s.
func (d *clusterDNS) stop() {
	if d == nil {
		return
	}
	_ = d.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-d.done:
	case <-time.After(5 * time.Second):
		_ = d.cmd.Process.Kill()
		<-d.done
	}
}

// ensureCoreDNS builds CoreDNS into cache when it is missing and links it into dir, where the
// agent starts it from.
func ensureCoreDNS(ctx context.Context, cache, dir string, w io.Writer) error {
	c := corednsComponent()
	if err := ensure(ctx, cache, []Component{c}, w, nil); err != nil {
		return err
	}
	link := filepath.Join(dir, "coredns")
	_ = os.Remove(link)
	return os.Symlink(c.Bin(cache, "coredns"), link)
}
