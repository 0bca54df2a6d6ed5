package vllm

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/portforward"
	"k8s.io/client-go/transport/spdy"
)

// Discovery finds the endpoint of a model server `ain serve` deployed: its HTTPS ingress, the
// way clients are meant to reach it. A port-forward to one pod is used only when the caller
// allows it (AllowPortForward): it goes through the API server to a single replica, so it
// measures neither the ingress nor the Service's balancing (kubernetes#78446: port-forward is
// not built for load).
type Discovery struct {
	Cluster *Cluster
	Config  *rest.Config
	// Reachable checks a candidate endpoint (GET /health with the client's TLS settings).
	Reachable func(ctx context.Context, ep Endpoint) error
	// AllowPortForward permits the fallback to a port-forward when the ingress does not answer.
	AllowPortForward bool
	// Log receives one line saying which way was taken and why.
	Log io.Writer
}

// Endpoint is where a model server was found.
type Endpoint struct {
	URL string
	// Via is "ingress", "gateway" (a Gateway API route) or "port-forward".
	Via string
	// Pod is the one pod a port-forward reaches.
	Pod string
	// CAPEM is the CA of the self-signed certificate `ain serve` created for the ingress (the
	// TLS Secret's ca.crt), to trust besides the system's; CAName says where it is from.
	CAPEM  []byte
	CAName string
	// ConnectTo is the ingress controller's published address, used when the ingress host
	// does not resolve from here (curl --connect-to); empty to resolve the host.
	ConnectTo string
	// Stop ends the port-forward (a no-op otherwise).
	Stop func()
	// Server is the model server found (Discovery), whose API key Cluster.APIKey reads.
	Server string
}

// NoModelServerError says no model server is deployed in the namespace.
type NoModelServerError struct{ Namespace string }

func (e *NoModelServerError) Error() string {
	return fmt.Sprintf("no model server deployed in namespace %s", e.Namespace)
}

// AmbiguousError says several model servers are deployed and none was named.
type AmbiguousError struct {
	Namespace string
	Names     []string
}

func (e *AmbiguousError) Error() string {
	return fmt.Sprintf("several model servers in namespace %s (%s): say which", e.Namespace, strings.Join(e.Names, ", "))
}

// NoReadyReplicaError is a model server none of whose replicas is ready.
type NoReadyReplicaError struct {
	Name, Namespace string
	Ready, Desired  int32
}

func (e *NoReadyReplicaError) Error() string {
	return fmt.Sprintf("model server %s has no ready replica (%d/%d)", e.Name, e.Ready, e.Desired)
}

// IngressUnreachableError says the entry (ingress or Gateway) did not answer and no
// port-forward was allowed.
type IngressUnreachableError struct {
	Name, URL string
	Err       error
	// Entry is "ingress" (also when empty) or "Gateway NAMESPACE/NAME"; Why says why it has
	// no URL yet, when the route's status tells.
	Entry, Why string
}

func (e *IngressUnreachableError) Error() string {
	entry := cmp.Or(e.Entry, "ingress")
	switch {
	case e.URL == "" && e.Why != "":
		return fmt.Sprintf("model server %s has no address yet: %s", e.Name, e.Why)
	case e.URL == "":
		return fmt.Sprintf("model server %s has no %s address yet", e.Name, entry)
	}
	return fmt.Sprintf("the %s %s of model server %s does not answer from here: %v", entry, e.URL, e.Name, e.Err)
}
func (e *IngressUnreachableError) Unwrap() error { return e.Err }

// Endpoint returns where to reach the model server name ("" picks the only one).
func (d *Discovery) Endpoint(ctx context.Context, name string) (Endpoint, error) {
	ep := Endpoint{Stop: func() {}}
	all, err := d.Cluster.List(ctx, name)
	if err != nil {
		return ep, err
	}
	switch {
	case len(all) == 0 && name != "":
		return ep, &NotFoundError{Name: name, Namespace: d.Cluster.Namespace}
	case len(all) == 0:
		return ep, &NoModelServerError{Namespace: d.Cluster.Namespace}
	case len(all) > 1:
		names := make([]string, len(all))
		for i, s := range all {
			names[i] = s.Name
		}
		return ep, &AmbiguousError{Namespace: d.Cluster.Namespace, Names: names}
	}
	return d.EndpointOf(ctx, all[0])
}

// EndpointOf is Endpoint for a model server already listed (ain serve status probes each
// one it lists without listing them again).
func (d *Discovery) EndpointOf(ctx context.Context, st ServingStatus) (Endpoint, error) {
	ep := Endpoint{Stop: func() {}, Server: st.Name}
	entry, via, why := "ingress", "ingress", ""
	if r := st.Route; r != nil {
		entry, via, why = "Gateway "+r.Gateway, "gateway", r.Problem
		if r.Problem != "" && !r.Pending {
			// Waiting would not help: the route is refused; say why, as its controller did.
			return ep, &RouteError{Server: st.Name, Route: *r}
		}
	}
	var ingErr error
	if st.URL != "" {
		cand := Endpoint{URL: st.URL, Via: via, Stop: ep.Stop, Server: st.Name}
		if st.TLSSecret != "" {
			if ca := d.Cluster.IngressCA(ctx, st.TLSSecret); len(ca) > 0 {
				cand.CAPEM, cand.CAName = ca, "the ca.crt of Secret "+st.TLSSecret
			}
		}
		if d.Reachable == nil {
			return cand, nil
		}
		if ingErr = d.Reachable(ctx, cand); ingErr == nil {
			d.logf("endpoint: %s (the %s of model server %s)\n", st.URL, entry, st.Name)
			return cand, nil
		}
		if u, err := url.Parse(st.URL); err == nil && st.Address != "" && u.Host != st.Address {
			// The host may have no DNS record (yet): connect to the address the controller
			// published, still verifying the certificate for the host.
			cand.ConnectTo = st.Address
			if err := d.Reachable(ctx, cand); err == nil {
				d.logf("endpoint: %s (the %s of model server %s, at its published address %s: the host does not answer by name from here)\n", st.URL, entry, st.Name, st.Address)
				return cand, nil
			}
		}
	}
	if !d.AllowPortForward {
		ue := &IngressUnreachableError{Name: st.Name, URL: st.URL, Err: ingErr, Why: why}
		if via == "gateway" {
			ue.Entry = entry
		}
		return ep, ue
	}
	if st.URL != "" {
		d.logf("note: the %s %s does not answer from here (%v); using a port-forward\n", entry, st.URL, ingErr)
	}
	for _, r := range st.Replicas {
		for _, p := range r.Pods {
			if p.Ready && ep.Pod == "" {
				ep.Pod = p.Name
			}
		}
	}
	if ep.Pod == "" {
		return ep, &NoReadyReplicaError{Name: st.Name, Namespace: st.Namespace, Ready: st.Ready, Desired: st.Desired}
	}
	local, stop, err := d.forward(ctx, ep.Pod)
	if err != nil {
		return ep, fmt.Errorf("port-forward to pod %s: %w", ep.Pod, err)
	}
	ep.URL, ep.Via, ep.Stop = "http://"+local, "port-forward", stop
	d.logf("endpoint: %s (port-forward through the API server to pod %s of %s: one replica, not the ingress nor the Service's balancing)\n", ep.URL, ep.Pod, st.Name)
	return ep, nil
}

func (d *Discovery) logf(format string, args ...any) {
	if d.Log != nil {
		fmt.Fprintf(d.Log, format, args...)
	}
}

// forward opens a port-forward from 127.0.0.1:<free port> to the pod's port 8000.
func (d *Discovery) forward(ctx context.Context, pod string) (string, func(), error) {
	if d.Config == nil {
		return "", nil, fmt.Errorf("no cluster configuration")
	}
	transport, upgrader, err := spdy.RoundTripperFor(d.Config)
	if err != nil {
		return "", nil, err
	}
	u := d.Cluster.Kube.CoreV1().RESTClient().Post().Resource("pods").Namespace(d.Cluster.Namespace).Name(pod).SubResource("portforward").URL()
	dialer := spdy.NewDialer(upgrader, &http.Client{Transport: transport}, http.MethodPost, u)
	stopCh, readyCh := make(chan struct{}), make(chan struct{})
	fw, err := portforward.NewOnAddresses(dialer, []string{"127.0.0.1"}, []string{"0:8000"}, stopCh, readyCh, io.Discard, io.Discard)
	if err != nil {
		return "", nil, err
	}
	errCh := make(chan error, 1)
	go func() { errCh <- fw.ForwardPorts() }()
	stop := func() {
		select {
		case <-stopCh:
		default:
			close(stopCh)
		}
	}
	select {
	case <-readyCh:
	case err := <-errCh:
		return "", nil, err
	case <-ctx.Done():
		stop()
		return "", nil, ctx.Err()
	}
	ports, err := fw.GetPorts()
	if err != nil || len(ports) == 0 {
		stop()
		return "", nil, fmt.Errorf("no local port: %v", err)
	}
	go func() {
		<-ctx.Done()
		stop()
	}()
	return fmt.Sprintf("127.0.0.1:%d", ports[0].Local), stop, nil
}
