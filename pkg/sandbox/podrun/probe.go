package podrun

import (
	"context"
	"net"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// probe runs a readiness probe until ctx ends or the process does, and keeps Ready as the
// kubelet's prober does (pkg/kubelet/prober/worker.go): the first result after
// initialDelaySeconds, then one every periodSeconds; Ready after successThreshold successes in a
// row, not Ready after failureThreshold failures in a row. A tcpSocket probe connects from the
// host's network namespace (the node's) to the pod IP, as the kubelet does
// (pkg/probe/tcp/tcp.go). Other handlers are not run yet: the pod never becomes Ready, and its
// log says why.
func (p *Pod) probe(ctx context.Context, pr *corev1.Probe, c *corev1.Container, ip net.IP) {
	if pr.TCPSocket == nil {
		p.log.Write([]byte("podrun: only tcpSocket readiness probes run for real so far; this pod stays not Ready\n"))
		return
	}
	port, ok := probePort(pr.TCPSocket.Port, c)
	if !ok {
		p.log.Write([]byte("podrun: readiness probe port " + pr.TCPSocket.Port.String() + " is not a container port\n"))
		return
	}
	host := ip.String()
	if pr.TCPSocket.Host != "" {
		host = pr.TCPSocket.Host
	}
	addr := net.JoinHostPort(host, strconv.Itoa(port))
	secs := func(v, def int32) time.Duration {
		if v <= 0 {
			v = def
		}
		return time.Duration(v) * time.Second
	}
	period, timeout := secs(pr.PeriodSeconds, 10), secs(pr.TimeoutSeconds, 1)
	success, failure := int(max(pr.SuccessThreshold, 1)), int(pr.FailureThreshold)
	if failure <= 0 {
		failure = 3
	}
	wait := time.Duration(pr.InitialDelaySeconds) * time.Second
	var good, bad int
	for {
		select {
		case <-ctx.Done():
			return
		case <-p.done:
			return
		case <-time.After(wait):
		}
		wait = period
		d := net.Dialer{Timeout: timeout}
		conn, err := d.DialContext(ctx, "tcp", addr)
		if err == nil {
			conn.Close()
			good, bad = good+1, 0
			if good >= success {
				p.ready.Store(true)
			}
			continue
		}
		good, bad = 0, bad+1
		if bad >= failure {
			p.ready.Store(false)
		}
	}
}

// probePort resolves a probe's port, a number or the name of one of the container's ports.
func probePort(port intstr.IntOrString, c *corev1.Container) (int, bool) {
	if port.Type == intstr.Int {
		return port.IntValue(), port.IntValue() > 0
	}
	for _, cp := range c.Ports {
		if cp.Name == port.StrVal {
			return int(cp.ContainerPort), true
		}
	}
	return 0, false
}

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
