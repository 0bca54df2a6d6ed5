package dcgm

import (
	"context"
	"errors"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/ain-hpc/ain/pkg/jobs"
)

// Live selects the GPUs ReadLive reads: those on the exporter pages of Nodes, or, when Pods is
// not nil, those the exporters of the pods' nodes map to the pods (a job's).
type Live struct {
	Nodes []string
	Pods  []corev1.Pod
	// Timeout bounds each page's read (0: 30s); Progress, when set, is told each exporter before it is read.
	Timeout  time.Duration
	Progress func(Exporter)
	// Read, when set, reads the nodes' GPUs instead of the exporter pods (FromPrometheus).
	Read func(ctx context.Context, nodes []string) ([]GPU, error)
}

// LiveResult is what ReadLive read.
type LiveResult struct {
	GPUs []GPU
	// Partial says which nodes' GPUs are missing (*NoExporterError, *ScrapeError,
	// *NotScrapedError; joined), nil when none is.
	Partial error
	// Unmapped: the exporters map no GPU to a pod (their Kubernetes mapping is off), so every GPU
	// of the pods' nodes was kept.
	Unmapped bool
}

// NoNodeError is a selection by pods none of which is bound to a node yet.
type NoNodeError struct{}

func (NoNodeError) Error() string { return "no pod is on a node yet" }

// ReadLive reads the exporter pages l selects (ReadNodes, or l.Read). It fails when no GPU was read: with
// ReadNodes' error (a *NoExporterError or *ScrapeError when no node could be read), a NoNodeError,
// or ctx's error.
func ReadLive(ctx context.Context, cfg *rest.Config, cs kubernetes.Interface, l Live) (*LiveResult, error) {
	nodes := l.Nodes
	if l.Timeout == 0 {
		l.Timeout = 30 * time.Second
	}
	var keys []string
	if l.Pods != nil {
		for _, p := range l.Pods {
			keys = append(keys, p.Namespace+"/"+p.Name)
		}
		if nodes = jobs.Nodes(l.Pods); len(nodes) == 0 {
			return nil, NoNodeError{}
		}
	}
	var gpus []GPU
	var err error
	if l.Read != nil {
		gpus, err = l.Read(ctx, nodes)
	} else {
		gpus, err = ReadNodes(ctx, cfg, cs, nodes, l.Timeout, l.Progress)
	}
	var ne *NoExporterError
	var se *ScrapeError
	var ns *NotScrapedError
	switch {
	case ctx.Err() != nil:
		return nil, ctx.Err()
	case err != nil && (len(gpus) == 0 || !errors.As(err, &ne) && !errors.As(err, &se) && !errors.As(err, &ns)):
		return nil, err
	}
	r := &LiveResult{GPUs: gpus, Partial: err}
	if keys != nil {
		var mapped bool
		r.GPUs, mapped = OfPods(gpus, keys)
		r.Unmapped = !mapped
	}
	return r, nil
}
