package vllm

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/portforward"
	"k8s.io/client-go/transport/spdy"

	"github.com/ain-hpc/ain/pkg/ainerr"
)

// Discovery finds the endpoint of a model server `ain serve` deployed: its ingress URL when
// that answers from here, else a port-forward to one of its ready pods.
type Discovery struct {
	Cluster *Cluster
	Config  *rest.Config
	// Reachable checks a candidate URL (GET /health through the client's TLS settings).
	Reachable func(ctx context.Context, url string) error
	// Log receives one line saying which way was taken and why.
	Log io.Writer
}

// Endpoint returns the URL for the model server name ("" picks the only one) and a function
// that ends the port-forward, if one was opened.
func (d *Discovery) Endpoint(ctx context.Context, name string) (string, func(), error) {
	noop := func() {}
	all, err := d.Cluster.List(ctx, name)
	if err != nil {
		return "", noop, err
	}
	switch {
	case len(all) == 0 && name != "":
		return "", noop, ainerr.New(ainerr.Usage, &NotFoundError{Name: name, Namespace: d.Cluster.Namespace}, "`ain serve status` lists the model servers")
	case len(all) == 0:
		return "", noop, ainerr.New(ainerr.Usage, fmt.Errorf("no endpoint: no model server deployed in namespace %s, and no --endpoint / AIN_ENDPOINT", d.Cluster.Namespace),
			"deploy one with `ain serve vllm`, or pass --endpoint URL for any OpenAI-compatible server")
	case len(all) > 1:
		names := make([]string, len(all))
		for i, s := range all {
			names[i] = s.Name
		}
		return "", noop, ainerr.New(ainerr.Usage, fmt.Errorf("several model servers in namespace %s (%s): say which", d.Cluster.Namespace, strings.Join(names, ", ")),
			"pass --endpoint (`ain serve status` shows each URL)")
	}
	st := all[0]
	if st.URL != "" && d.Reachable != nil {
		err := d.Reachable(ctx, st.URL)
		if err == nil {
			d.logf("endpoint: %s (the ingress of model server %s)\n", st.URL, st.Name)
			return st.URL, noop, nil
		}
		d.logf("note: the ingress %s does not answer from here (%v); using a port-forward\n", st.URL, err)
	}
	pod := ""
	for _, r := range st.Replicas {
		for _, p := range r.Pods {
			if p.Ready && pod == "" {
				pod = p.Name
			}
		}
	}
	if pod == "" {
		return "", noop, ainerr.New(ainerr.Unreachable, fmt.Errorf("model server %s has no ready replica (%d/%d)", st.Name, st.Ready, st.Desired),
			"`ain serve status "+st.Name+"` shows what the pods are doing")
	}
	local, stop, err := d.forward(ctx, pod)
	if err != nil {
		return "", noop, fmt.Errorf("port-forward to pod %s: %w", pod, err)
	}
	url := "http://" + local
	d.logf("endpoint: %s (port-forward to pod %s of %s; this reaches one replica, not the Service's balancing)\n", url, pod, st.Name)
	return url, stop, nil
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
