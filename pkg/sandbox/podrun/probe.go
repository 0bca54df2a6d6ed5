package podrun

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	utilio "k8s.io/utils/io"
)

// What the kubelet's probers read of a response body or an exec probe's output at most
// (k8s.io/kubernetes v1.37.2 pkg/probe/http/http.go maxRespBodyLength, pkg/probe/exec/exec.go
// maxReadLength).
const maxProbeOutput = 10 << 10

// probeUserAgent is the User-Agent of the kubelet's HTTP probes, "kube-probe/<major>.<minor>"
// of the kubelet's version (pkg/probe/http/request.go userAgent): here the Kubernetes version
// the sandbox runs (sandbox.KubernetesVersion).
const probeUserAgent = "kube-probe/1.36"

// outcome is one probe's result, the kubelet's probe.Result (pkg/probe/probe.go).
type outcome int

const (
	success outcome = iota
	// warning counts as a success; the kubelet records a ProbeWarning event with its message
	// (pkg/kubelet/prober/prober.go probe).
	warning
	failure
	// unknown is a prober error: the kubelet throws the result away (prober/worker.go doProbe).
	unknown
)

// check runs one probe with its timeout and says how it went and why.
type check func(ctx context.Context, timeout time.Duration) (outcome, string)

// probe runs a readiness probe until ctx ends or the process does, and keeps Ready as the
// kubelet's prober does (pkg/kubelet/prober/worker.go): the first result after
// initialDelaySeconds, then one every periodSeconds; Ready after successThreshold successes in a
// row, not Ready after failureThreshold failures in a row. Handlers run as the kubelet runs them
// (pkg/kubelet/prober/prober.go runProbe): tcpSocket and httpGet from the host's network
// namespace (the node's) to the pod IP, exec inside the container. A grpc probe is not run: the
// pod never becomes Ready, and its log says why. A failure or warning is written to the pod's
// log when its message differs from the last one written, where the kubelet records an event.
func (p *Pod) probe(ctx context.Context, pr *corev1.Probe, c *corev1.Container, ip net.IP) {
	run, msg := p.handler(pr, c, ip)
	if run == nil {
		p.log.Write([]byte("podrun: " + msg + "; this pod stays not Ready\n"))
		return
	}
	secs := func(v, def int32) time.Duration {
		if v <= 0 {
			v = def
		}
		return time.Duration(v) * time.Second
	}
	period, timeout := secs(pr.PeriodSeconds, 10), secs(pr.TimeoutSeconds, 1)
	toReady, toNotReady := int(max(pr.SuccessThreshold, 1)), int(pr.FailureThreshold)
	if toNotReady <= 0 {
		toNotReady = 3
	}
	wait := time.Duration(pr.InitialDelaySeconds) * time.Second
	var good, bad int
	var said string
	for {
		select {
		case <-ctx.Done():
			return
		case <-p.done:
			return
		case <-time.After(wait):
		}
		wait = period
		res, out := run(ctx, timeout)
		if ctx.Err() != nil {
			return
		}
		switch res {
		case success, warning:
			good, bad = good+1, 0
			if good >= toReady {
				p.ready.Store(true)
			}
		case failure:
			good, bad = 0, bad+1
			if bad >= toNotReady {
				p.ready.Store(false)
			}
		}
		line := ""
		switch res {
		case warning:
			line = "podrun: readiness probe warning: " + out
		case failure:
			line = "podrun: readiness probe failed: " + out
		case unknown:
			line = "podrun: readiness probe errored: " + out
		}
		if line != said && line != "" {
			p.log.Write([]byte(strings.TrimRight(line, "\n") + "\n"))
		}
		said = line
	}
}

// handler is the probe's check, or nil and why it cannot run: a port that is not the
// container's, a grpc probe, no handler.
func (p *Pod) handler(pr *corev1.Probe, c *corev1.Container, ip net.IP) (check, string) {
	switch {
	case pr.Exec != nil:
		// The command's $(VAR) are expanded from the container's static env values only
		// (kubecontainer.ExpandContainerCommandOnlyStatic): a valueFrom variable is empty.
		static := map[string]string{}
		for _, e := range c.Env {
			static[e.Name] = e.Value
		}
		lookup := func(k string) (string, bool) { v, ok := static[k]; return v, ok }
		var command []string
		for _, a := range pr.Exec.Command {
			command = append(command, expand(a, lookup))
		}
		return func(ctx context.Context, timeout time.Duration) (outcome, string) {
			return p.execProbe(ctx, command, timeout)
		}, ""
	case pr.HTTPGet != nil:
		req, err := httpProbeRequest(pr.HTTPGet, c, ip.String())
		if err != nil {
			return nil, "readiness probe httpGet: " + err.Error()
		}
		client := httpProbeClient()
		return func(ctx context.Context, timeout time.Duration) (outcome, string) {
			return httpProbe(ctx, client, req, timeout)
		}, ""
	case pr.TCPSocket != nil:
		port, ok := probePort(pr.TCPSocket.Port, c)
		if !ok {
			return nil, "readiness probe port " + pr.TCPSocket.Port.String() + " is not a container port"
		}
		host := ip.String()
		if pr.TCPSocket.Host != "" {
			host = pr.TCPSocket.Host
		}
		addr := net.JoinHostPort(host, strconv.Itoa(port))
		return func(ctx context.Context, timeout time.Duration) (outcome, string) {
			d := probeDialer()
			d.Timeout = timeout
			conn, err := d.DialContext(ctx, "tcp", addr)
			if err != nil {
				return failure, err.Error()
			}
			conn.Close()
			return success, ""
		}, ""
	case pr.GRPC != nil:
		return nil, "grpc readiness probes are not run here (the kubelet's gRPC health check client is not part of podrun)"
	}
	return nil, "the readiness probe has no handler (exec, httpGet, tcpSocket or grpc)"
}

// probePort resolves a probe's port, a number or the name of one of the container's ports
// (pkg/probe/util.go ResolveContainerPort).
func probePort(port intstr.IntOrString, c *corev1.Container) (int, bool) {
	if port.Type == intstr.Int {
		return port.IntValue(), port.IntValue() > 0 && port.IntValue() < 65536
	}
	for _, cp := range c.Ports {
		if cp.Name == port.StrVal {
			return int(cp.ContainerPort), cp.ContainerPort > 0 && cp.ContainerPort < 65536
		}
	}
	return 0, false
}

// probeDialer lingers 1 s on close instead of leaving sockets in TIME-WAIT, as the kubelet's
// probes do (pkg/probe/dialer_others.go ProbeDialer).
func probeDialer() *net.Dialer {
	return &net.Dialer{Control: func(_, _ string, c syscall.RawConn) error {
		return c.Control(func(fd uintptr) {
			_ = syscall.SetsockoptLinger(int(fd), syscall.SOL_SOCKET, syscall.SO_LINGER, &syscall.Linger{Onoff: 1, Linger: 1})
		})
	}}
}

// httpProbeRequest is the GET an httpGet probe sends (pkg/probe/http/request.go
// NewRequestForHTTPGetAction): scheme http unless HTTPS, the pod IP unless host is set, the port
// by number or container-port name, the path as given, the probe's headers, and the kubelet's
// User-Agent and Accept "*/*" unless the probe sets them (an empty Accept removes it); a Host
// header sets the request's host.
func httpProbeRequest(g *corev1.HTTPGetAction, c *corev1.Container, podIP string) (*http.Request, error) {
	scheme := strings.ToLower(string(g.Scheme))
	if scheme == "" {
		scheme = "http"
	}
	host := g.Host
	if host == "" {
		host = podIP
	}
	port, ok := probePort(g.Port, c)
	if !ok {
		return nil, fmt.Errorf("port %s is not a container port", g.Port.String())
	}
	u, err := url.Parse(g.Path)
	if err != nil {
		// The kubelet passes a path it cannot parse along as it is (request.go formatURL).
		u = &url.URL{Path: g.Path}
	}
	u.Scheme, u.Host = scheme, net.JoinHostPort(host, strconv.Itoa(port))
	req, err := http.NewRequest(http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, err
	}
	headers := http.Header{}
	for _, h := range g.HTTPHeaders {
		headers.Add(h.Name, h.Value)
	}
	if _, ok := headers["User-Agent"]; !ok {
		headers.Set("User-Agent", probeUserAgent)
	}
	if _, ok := headers["Accept"]; !ok {
		headers.Set("Accept", "*/*")
	} else if headers.Get("Accept") == "" {
		headers.Del("Accept")
	}
	req.Header = headers
	req.Host = headers.Get("Host")
	return req, nil
}

// httpProbeClient is the kubelet's HTTP prober (pkg/probe/http/http.go New with
// followNonLocalRedirects false, as pkg/kubelet/prober/prober.go makes it): no certificate
// check, no proxy, no keep-alive, no compression, and redirects followed only to the same host
// (10 at most); a redirect elsewhere ends the request with the redirect as the response.
func httpProbeClient() *http.Client {
	t := utilnet.SetTransportDefaults(&http.Transport{
		TLSClientConfig:    &tls.Config{InsecureSkipVerify: true}, //nolint:gosec // the kubelet does not verify a probe's certificate
		DisableKeepAlives:  true,
		Proxy:              http.ProxyURL(nil),
		DisableCompression: true,
		DialContext:        probeDialer().DialContext,
	})
	return &http.Client{Transport: t, CheckRedirect: func(req *http.Request, via []*http.Request) error {
		if req.URL.Hostname() != via[0].URL.Hostname() {
			return http.ErrUseLastResponse
		}
		if len(via) >= 10 {
			return errors.New("stopped after 10 redirects")
		}
		return nil
	}}
}

// httpProbe sends req within timeout and judges the answer as the kubelet does
// (pkg/probe/http/http.go DoHTTPProbe): 200 to 399 is a success, a 3xx (a redirect to another
// host, not followed) a warning, anything else or no answer a failure. At most 10 KiB of the
// body is read; a failure's message names the status code, never the body.
func httpProbe(ctx context.Context, client *http.Client, req *http.Request, timeout time.Duration) (outcome, string) {
	c := *client
	c.Timeout = timeout
	res, err := c.Do(req.Clone(ctx))
	if err != nil {
		return failure, err.Error()
	}
	defer res.Body.Close()
	b, err := utilio.ReadAtMost(res.Body, maxProbeOutput)
	if err != nil && !errors.Is(err, utilio.ErrLimitReached) {
		return failure, err.Error()
	}
	if res.StatusCode >= http.StatusOK && res.StatusCode < http.StatusBadRequest {
		if res.StatusCode >= http.StatusMultipleChoices {
			return warning, "Probe terminated redirects, Response body: " + string(b)
		}
		return success, ""
	}
	return failure, fmt.Sprintf("HTTP probe failed with statuscode: %d", res.StatusCode)
}

// execProbe runs command inside the container as a runtime's exec does (the kubelet's
// RunInContainer, CRI ExecSync): in the mount, UTS, IPC, network and PID namespaces of the
// container's process and its root, as its uid, gid and groups with its capability bounding set,
// environment and workingDir. Exit 0 is a success, any other a failure; past timeout the command
// is killed and the probe fails, as the kubelet does since 1.20 (ExecProbeTimeout, locked on in
// 1.35; pkg/probe/exec/exec.go, cri-client ExecSync's "timed out after").
func (p *Pod) execProbe(ctx context.Context, command []string, timeout time.Duration) (outcome, string) {
	if len(command) == 0 {
		return unknown, "exec probe without a command"
	}
	pid := p.containerPID()
	if pid == 0 {
		// The kubelet does not probe a container that is not running yet and counts a failure.
		return failure, "the container is not running"
	}
	args := append([]string{"--target", strconv.Itoa(pid), "--mount", "--uts", "--ipc", "--net", "--pid", "--root", "--"}, p.inPod...)
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "nsenter", append(args, command...)...)
	cmd.Env, cmd.Dir = p.env, "/"
	out := &limitedBuffer{max: maxProbeOutput}
	cmd.Stdout, cmd.Stderr = out, out
	// nsenter forks into the PID namespace; the command and what it starts stay in nsenter's
	// process group, which the timeout kills whole.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = time.Second
	err := cmd.Run()
	if err != nil && errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return failure, fmt.Sprintf("command timed out: %q timed out after %s", strings.Join(command, " "), timeout)
	}
	var exit *exec.ExitError
	switch {
	case err == nil:
		return success, out.String()
	case errors.As(err, &exit):
		return failure, out.String()
	}
	return unknown, err.Error()
}

// containerPID is the pid (in the host's PID namespace) of the container's process once it runs
// in the pod's root, 0 before: the shim is PID 1 of the pod's namespaces from the start but
// pivots into the pod's root only when every mount is made.
func (p *Pod) containerPID() int {
	if p.cmd == nil || p.cmd.Process == nil {
		return 0
	}
	pid := firstChild(p.cmd.Process.Pid)
	if pid <= 0 {
		return 0
	}
	var host, pod syscall.Stat_t
	if syscall.Stat("/", &host) != nil || syscall.Stat(fmt.Sprintf("/proc/%d/root/", pid), &pod) != nil {
		return 0
	}
	if host.Dev == pod.Dev && host.Ino == pod.Ino {
		return 0
	}
	return pid
}

// limitedBuffer keeps the first max bytes written to it and takes the rest without keeping it
// (the kubelet's ioutils.LimitWriter).
type limitedBuffer struct {
	buf bytes.Buffer
	max int
}

func (l *limitedBuffer) Write(b []byte) (int, error) {
	if room := l.max - l.buf.Len(); room > 0 {
		l.buf.Write(b[:min(len(b), room)])
	}
	return len(b), nil
}

func (l *limitedBuffer) String() string { return l.buf.String() }

// WaitReady waits until the pod is Ready, the process ends, or ctx is done.
func (p *Pod) WaitReady(ctx context.Context) bool {
	for {
		if p.Ready() {
			return true
		}
		select {
		case <-ctx.Done():
			return false
		case <-p.done:
			return false
		case <-time.After(100 * time.Millisecond):
		}
	}
}
