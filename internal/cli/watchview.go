package cli

import (
	"time"

	"github.com/ain-hpc/ain/pkg/dcgm"
	"github.com/ain-hpc/ain/pkg/jobs"
	"github.com/ain-hpc/ain/pkg/kube"
)

// gpuMetricsEvery is how often --gpu-metrics samples the job's GPUs: each sample is one
// port-forward to each node's dcgm-exporter, whose own default collection interval is 30 s
// (dcgm-exporter's -c 30000), so faster would read the same values again.
const gpuMetricsEvery = 15 * time.Second

// gpuMetricsQuiet is how long a log (no terminal) goes without the GPU lines while they say the
// same: they are printed when the verdict or the ranks it names change, and this often.
const gpuMetricsQuiet = 5 * time.Minute

// watchView is the live view of a job that train and bench allreduce show, with the ranks'
// GPU lines from the nodes' dcgm-exporters beside it when gpuMetrics is set (bench: without a
// verdict, its GPUs wait on the network by design).
func (a *App) watchView(kc *kube.Clients, gpuMetrics, bench bool) func(time.Time) (func(jobs.Snapshot), func()) {
	return func(start time.Time) (func(jobs.Snapshot), func()) {
		v := jobs.NewView(a.Streams.Err, a.Streams.IsTTY, a.Now, start)
		v.SetWidth(a.Streams.ErrWidth)
		if !gpuMetrics {
			return v.Update, v.Stop
		}
		// One reader per watched job: it keeps the exporter pods it found for the next samples.
		r := &dcgm.NodeReader{Config: kc.Config, Kube: kc.Kube, Timeout: 10 * time.Second, Now: a.Now}
		m := dcgm.JobMonitor{
			Interval:  gpuMetricsEvery,
			Sampler:   dcgm.Sampler{Now: a.Now, Read: r.Read},
			Emit:      func(s dcgm.Snapshot) { v.Note(s.Lines()) },
			NoVerdict: bench,
		}
		if !a.Streams.IsTTY {
			m.QuietFor = gpuMetricsQuiet
		}
		return m.Watch(func(time.Time) (func(jobs.Snapshot), func()) { return v.Update, v.Stop })(start)
	}
}
