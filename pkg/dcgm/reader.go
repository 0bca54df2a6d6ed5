package dcgm

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"sync"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// scrapeAtOnce bounds the exporters a NodeReader reads at the same time: one port-forward each
// through the API server; one after another, a 64-node job's sample took longer than its
// interval.
const scrapeAtOnce = 8

// ExportersMaxAge is how long a NodeReader keeps the exporter pods it found (0 MaxAge): an
// exporter that moved without its old pod failing to answer is found again after this long.
const ExportersMaxAge = 5 * time.Minute

// ReadNodes scrapes the exporter of every node in nodes, each bounded by timeout, up to
// scrapeAtOnce at a time, and returns the GPUs of those it read, in node order, with an error
// for the others (a NoExporterError for nodes without an exporter, a ScrapeError per failed read;
// errors.Join of them): one node that cannot be read does not lose the others. progress, when
// set, is told each node before it is read (from the reading goroutines, one at a time).
func ReadNodes(ctx context.Context, cfg *rest.Config, cs kubernetes.Interface, nodes []string, timeout time.Duration, progress func(Exporter)) ([]GPU, error) {
	r := &NodeReader{Config: cfg, Kube: cs, Timeout: timeout, Progress: progress}
	return r.Read(ctx, nodes)
}

// NodeReader reads nodes' GPUs as ReadNodes does, and keeps the exporter pods it found for its
// next Read: a job monitor reads the same nodes every interval, and finding the exporters is a
// pod LIST over the whole cluster. They are looked for again when a node read has no exporter
// kept, when a kept exporter could not be read (its pod gone, or restarted under a new name:
// then the nodes it failed for are read again at once from the exporters found now), and after
// MaxAge. Each GPU read carries the time its page was read (GPU.ReadAt). One Read at a time.
type NodeReader struct {
	Config *rest.Config
	Kube   kubernetes.Interface
	// Timeout bounds each page's read.
	Timeout time.Duration
	// MaxAge is how long the exporters found are kept (0: ExportersMaxAge).
	MaxAge time.Duration
	// Now is the clock (nil: time.Now).
	Now func() time.Time
	// Progress, when set, is told each exporter before it is read (one at a time).
	Progress func(Exporter)

	// scrape reads one page (nil: Scrape through Config and Kube).
	scrape func(ctx context.Context, e Exporter) (*Sample, error)

	mu      sync.Mutex
	found   *exporterSet
	foundAt time.Time
}

// page is one exporter's read.
type page struct {
	e   Exporter
	s   *Sample
	err error
	at  time.Time
}

// Read reads the GPUs of nodes (see ReadNodes for what it returns).
func (r *NodeReader) Read(ctx context.Context, nodes []string) ([]GPU, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	fresh := r.found == nil || !r.found.has(nodes) || r.now().Sub(r.foundAt) >= cmp.Or(r.MaxAge, ExportersMaxAge)
	if fresh {
		if err := r.find(ctx); err != nil {
			return nil, err
		}
	}
	exps, findErr := r.found.of(nodes)
	pages := r.scrapeAll(ctx, exps, nil)
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	if !fresh && slices.ContainsFunc(pages, func(p page) bool { return p.err != nil }) {
		if err := r.find(ctx); err == nil {
			read := map[Exporter]page{}
			for _, p := range pages {
				read[p.e] = p
			}
			exps, findErr = r.found.of(nodes)
			pages = r.scrapeAll(ctx, exps, read)
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
		}
	}
	all := []error{findErr}
	var gpus []GPU
	for _, p := range pages {
		if p.err != nil {
			all = append(all, &ScrapeError{Exporter: p.e, Err: p.err})
			continue
		}
		for _, g := range p.s.GPUs {
			if g.Host == "" {
				g.Host = p.e.Node
			}
			g.ReadAt = p.at
			gpus = append(gpus, g)
		}
	}
	return gpus, errors.Join(all...)
}

// find lists the exporter pods again; on an error none is kept.
func (r *NodeReader) find(ctx context.Context) error {
	found, err := listExporters(ctx, r.Kube)
	if err != nil {
		r.found = nil
		return err
	}
	r.found, r.foundAt = found, r.now()
	return nil
}

// scrapeAll reads the page of each of exps, up to scrapeAtOnce at a time, but for those read
// holds already.
func (r *NodeReader) scrapeAll(ctx context.Context, exps []Exporter, read map[Exporter]page) []page {
	scrape := r.scrape
	if scrape == nil {
		scrape = func(ctx context.Context, e Exporter) (*Sample, error) {
			return Scrape(ctx, r.Config, r.Kube, e, r.Timeout)
		}
	}
	pages := make([]page, len(exps))
	var mu sync.Mutex
	var wg sync.WaitGroup
	slots := make(chan struct{}, scrapeAtOnce)
	for i, e := range exps {
		if p, ok := read[e]; ok {
			pages[i] = p
			continue
		}
		wg.Go(func() {
			slots <- struct{}{}
			defer func() { <-slots }()
			if ctx.Err() != nil {
				pages[i] = page{e: e, err: ctx.Err()}
				return
			}
			if r.Progress != nil {
				mu.Lock()
				r.Progress(e)
				mu.Unlock()
			}
			s, err := scrape(ctx, e)
			pages[i] = page{e: e, s: s, err: err, at: r.now()}
		})
	}
	wg.Wait()
	return pages
}

func (r *NodeReader) now() time.Time {
	if r.Now != nil {
		return r.Now()
	}
	return time.Now()
}
