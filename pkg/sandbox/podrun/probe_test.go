package podrun_test

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/ain-hpc/ain/pkg/sandbox/podrun"
	"github.com/ain-hpc/ain/pkg/testenv"
)

// probeServer is the pod's program in the probe tests: an HTTP server on 8080 (HTTPS when CERT
// and KEY name a certificate) whose answers change once the test GETs /arm, which creates the
// file $READY in the pod's own root.
//
//	/status  500 until armed, then 200; prints the probe's User-Agent, Accept and X-Probe
//	/slow    answers after 3 s until armed, then at once
//	/away    302 to another host
//	/local   302 to /status on the same host
//	/saw     what the exec probe wrote to /tmp/saw
const probeServer = `
import http.server, os, ssl, time
ready = os.environ["READY"]
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        armed = os.path.exists(ready)
        body, code, loc = b"", 404, None
        if self.path == "/arm":
            open(ready, "w").close()
            code = 200
        elif self.path == "/status":
            print("probe ua=%s accept=%s x-probe=%s" % (self.headers.get("User-Agent"), self.headers.get("Accept"), self.headers.get("X-Probe")), flush=True)
            code = 200 if armed else 500
        elif self.path == "/slow":
            if not armed:
                time.sleep(3)
            code = 200
        elif self.path == "/away":
            code, loc = 302, "http://elsewhere.invalid/status"
        elif self.path == "/local":
            code, loc = 302, "/status"
        elif self.path == "/saw":
            code, body = 200, open("/tmp/saw", "rb").read() if os.path.exists("/tmp/saw") else b""
        self.send_response(code)
        if loc:
            self.send_header("Location", loc)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def log_message(self, *args):
        pass
srv = http.server.ThreadingHTTPServer(("", 8080), H)
if os.environ.get("CERT"):
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(os.environ["CERT"], os.environ["KEY"])
    srv.socket = ctx.wrap_socket(srv.socket, server_side=True)
print("listening", flush=True)
srv.serve_forever()
`

// probePod is a pod running probeServer with the readiness probe pr (period 1 s, timeout 1 s
// unless pr sets them).
func probePod(name string, pr corev1.ProbeHandler, env ...corev1.EnvVar) *corev1.Pod {
	pod := simplePod(name, "/usr/bin/python3", "-u", "-c", probeServer)
	c := &pod.Spec.Containers[0]
	c.Ports = []corev1.ContainerPort{{Name: "http", ContainerPort: 8080}}
	c.Env = append([]corev1.EnvVar{{Name: "READY", Value: "/tmp/ready-" + name}}, env...)
	c.ReadinessProbe = &corev1.Probe{ProbeHandler: pr, PeriodSeconds: 1, TimeoutSeconds: 1, FailureThreshold: 1}
	return pod
}

func httpGetProbe(path string) corev1.ProbeHandler {
	return corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: path, Port: intstr.FromInt32(8080)}}
}

// getPod GETs path from the pod's server from the host (HTTPS without a certificate check).
func getPod(t *testing.T, scheme string, ip net.IP, path string) string {
	t.Helper()
	c := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} //nolint:gosec // the test's self-signed certificate
	res, err := c.Get(scheme + "://" + net.JoinHostPort(ip.String(), "8080") + path)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	if res.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s", path, res.Status)
	}
	return string(b)
}

// startProbePod starts pod and waits until its server listens.
func startProbePod(t *testing.T, c *cluster, ip net.IP, pod *corev1.Pod) *podrun.Pod {
	t.Helper()
	p := start(t, podrun.Spec{Pod: pod, IP: ip, Network: c.net})
	testenv.WaitListening(t, net.JoinHostPort(ip.String(), "8080"), p.Log)
	return p
}

// notReadyThenReady checks that p stays not Ready for d, then, once armed, becomes Ready.
func notReadyThenReady(t *testing.T, p *podrun.Pod, scheme string, ip net.IP, d time.Duration) {
	t.Helper()
	time.Sleep(d)
	if p.Ready() {
		t.Fatalf("Ready before the server was armed; log:\n%s", p.Log())
	}
	getPod(t, scheme, ip, "/arm")
	waitReady(t, p)
}

func waitReady(t *testing.T, p *podrun.Pod) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if !p.WaitReady(ctx) {
		t.Fatalf("not Ready within 10 s; log:\n%s", p.Log())
	}
}

func wantLog(t *testing.T, p *podrun.Pod, lines ...string) {
	t.Helper()
	log := p.Log()
	for _, l := range lines {
		if !strings.Contains(log, l) {
			t.Errorf("log lacks %q:\n%s", l, log)
		}
	}
}

// httpGet probes run from the host's namespace to the pod IP with the kubelet's semantics:
// Ready only while the answer is 200..399, the kubelet's User-Agent and Accept and the probe's
// headers sent, the port by name, HTTPS without a certificate check, a redirect to the same host
// followed, a redirect to another host a success with a warning, an answer slower than
// timeoutSeconds a failure.
func TestHTTPGetReadiness(t *testing.T) {
	progs := needRoot(t, "python3", "openssl")
	c := newCluster(t)
	dir := t.TempDir()
	cert, key := filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	if out, err := exec.Command(progs["openssl"], "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
		"-nodes", "-days", "1", "-subj", "/CN=probe", "-keyout", key, "-out", cert).CombinedOutput(); err != nil {
		t.Fatalf("openssl: %v: %s", err, out)
	}
	status := httpGetProbe("/status")
	status.HTTPGet.Port = intstr.FromString("http")
	status.HTTPGet.HTTPHeaders = []corev1.HTTPHeader{{Name: "X-Probe", Value: "yes"}}
	https := httpGetProbe("/status")
	https.HTTPGet.Scheme = corev1.URISchemeHTTPS
	for _, tc := range []struct {
		name   string
		scheme string
		pr     corev1.ProbeHandler
		env    []corev1.EnvVar
		// notReady is how long the pod must stay not Ready before the server is armed; 0: it
		// must become Ready unarmed.
		notReady time.Duration
		log      []string
	}{
		{"status", "http", status, nil, 2500 * time.Millisecond, []string{
			"probe ua=kube-probe/1.36 accept=*/* x-probe=yes\n",
			"podrun: readiness probe failed: HTTP probe failed with statuscode: 500\n"}},
		{"https", "https", https, []corev1.EnvVar{{Name: "CERT", Value: cert}, {Name: "KEY", Value: key}}, 2500 * time.Millisecond, nil},
		// Followed: the 500 of /status counts, not the redirect.
		{"redirect-same-host", "http", httpGetProbe("/local"), nil, 2500 * time.Millisecond, nil},
		// Not followed (elsewhere.invalid would not resolve): Ready, with the kubelet's warning.
		{"redirect-other-host", "http", httpGetProbe("/away"), nil, 0, []string{
			"podrun: readiness probe warning: Probe terminated redirects, Response body: \n"}},
		// /slow answers after 3 s: past the 1 s timeout, but in the wait if the timeout were
		// not kept.
		{"timeout", "http", httpGetProbe("/slow"), nil, 3500 * time.Millisecond, []string{
			"(Client.Timeout exceeded while awaiting headers)\n"}},
	} {
		ip := c.ip()
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p := startProbePod(t, c, ip, probePod("probe-"+tc.name, tc.pr, tc.env...))
			if tc.notReady > 0 {
				notReadyThenReady(t, p, tc.scheme, ip, tc.notReady)
			} else {
				waitReady(t, p)
			}
			wantLog(t, p, tc.log...)
		})
	}
}

// An exec probe runs inside the container as the container's process: its uid and groups, its
// workingDir, its environment, its hostname, its root (the file it tests exists only in the
// pod's writable layer) and its PID namespace (PID 1 is the server); the command's $(VAR) are
// expanded from static env values only. Exit 0 is Ready; a command past timeoutSeconds is
// killed and fails.
func TestExecReadiness(t *testing.T) {
	needRoot(t, "python3")
	c := newCluster(t)
	saw := `echo "uid=$(id -u) groups=$(id -G) pwd=$(pwd) host=$(hostname) pid1=$(head -c 22 /proc/1/cmdline | tr '\0' ' ')` +
		` env=$MARK static=$(READY) fromfield=[$(MARK)]" > /tmp/saw; test -f $(READY)`
	ip, ip2 := c.ip(), c.ip()
	t.Run("identity", func(t *testing.T) {
		t.Parallel()
		pod := probePod("probe-exec", corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"/bin/sh", "-c", saw}}},
			corev1.EnvVar{Name: "MARK", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}})
		pod.Spec.Hostname = "exec-0"
		pod.Spec.SecurityContext = &corev1.PodSecurityContext{RunAsUser: ptr.To[int64](1234), RunAsGroup: ptr.To[int64](2345), SupplementalGroups: []int64{3456}}
		pod.Spec.Containers[0].WorkingDir = "/tmp"
		p := startProbePod(t, c, ip, pod)
		notReadyThenReady(t, p, "http", ip, 2500*time.Millisecond)
		got := getPod(t, "http", ip, "/saw")
		want := "uid=1234 groups=2345 3456 pwd=/tmp host=exec-0 pid1=/usr/bin/python3 -u -c env=probe-exec static=/tmp/ready-probe-exec fromfield=[]\n"
		if got != want {
			t.Errorf("the exec probe saw\n%s\nwant\n%s", got, want)
		}
		if _, err := os.Stat("/tmp/ready-probe-exec"); !os.IsNotExist(err) {
			t.Errorf("the pod's ready file is on the host: %v", err)
		}
	})
	t.Run("timeout", func(t *testing.T) {
		t.Parallel()
		ip := ip2
		p := startProbePod(t, c, ip, probePod("probe-exec-timeout", corev1.ProbeHandler{Exec: &corev1.ExecAction{
			Command: []string{"/bin/sh", "-c", "test -f $(READY) || exec sleep 30"}}}))
		time.Sleep(3500 * time.Millisecond)
		// One probe a second, each killed after 1 s: at most one sleep at a time.
		sleeps := 0
		for _, pid := range p.ProcessesLeft() {
			if comm, _ := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid)); string(comm) == "sleep\n" {
				sleeps++
			}
		}
		if sleeps > 1 {
			t.Errorf("%d probe commands running: the timeout does not kill them", sleeps)
		}
		notReadyThenReady(t, p, "http", ip, 0)
		wantLog(t, p, `podrun: readiness probe failed: command timed out: "/bin/sh -c test -f /tmp/ready-probe-exec-timeout || exec sleep 30" timed out after 1s`)
	})
}

// A grpc probe is not run: the pod stays not Ready and its log says so.
func TestGRPCReadinessNotRun(t *testing.T) {
	needRoot(t)
	c := newCluster(t)
	pod := simplePod("probe-grpc", "/bin/sh", "-c", "sleep 30")
	pod.Spec.Containers[0].ReadinessProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{GRPC: &corev1.GRPCAction{Port: 8080}}, PeriodSeconds: 1}
	p := start(t, podrun.Spec{Pod: pod, IP: c.ip(), Network: c.net})
	deadline := time.Now().Add(5 * time.Second)
	for !strings.Contains(p.Log(), "grpc readiness probes are not run") {
		if time.Now().After(deadline) {
			t.Fatalf("no log line about the grpc probe:\n%s", p.Log())
		}
		time.Sleep(50 * time.Millisecond)
	}
	time.Sleep(1500 * time.Millisecond)
	if p.Ready() {
		t.Error("Ready with a grpc probe that is not run")
	}
}
