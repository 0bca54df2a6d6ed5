package dcgm

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/ain-hpc/ain/pkg/jobs"
)

// JobMonitor samples the GPUs of a watched job's running pods, so that a person sees while the
// job runs whether its ranks compute or wait (the course's reading of DCGM's key metrics).
type JobMonitor struct {
	Sampler Sampler
	// Interval is the time between samples (each scrape is one port-forward per node).
	Interval time.Duration
	// Emit receives every sample (a failed read that repeats the last one, nothing read, only
	// once), from the monitor's goroutine.
	Emit func(Snapshot)
	// QuietFor holds back a sample that says what the last one emitted said (same verdict, same
	// ranks named, same error) until this long after it: a log then gets the lines when they
	// change, and every QuietFor. 0: every sample.
	QuietFor time.Duration
	// NoVerdict leaves the verdict out of the lines (bench allreduce: its GPUs wait on the
	// network by design).
	NoVerdict bool
}

// Watch wraps a watch hook (the shape train.Runner.Watch and bench.Runner.Watch take): inner's
// view goes on as before, and beside it the GPUs of the job's Running pods are sampled when the
// set of running pods changes and every Interval, until the returned stop, which waits for a
// sample under way to end.
func (m JobMonitor) Watch(inner func(time.Time) (func(jobs.Snapshot), func())) func(time.Time) (func(jobs.Snapshot), func()) {
	return func(start time.Time) (func(jobs.Snapshot), func()) {
		onChange, stopInner := func(jobs.Snapshot) {}, func() {}
		if inner != nil {
			onChange, stopInner = inner(start)
		}
		ctx, cancel := context.WithCancel(context.Background())
		var (
			mu         sync.Mutex
			pods       []RankPod
			notRunning []string
		)
		changed := make(chan struct{}, 1)
		done := make(chan struct{})
		go func() {
			defer close(done)
			t := time.NewTicker(m.Interval)
			defer t.Stop()
			lastErr := "" // a read that fails the same way again (no RBAC, no exporter) is said once
			lastKey, lastAt := "", time.Time{}
			for {
				select {
				case <-ctx.Done():
					return
				case <-t.C:
				case <-changed:
				}
				mu.Lock()
				p, nr := slices.Clone(pods), slices.Clone(notRunning)
				mu.Unlock()
				if len(p) == 0 {
					continue
				}
				snap := m.Sampler.Sample(ctx, p)
				snap.NotRunning = nr
				if ctx.Err() != nil {
					return // stopped mid-scrape: its error says nothing of the GPUs
				}
				if snap.Err != "" && len(snap.Ranks) == 0 && snap.Err == lastErr {
					continue
				}
				snap.NoVerdict = m.NoVerdict
				k := snap.key()
				if m.QuietFor > 0 && k == lastKey && snap.At.Sub(lastAt) < m.QuietFor {
					continue
				}
				lastKey, lastAt = k, snap.At
				lastErr = snap.Err
				m.Emit(snap)
				if snap.Final {
					return // no permission: asking every interval would only repeat the refusal
				}
			}
		}()
		update := func(s jobs.Snapshot) {
			onChange(s)
			rp, nr := runningPods(s)
			mu.Lock()
			same := slices.Equal(rp, pods)
			pods, notRunning = rp, nr
			mu.Unlock()
			if !same && len(rp) > 0 {
				select {
				case changed <- struct{}{}:
				default:
				}
			}
		}
		stop := func() {
			cancel()
			<-done
			stopInner()
		}
		return update, stop
	}
}

// runningPods are the job's pods that run on a node, labelled by their replica and index, and
// the labels of those that do not run (an MPI launcher left out: it needs no GPU).
func runningPods(s jobs.Snapshot) (running []RankPod, notRunning []string) {
	for _, p := range s.Pods {
		launcher := p.Replica == "launcher"
		switch {
		case p.Phase == "Running" && p.Node != "":
			running = append(running, RankPod{Namespace: s.Namespace, Pod: p.Name, Node: p.Node, Label: jobs.ReplicaLabel(p),
				MayHaveNoGPU: launcher})
		case !launcher:
			notRunning = append(notRunning, jobs.ReplicaLabel(p))
		}
	}
	return running, notRunning
}
