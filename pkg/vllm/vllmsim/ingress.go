package vllmsim

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"time"

	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// IngressProxy is a loopback-only stand-in for an ingress controller on the simulated
// cluster (which has none): it serves ONE Ingress as a controller would, from the objects in
// the API server. It terminates TLS with the certificate of the Secret the Ingress names,
// routes only the Ingress's rules (host, and paths with their Exact or Prefix semantics) and
// answers everything else 404 like ingress-nginx's default backend, forwards without
// buffering (proxy-buffering off), and publishes its address in the Ingress's
// status.loadBalancer, where clients look for it. The backend is the simulated model server
// that stands for the Service's pods. It re-reads the Ingress about once a second, so a
// changed or deleted Ingress is honoured.
type IngressProxy struct {
	Kube      kubernetes.Interface
	Namespace string
	Name      string
	// Backend is the URL requests that match a rule go to (the simulated model server).
	Backend string

	mu      sync.Mutex
	ing     *networkingv1.Ingress
	read    time.Time
	addr    string
	backend *httputil.ReverseProxy
}

// Run waits for the Ingress and its TLS Secret to exist, serves on 127.0.0.1 (a free port)
// until ctx ends, and sends the address on ready once it listens.
func (p *IngressProxy) Run(ctx context.Context, ready chan<- string) error {
	u, err := url.Parse(p.Backend)
	if err != nil {
		return err
	}
	p.backend = httputil.NewSingleHostReverseProxy(u)
	p.backend.FlushInterval = -1 // stream every chunk as it comes
	var ing *networkingv1.Ingress
	var cert tls.Certificate
	for {
		ing, err = p.Kube.NetworkingV1().Ingresses(p.Namespace).Get(ctx, p.Name, metav1.GetOptions{})
		if err == nil && len(ing.Spec.TLS) > 0 {
			sec, serr := p.Kube.CoreV1().Secrets(p.Namespace).Get(ctx, ing.Spec.TLS[0].SecretName, metav1.GetOptions{})
			if serr == nil {
				if cert, err = tls.X509KeyPair(sec.Data["tls.crt"], sec.Data["tls.key"]); err != nil {
					return fmt.Errorf("TLS Secret %s: %w", sec.Name, err)
				}
				break
			}
		} else if err != nil && !apierrors.IsNotFound(err) {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(300 * time.Millisecond):
		}
	}
	p.ing, p.read = ing, time.Now()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	p.addr = ln.Addr().String()
	if err := p.publish(ctx); err != nil {
		ln.Close()
		return err
	}
	srv := &http.Server{Handler: p, ReadHeaderTimeout: 10 * time.Second,
		TLSConfig: &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}}
	if ready != nil {
		ready <- p.addr
	}
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}()
	if err := srv.ServeTLS(ln, "", ""); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// publish writes the proxy's address into the Ingress's status, as a controller does.
func (p *IngressProxy) publish(ctx context.Context) error {
	host, port, _ := net.SplitHostPort(p.addr)
	var portNum int32
	fmt.Sscan(port, &portNum)
	ing := p.ing.DeepCopy()
	ing.Status.LoadBalancer.Ingress = []networkingv1.IngressLoadBalancerIngress{{IP: host,
		Ports: []networkingv1.IngressPortStatus{{Port: portNum, Protocol: "TCP"}}}}
	_, err := p.Kube.NetworkingV1().Ingresses(p.Namespace).UpdateStatus(ctx, ing, metav1.UpdateOptions{})
	return err
}

// current returns the Ingress, re-read when the copy is older than a second; nil when gone.
func (p *IngressProxy) current(ctx context.Context) *networkingv1.Ingress {
	p.mu.Lock()
	defer p.mu.Unlock()
	if time.Since(p.read) > time.Second {
		ing, err := p.Kube.NetworkingV1().Ingresses(p.Namespace).Get(ctx, p.Name, metav1.GetOptions{})
		switch {
		case err == nil:
			p.ing = ing
		case apierrors.IsNotFound(err):
			p.ing = nil
		}
		p.read = time.Now()
	}
	return p.ing
}

func (p *IngressProxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	ing := p.current(r.Context())
	if ing == nil || !Routes(ing, r.Host, r.URL.Path) {
		// ingress-nginx's default backend.
		http.Error(w, "default backend - 404", http.StatusNotFound)
		return
	}
	p.backend.ServeHTTP(w, r)
}

// Routes reports whether the Ingress sends a request for host and path to a backend: a rule
// whose host matches (a rule without host matches any), and a path that matches by its type:
// Exact, the whole path; Prefix, whole path elements (/v1 matches /v1 and /v1/models, not
// /v10); ImplementationSpecific as Prefix (ingress-nginx's reading).
func Routes(ing *networkingv1.Ingress, host, path string) bool {
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	for _, rule := range ing.Spec.Rules {
		if rule.Host != "" && !strings.EqualFold(rule.Host, host) {
			continue
		}
		if rule.HTTP == nil {
			continue
		}
		for _, hp := range rule.HTTP.Paths {
			exact := hp.PathType != nil && *hp.PathType == networkingv1.PathTypeExact
			switch {
			case exact && path == hp.Path:
				return true
			case !exact && prefixMatch(hp.Path, path):
				return true
			}
		}
	}
	return false
}

func prefixMatch(prefix, path string) bool {
	prefix = strings.TrimSuffix(prefix, "/")
	if prefix == "" {
		return true
	}
	return path == prefix || strings.HasPrefix(path, prefix+"/")
}
