package cli

import (
	"context"
	"time"

	"github.com/ain-hpc/ain/pkg/dcgm"
	"github.com/ain-hpc/ain/pkg/jobs"
	"github.com/ain-hpc/ain/pkg/kube"
)

// gpuMetricsEvery is how often --gpu-metrics samples the job's GPUs: each sample is one
// port-forward to each node's dcgm-exporter, whose own default collection interval is 30 s
// (dcgm-exporter's -c 30000), so faster would read the same values again.
const gpuMetricsEvery = 15 * time.Second

// watchView is the live view of a job that train and bench allreduce show, with the ranks'
// GPU lines from the nodes' dcgm-exporters beside it when gpuMetrics is set.
func (a *App) watchView(kc *kube.Clients, gpuMetrics bool) func(time.Time) (func(jobs.Snapshot), func()) {
	return func(start time.Time) (func(jobs.Snapshot), func()) {
		v := jobs.NewView(a.Streams.Err, a.Streams.IsTTY, a.Now, start)
		if !gpuMetrics {
			return v.Update, v.Stop
		}
		m := dcgm.JobMonitor{
			Interval: gpuMetricsEvery,
			Sampler: dcgm.Sampler{Now: a.Now, Read: func(ctx context.Context, nodes []string) ([]dcgm.GPU, error) {
				return dcgm.ReadNodes(ctx, kc.Config, kc.Kube, nodes, 10*time.Second, nil)
			}},
			Emit: func(s dcgm.Snapshot) { v.Note(s.Lines()) },
		}
		return m.Watch(func(time.Time) (func(jobs.Snapshot), func()) { return v.Update, v.Stop })(start)
	}
}
