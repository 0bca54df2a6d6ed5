package vllm

import (
	"context"
	"time"

	"github.com/ain-hpc/ain/pkg/openaiclient"
)

// Probe is what a GET /v1/models at a model server's endpoint found.
type Probe struct {
	Endpoint string   `json:"endpoint"`
	At       string   `json:"at"`
	Models   []string `json:"models,omitempty"`
	Error    string   `json:"error,omitempty"`
}

// Report is a model server's state and, once a replica is ready, what its endpoint answered.
type Report struct {
	ServingStatus
	Probe *Probe `json:"probe,omitempty"`
}

// ReportOptions configure Reports.
type ReportOptions struct {
	// Name is the model server ("": every one in the namespace).
	Name string
	// Endpoint, when set, is probed instead of the one each server publishes.
	Endpoint string
	// Discovery finds a server's endpoint as clients do (its CA, its published address).
	Discovery *Discovery
	// Client opens a client to an endpoint.
	Client func(ep Endpoint) (*openaiclient.Client, error)
	Now    func() time.Time
	// ProbeTimeout bounds each probe (0: 5s).
	ProbeTimeout time.Duration
}

// Reports lists the model servers (Cluster.List) and probes the endpoint of each with a ready
// replica. A named server that does not exist is a NotFoundError; other cluster errors are a
// ClusterError.
func (c *Cluster) Reports(ctx context.Context, o ReportOptions) ([]Report, error) {
	all, err := c.List(ctx, o.Name)
	if err != nil {
		return nil, &ClusterError{Doing: "listing model servers", Err: err}
	}
	if len(all) == 0 && o.Name != "" {
		return nil, &NotFoundError{Name: o.Name, Namespace: c.Namespace}
	}
	var out []Report
	for _, st := range all {
		r := Report{ServingStatus: st}
		ep := Endpoint{URL: o.Endpoint, Via: "endpoint"}
		if ep.URL == "" && st.URL != "" && st.Ready > 0 {
			var err error
			if ep, err = o.Discovery.EndpointOf(ctx, st); err != nil {
				r.Probe = &Probe{Endpoint: st.URL, At: o.Now().UTC().Format(time.RFC3339), Error: err.Error()}
			}
		}
		if ep.URL != "" && st.Ready > 0 && r.Probe == nil {
			r.Probe = probeModels(ctx, o, ep)
		}
		out = append(out, r)
	}
	return out, nil
}

// probeModels asks ep's /v1/models which models it serves.
func probeModels(ctx context.Context, o ReportOptions, ep Endpoint) *Probe {
	p := &Probe{Endpoint: ep.URL, At: o.Now().UTC().Format(time.RFC3339)}
	c, err := o.Client(ep)
	if err == nil {
		p.Endpoint = c.Endpoint()
		timeout := o.ProbeTimeout
		if timeout == 0 {
			timeout = 5 * time.Second
		}
		pctx, cancel := context.WithTimeout(ctx, timeout)
		var models []openaiclient.Model
		models, err = c.Models(pctx)
		cancel()
		for _, m := range models {
			p.Models = append(p.Models, m.ID)
		}
	}
	if err != nil {
		p.Error = err.Error()
	}
	return p
}
