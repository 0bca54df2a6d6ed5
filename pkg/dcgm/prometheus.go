package dcgm

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/ain-hpc/ain/pkg/next"
)

// federateMatch selects every dcgm-exporter series in Prometheus's /federate: the exporter names
// each field DCGM_FI_... (etc/default-counters.csv).
const federateMatch = `{__name__=~"DCGM_FI_.+"}`

// NotScrapedError says which nodes the Prometheus server holds no DCGM series for (by the
// exporter's Hostname label, which the GPU Operator sets to the node's name).
type NotScrapedError struct {
	URL   string
	Nodes []string
}

func (e *NotScrapedError) Error() string {
	return fmt.Sprintf("Prometheus at %s has no DCGM series of %v (by the exporter's Hostname label): is dcgm-exporter scraped there, with its labels kept?", e.URL, e.Nodes)
}

// PrometheusError is a /federate request that did not answer a page.
type PrometheusError struct {
	URL    string
	Status string // the HTTP status; "" when no answer came
	Body   string // the start of the answer's body
	Err    error
}

func (e *PrometheusError) Error() string {
	switch {
	case e.Err != nil:
		return fmt.Sprintf("Prometheus at %s: %v", e.URL, e.Err)
	case e.Body != "":
		return fmt.Sprintf("Prometheus at %s answered %s: %s", e.URL, e.Status, e.Body)
	}
	return fmt.Sprintf("Prometheus at %s answered %s", e.URL, e.Status)
}
func (e *PrometheusError) Unwrap() error { return e.Err }

// Hint says what fixes it (next.Hinter).
func (e *PrometheusError) Hint(func(next.Command) string) string {
	return "check --prometheus (the server's base URL, e.g. http://prometheus.monitoring:9090)"
}

// Hint says what fixes it (next.Hinter).
func (e *NotScrapedError) Hint(func(next.Command) string) string {
	return "have Prometheus scrape dcgm-exporter (the GPU Operator's dcgmExporter.serviceMonitor.enabled, or a ServiceMonitor of your own), or drop --prometheus to read the exporter pods"
}

// FromPrometheus returns a reader of the nodes' GPUs (the shape Live.Read and Sampler.Read take)
// from a Prometheus server that scrapes dcgm-exporter: one /federate request for every DCGM
// series (one page, whatever the node count, and no access to the exporter's namespace needed),
// kept to the GPUs whose Hostname is one of nodes. base is the server's URL (a path prefix such
// as /prometheus is kept; "" gives a nil reader: the exporter pods are read); client nil is
// http.DefaultClient.
func FromPrometheus(client *http.Client, base string) func(ctx context.Context, nodes []string) ([]GPU, error) {
	if base == "" {
		return nil
	}
	if client == nil {
		client = http.DefaultClient
	}
	return func(ctx context.Context, nodes []string) ([]GPU, error) {
		u, err := url.Parse(base)
		if err != nil {
			return nil, &PrometheusError{URL: base, Err: err}
		}
		u = u.JoinPath("federate")
		u.RawQuery = url.Values{"match[]": {federateMatch}}.Encode()
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
		if err != nil {
			return nil, &PrometheusError{URL: base, Err: err}
		}
		// The text format, which Parse reads (Prometheus would otherwise offer protobuf or
		// OpenMetrics to a client that asked for them).
		req.Header.Set("Accept", "text/plain;version=0.0.4")
		resp, err := client.Do(req)
		if ue, ok := errors.AsType[*url.Error](err); ok {
			err = ue.Err // the request's URL, query encoded, says nothing the message does not
		}
		if err != nil {
			return nil, &PrometheusError{URL: base, Err: err}
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(io.LimitReader(resp.Body, MaxInput+1))
		if err != nil {
			return nil, &PrometheusError{URL: base, Err: err}
		}
		if resp.StatusCode != http.StatusOK {
			first, _, _ := strings.Cut(strings.TrimSpace(string(body[:min(len(body), 300)])), "\n")
			return nil, &PrometheusError{URL: base, Status: resp.Status, Body: first}
		}
		if len(body) > MaxInput {
			return nil, &PrometheusError{URL: base, Err: fmt.Errorf("the DCGM series are over %d MiB: not read", MaxInput>>20)}
		}
		s, err := Parse(bytes.NewReader(body))
		if err != nil {
			return nil, &PrometheusError{URL: base, Err: err}
		}
		var gpus []GPU
		seen := map[string]bool{}
		for _, g := range s.GPUs {
			if slices.Contains(nodes, g.Host) {
				gpus = append(gpus, g)
				seen[g.Host] = true
			}
		}
		var missing []string
		for _, n := range nodes {
			if !seen[n] {
				missing = append(missing, n)
			}
		}
		if len(missing) > 0 {
			return gpus, &NotScrapedError{URL: base, Nodes: missing}
		}
		return gpus, nil
	}
}
