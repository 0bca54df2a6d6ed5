package cli

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/ain-hpc/ain/internal/ainerr"
	"github.com/ain-hpc/ain/pkg/jobs"
	"github.com/ain-hpc/ain/pkg/kube"
)

// findJob is the one way a command finds the job a user named: a missing job is a usage
// error (exit 2) with the same hint everywhere; other API errors are classified (unreachable,
// forbidden...).
func (a *App) findJob(ctx context.Context, name string) (*kube.Clients, *jobs.Cluster, *unstructured.Unstructured, error) {
	kc, err := a.clients()
	if err != nil {
		return nil, nil, nil, err
	}
	cl := a.cluster(kc)
	job, err := cl.Find(ctx, name)
	if err != nil {
		if jobs.IsNotFound(err) {
			return nil, nil, nil, ainerr.New(ainerr.Usage, err, "`ain list` shows the jobs in this namespace; -n selects another")
		}
		return nil, nil, nil, kc.Classify(err, "reading the job")
	}
	return kc, cl, job, nil
}

// jobAndPods finds job name (findJob) and its pods.
func (a *App) jobAndPods(ctx context.Context, name string) (*kube.Clients, *jobs.Cluster, *unstructured.Unstructured, []corev1.Pod, error) {
	kc, cl, job, err := a.findJob(ctx, name)
	if err != nil {
		return nil, nil, nil, nil, err
	}
	pods, err := cl.JobPods(ctx, job)
	if err != nil {
		return nil, nil, nil, nil, kc.Classify(err, "reading the job's pods")
	}
	return kc, cl, job, pods, nil
}
