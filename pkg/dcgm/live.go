package dcgm

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/portforward"
	"k8s.io/client-go/transport/spdy"
	"k8s.io/streaming/pkg/httpstream"

	"github.com/ain-hpc/ain/pkg/next"
)

// ExporterPort is dcgm-exporter's default port (NVIDIA/dcgm-exporter --address default ":9400"),
// read where the exporter's pod names none (see exporterPort).
const ExporterPort = 9400

// ExporterSelectors find dcgm-exporter pods: the GPU Operator's operand (app=nvidia-dcgm-exporter,
// assets/state-dcgm-exporter/0800_daemonset.yaml) and the standalone Helm chart's
// (app.kubernetes.io/name=dcgm-exporter, dcgm-exporter deployment/templates/_helpers.tpl).
var ExporterSelectors = []string{"app=nvidia-dcgm-exporter", "app.kubernetes.io/name=dcgm-exporter"}

// Exporter is one running dcgm-exporter pod.
type Exporter struct {
	Namespace, Pod, Node string
	// Port is where its /metrics page is served (0: ExporterPort).
	Port int
}

// String is the exporter as progress lines name it: namespace/pod on node.
func (e Exporter) String() string { return e.Namespace + "/" + e.Pod + " on " + e.Node }

// NoExporterError says which nodes have no running dcgm-exporter pod that could be seen:
// Forbidden lists where the caller may not list pods ("" for all namespaces), where one may be.
type NoExporterError struct {
	Nodes     []string
	Forbidden []string
}

func (e *NoExporterError) Error() string {
	msg := fmt.Sprintf("no running dcgm-exporter pod (%s or %s, any namespace) on %v", ExporterSelectors[0], ExporterSelectors[1], e.Nodes)
	if len(e.Forbidden) > 0 {
		where := make([]string, len(e.Forbidden))
		for i, ns := range e.Forbidden {
			where[i] = cmp.Or(ns, "all namespaces")
		}
		msg += fmt.Sprintf(" that you may see: you may not list pods in %s, where the exporter usually runs (reading it needs list pods and create pods/portforward in its namespace, which ain preflight --print-role does not grant)", strings.Join(where, ", "))
	}
	return msg
}

// FindExporters finds the running exporter pod of each node; nodes without one are in a
// NoExporterError returned beside the exporters found.
func FindExporters(ctx context.Context, cs kubernetes.Interface, nodes []string) ([]Exporter, error) {
	found, err := listExporters(ctx, cs)
	if err != nil {
		return nil, err
	}
	return found.of(nodes)
}

// exporterSet is what one look for the exporter pods found: the running exporter of each node,
// and the namespaces where the caller may not list pods ("" for all).
type exporterSet struct {
	byNode    map[string]Exporter
	forbidden []string
}

// listExporters lists the exporter pods of all nodes.
func listExporters(ctx context.Context, cs kubernetes.Interface) (*exporterSet, error) {
	found := &exporterSet{byNode: map[string]Exporter{}}
	// All namespaces; a user without a cluster-wide pod list reads the namespaces the GPU
	// Operator is installed into (its README's -n gpu-operator; OpenShift's nvidia-gpu-operator).
	namespaces := []string{metav1.NamespaceAll}
	for i := 0; i < len(namespaces); i++ {
		for _, sel := range ExporterSelectors {
			list, err := cs.CoreV1().Pods(namespaces[i]).List(ctx, metav1.ListOptions{LabelSelector: sel})
			switch {
			case apierrors.IsForbidden(err):
				if !slices.Contains(found.forbidden, namespaces[i]) {
					found.forbidden = append(found.forbidden, namespaces[i])
				}
				if namespaces[i] == metav1.NamespaceAll && len(namespaces) == 1 {
					namespaces = append(namespaces, "gpu-operator", "nvidia-gpu-operator")
				}
			case err != nil:
				return nil, err
			}
			if err != nil {
				break
			}
			for _, p := range list.Items {
				if p.Status.Phase != corev1.PodRunning || p.DeletionTimestamp != nil {
					continue
				}
				if _, ok := found.byNode[p.Spec.NodeName]; !ok {
					found.byNode[p.Spec.NodeName] = Exporter{Namespace: p.Namespace, Pod: p.Name, Node: p.Spec.NodeName, Port: exporterPort(&p)}
				}
			}
		}
	}
	return found, nil
}

// has reports whether every node of nodes has an exporter in s.
func (s *exporterSet) has(nodes []string) bool {
	for _, n := range nodes {
		if _, ok := s.byNode[n]; !ok {
			return false
		}
	}
	return true
}

// of is the exporters of nodes, by node, with a NoExporterError for the nodes that have none.
func (s *exporterSet) of(nodes []string) ([]Exporter, error) {
	var out []Exporter
	var missing []string
	for _, n := range nodes {
		if e, ok := s.byNode[n]; ok {
			out = append(out, e)
		} else {
			missing = append(missing, n)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Node < out[j].Node })
	if len(missing) > 0 {
		return out, &NoExporterError{Nodes: missing, Forbidden: s.forbidden}
	}
	return out, nil
}

// exporterPort is the port of p's exporter: the container port named metrics (the GPU Operator's
// and the Helm chart's name for it, both set from the exporter's --address), else the first TCP
// container port, else ExporterPort.
func exporterPort(p *corev1.Pod) int {
	var first int32
	for _, c := range p.Spec.Containers {
		for _, cp := range c.Ports {
			if cp.Protocol != "" && cp.Protocol != corev1.ProtocolTCP {
				continue
			}
			if cp.Name == "metrics" {
				return int(cp.ContainerPort)
			}
			if first == 0 {
				first = cp.ContainerPort
			}
		}
	}
	return cmp.Or(int(first), ExporterPort)
}

// Scrape reads an exporter's /metrics page through the API server, as `kubectl port-forward`
// does (a WebSocket tunnel, SPDY where the server offers only that), on a port of 127.0.0.1
// that lives as long as the call; the page is parsed as Parse does.
func Scrape(ctx context.Context, cfg *rest.Config, cs kubernetes.Interface, e Exporter, timeout time.Duration) (*Sample, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req := cs.CoreV1().RESTClient().Post().Resource("pods").Namespace(e.Namespace).Name(e.Pod).SubResource("portforward")
	dialer, err := dialerFor(cfg, req.URL())
	if err != nil {
		return nil, err
	}
	stop, ready := make(chan struct{}), make(chan struct{})
	fw, err := portforward.NewOnAddressesForStreaming(dialer, []string{"127.0.0.1"}, []string{"0:" + strconv.Itoa(cmp.Or(e.Port, ExporterPort))}, stop, ready, io.Discard, io.Discard)
	if err != nil {
		return nil, err
	}
	defer close(stop)
	errc := make(chan error, 1)
	go func() { errc <- fw.ForwardPorts() }()
	select {
	case <-ready:
	case err := <-errc:
		return nil, fmt.Errorf("port-forward to %s/%s: %w", e.Namespace, e.Pod, err)
	case <-ctx.Done():
		return nil, fmt.Errorf("port-forward to %s/%s: %w", e.Namespace, e.Pod, ctx.Err())
	}
	ports, err := fw.GetPorts()
	if err != nil || len(ports) == 0 {
		return nil, fmt.Errorf("port-forward to %s/%s: no local port: %v", e.Namespace, e.Pod, err)
	}
	hreq, err := http.NewRequestWithContext(ctx, http.MethodGet, fmt.Sprintf("http://127.0.0.1:%d/metrics", ports[0].Local), nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(hreq)
	if err != nil {
		return nil, fmt.Errorf("%s/%s: GET /metrics: %w", e.Namespace, e.Pod, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%s/%s: GET /metrics: %s", e.Namespace, e.Pod, resp.Status)
	}
	return Parse(resp.Body)
}

// dialerFor is kubectl's port-forward dialer: SPDY over a WebSocket, falling back to plain SPDY
// when the server does not upgrade (k8s.io/kubectl pkg/cmd/portforward createDialer).
func dialerFor(cfg *rest.Config, target *url.URL) (httpstream.Dialer, error) {
	transport, upgrader, err := spdy.RoundTripperFor(cfg)
	if err != nil {
		return nil, err
	}
	spdyDialer := spdy.NewDialerForStreaming(upgrader, &http.Client{Transport: transport}, http.MethodPost, target)
	ws, err := portforward.NewSPDYOverWebsocketDialerForStreaming(target, cfg)
	if err != nil {
		return nil, err
	}
	return portforward.NewFallbackDialerForStreaming(ws, spdyDialer, func(err error) bool {
		return httpstream.IsUpgradeFailure(err) || httpstream.IsHTTPSProxyError(err)
	}), nil
}

// ScrapeError is a failed read of one exporter's page.
type ScrapeError struct {
	Exporter Exporter
	Err      error
}

func (e *ScrapeError) Error() string {
	return fmt.Sprintf("dcgm-exporter %s/%s on %s: %v", e.Exporter.Namespace, e.Exporter.Pod, e.Exporter.Node, e.Err)
}
func (e *ScrapeError) Unwrap() error { return e.Err }

// Hint says what fixes it (next.Hinter).
func (e *ScrapeError) Hint(func(next.Command) string) string {
	return "reading an exporter needs list on pods and create on pods/portforward in its namespace; or give a saved page as FILE"
}

// Hint says what fixes it (next.Hinter).
func (e *NoExporterError) Hint(func(next.Command) string) string {
	return "install the GPU Operator (its dcgm-exporter) or NVIDIA's dcgm-exporter Helm chart; or give a saved page as FILE"
}

// OfPods keeps the GPUs the exporter maps to one of pods (namespace/name). ok is false when no
// GPU carries a pod label at all (an exporter without its Kubernetes mapping): gpus is returned
// whole, since which GPU is whose cannot be told.
func OfPods(gpus []GPU, pods []string) (out []GPU, ok bool) {
	want := map[string]bool{}
	for _, p := range pods {
		want[p] = true
	}
	labelled := false
	for _, g := range gpus {
		if g.Pod == "" {
			continue
		}
		labelled = true
		if want[g.Namespace+"/"+g.Pod] {
			out = append(out, g)
		}
	}
	if !labelled {
		return gpus, false
	}
	return out, true
}
