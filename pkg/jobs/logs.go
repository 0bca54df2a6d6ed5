package jobs

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	kubeflowv1 "github.com/kubeflow/training-operator/pkg/apis/kubeflow.org/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/ain-hpc/ain/pkg/mpilauncher"
	"github.com/ain-hpc/ain/pkg/nccl"
)

// PodLogs opens a pod's log (container "" picks the only container). tail < 0 means all lines.
func (c *Cluster) PodLogs(ctx context.Context, pod, container string, tail int64, follow bool) (io.ReadCloser, error) {
	o := &corev1.PodLogOptions{Container: container, Follow: follow}
	if tail >= 0 {
		o.TailLines = &tail
	}
	return c.Kube.CoreV1().Pods(c.Namespace).GetLogs(pod, o).Stream(ctx)
}

// RankResult is what the summary says about one replica pod.
type RankResult struct {
	PodInfo
	Transport string          `json:"transport,omitempty"`
	GDR       *bool           `json:"gdr,omitempty"`
	Devices   []string        `json:"devices,omitempty"`
	NCCL      *nccl.LogReport `json:"nccl,omitempty"`
	LastLines []string        `json:"lastLines,omitempty"`
	// Launcher is the launcher-log verdict of a failed MPI launcher (failure 1 of the course).
	Launcher *mpilauncher.Report `json:"launcher,omitempty"`
	LogError string              `json:"logError,omitempty"`
}

// Summary is the end-of-run report.
type Summary struct {
	Snapshot
	Duration time.Duration `json:"durationNs"`
	Ranks    []RankResult  `json:"ranks"`
	// Transport is the transport NCCL used across the job ("" when no NCCL log line was seen).
	Transport string `json:"transport,omitempty"`
	// Problems found in the logs (socket fallback, mixed transports, /dev/shm ...).
	Problems []nccl.Finding `json:"problems,omitempty"`
}

// MainContainer is the container holding a job's work for the given kind.
func MainContainer(kind string) string {
	switch kind {
	case kubeflowv1.MPIJobKind: // v1 and v2beta1: ain names the container
		return MPIContainer
	case trainJob.kind:
		return TrainerContainer
	}
	return PyTorchContainer
}

// maxSummaryLog bounds how much of each pod's log the summary reads through the analyser
// (the analyser itself streams; this bounds time on huge logs).
const maxSummaryLog = 256 << 20

// Collector reads finished pods' logs as soon as they finish (see WatchOptions.OnPodFinished),
// so the summary still has them when the pods are deleted at the job's end.
type Collector struct {
	c       *Cluster
	kind    string
	tail    int
	mu      sync.Mutex
	wg      sync.WaitGroup
	results map[string]RankResult
}

// NewCollector returns a collector for a job of kind that keeps the last tail lines of each log.
func (c *Cluster) NewCollector(kind string, tail int) *Collector {
	return &Collector{c: c, kind: kind, tail: tail, results: map[string]RankResult{}}
}

// Collect reads pod's log in the background.
func (col *Collector) Collect(ctx context.Context, pod corev1.Pod) {
	col.wg.Add(1)
	go func() {
		defer col.wg.Done()
		rr := col.c.rankResult(ctx, &pod, col.kind, col.tail)
		col.mu.Lock()
		col.results[pod.Name] = rr
		col.mu.Unlock()
	}()
}

// Wait waits for the reads in flight and returns what was collected, by pod name.
func (col *Collector) Wait() map[string]RankResult {
	if col == nil {
		return nil
	}
	col.wg.Wait()
	col.mu.Lock()
	defer col.mu.Unlock()
	return col.results
}

// rankResult reads one pod's log through the NCCL analyser.
func (c *Cluster) rankResult(ctx context.Context, p *corev1.Pod, kind string, tailLines int) RankResult {
	rr := RankResult{PodInfo: podInfo(p)}
	cname := MainContainer(kind)
	if !HasContainer(p, cname) {
		cname = ""
	}
	rc, err := c.PodLogs(ctx, p.Name, cname, -1, false)
	if err != nil {
		rr.LogError = err.Error()
		return rr
	}
	defer rc.Close()
	tail := newTail(tailLines)
	an := nccl.NewLogAnalyzer()
	_ = an.Feed(p.Name, io.TeeReader(io.LimitReader(rc, maxSummaryLog), tail))
	rep := an.Report()
	rr.LastLines = tail.lines()
	if rr.Replica == "launcher" && p.Status.Phase == corev1.PodFailed {
		// The launcher's failure signature is usually well above its last lines: read it again.
		if rc2, err := c.PodLogs(ctx, p.Name, cname, -1, false); err == nil {
			if lr, err := mpilauncher.Analyze(io.LimitReader(rc2, maxSummaryLog)); err == nil {
				rr.Launcher = lr
			}
			rc2.Close()
		}
	}
	if rep.NCCLLines > 0 {
		rr.NCCL = rep
		rr.Transport, rr.GDR, rr.Devices = rep.Transport, rep.GDR, rep.Devices
	}
	return rr
}

// Summarize reads every replica's log (or takes what a Collector already read, for pods that
// may be gone) and runs the NCCL transport analyser on it.
func (c *Cluster) Summarize(ctx context.Context, snap Snapshot, pods []corev1.Pod, tailLines int, collected map[string]RankResult) Summary {
	s := Summary{Snapshot: snap}
	if !snap.Started.IsZero() && !snap.Finished.IsZero() {
		s.Duration = snap.Finished.Sub(snap.Started)
	} else if !snap.Finished.IsZero() {
		s.Duration = snap.Finished.Sub(snap.Created)
	}
	seen := map[string]bool{}
	var ranks []RankResult
	for i := range pods {
		p := &pods[i]
		seen[p.Name] = true
		if rr, ok := collected[p.Name]; ok && rr.LogError == "" {
			ranks = append(ranks, rr)
			continue
		}
		ranks = append(ranks, c.rankResult(ctx, p, snap.Kind, tailLines))
	}
	for name, rr := range collected {
		if !seen[name] {
			ranks = append(ranks, rr) // the pod is gone; its log was read when it finished
		}
	}
	sort.SliceStable(ranks, func(i, j int) bool {
		oi, oj := replicaOrder(ranks[i].Replica), replicaOrder(ranks[j].Replica)
		if oi != oj {
			return oi < oj
		}
		return ranks[i].Index < ranks[j].Index
	})
	s.Ranks = ranks
	transports := map[string]bool{}
	for _, rr := range ranks {
		if rr.NCCL == nil {
			continue
		}
		if rr.Transport != nccl.TransportUnknown {
			transports[rr.Transport] = true
		}
		s.Problems = append(s.Problems, rr.NCCL.Problems...)
	}
	switch len(transports) {
	case 0:
	case 1:
		for t := range transports {
			s.Transport = t
		}
	default:
		var ts []string
		for t := range transports {
			ts = append(ts, t)
		}
		sort.Strings(ts)
		s.Transport = "mixed"
		s.Problems = append(s.Problems, nccl.Finding{Code: nccl.CodeMixedTransport, Message: "ranks used different transports: " + strings.Join(ts, ", ")})
	}
	return s
}

// HasContainer reports whether pod p runs a container called name (a log read from one it
// lacks is an API error, not the log).
func HasContainer(p *corev1.Pod, name string) bool {
	return slices.ContainsFunc(p.Spec.Containers, func(c corev1.Container) bool { return c.Name == name })
}

// tail keeps the last n lines written to it.
type tail struct {
	n    int
	buf  [][]byte
	part []byte
}

func newTail(n int) *tail { return &tail{n: n} }

func (t *tail) Write(p []byte) (int, error) {
	data := append(t.part, p...)
	for {
		i := bytes.IndexByte(data, '\n')
		if i < 0 {
			break
		}
		t.push(data[:i])
		data = data[i+1:]
	}
	t.part = append([]byte(nil), data...)
	return len(p), nil
}

func (t *tail) push(line []byte) {
	if t.n <= 0 {
		return
	}
	if len(t.buf) == t.n {
		copy(t.buf, t.buf[1:])
		t.buf = t.buf[:t.n-1]
	}
	t.buf = append(t.buf, append([]byte(nil), line...))
}

func (t *tail) lines() []string {
	if len(t.part) > 0 {
		t.push(t.part)
		t.part = nil
	}
	out := make([]string, len(t.buf))
	for i, l := range t.buf {
		out[i] = string(l)
	}
	return out
}

// Prefixed copies r to w with prefix before every line (for several pods' logs at once).
func Prefixed(w io.Writer, r io.Reader, prefix string) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 1<<20)
	for sc.Scan() {
		if _, err := io.WriteString(w, prefix+sc.Text()+"\n"); err != nil {
			return err
		}
	}
	return sc.Err()
}
