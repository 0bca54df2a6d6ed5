package cli

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"

	"github.com/ain-hpc/ain/internal/ainerr"
	"github.com/ain-hpc/ain/pkg/jobs"
	"github.com/ain-hpc/ain/pkg/kube"
	"github.com/ain-hpc/ain/pkg/nccl"
	"github.com/ain-hpc/ain/pkg/preflight"
	"github.com/ain-hpc/ain/pkg/profile"
)

// jobArg reports whether the doctor's only argument names a job rather than a file (jobs.NameArg).
func jobArg(args []string) (string, bool) { return jobs.NameArg(args) }

// jobPods checks the doctor flags for a job, finds job name and its pods through the API
// server, and notes when the cluster is the sandbox.
func (a *App) jobPods(ctx context.Context, o *doctorOptions, name string) (*kube.Clients, *jobs.Cluster, string, []corev1.Pod, error) {
	if err := o.validate(1, 1, "the job"); err != nil {
		return nil, nil, "", nil, err
	}
	kc, cl, job, pods, err := a.jobAndPods(ctx, name)
	if err != nil {
		// The argument named no file, so it was taken for a job: whatever failed (no such job, no
		// cluster configured, the cluster unreachable), say both were tried, so that a mistyped
		// file name does not read as a cluster problem.
		var ae *ainerr.Error
		if !errors.As(exitError(err), &ae) {
			ae = ainerr.New(ainerr.Failure, err, "")
		}
		hint := ae.Hint
		if ae.Code == ainerr.Usage {
			hint = "`ain list` shows the jobs; give a FILE to read a saved log"
		}
		return nil, nil, "", nil, ainerr.New(ae.Code, fmt.Errorf("%w (and there is no file named %s)", ae.Err, name), hint)
	}
	if len(pods) == 0 {
		return nil, nil, "", nil, ainerr.New(ainerr.Failure, fmt.Errorf("%s %s/%s has no pods (yet, or cleaned up by its cleanPodPolicy)", job.GetKind(), kc.Namespace, name), "")
	}
	a.sandboxNote(kc)
	return kc, cl, job.GetKind(), pods, nil
}

// runDoctorNCCLLogJob gives the transport verdict per rank from every rank's log of a job, read
// through the API server; a job that fell back to sockets gets its nodes' IB ports probed.
func (a *App) runDoctorNCCLLogJob(ctx context.Context, o *doctorOptions, name string) error {
	kc, cl, kind, pods, err := a.jobPods(ctx, o, name)
	if err != nil {
		return err
	}
	r, err := cl.NCCLLogs(ctx, kind, pods, func(pod string, err error) {
		fmt.Fprintf(a.Streams.Err, "warning: %s: reading its log: %v\n", pod, err)
	})
	if err != nil {
		return ainerr.New(ainerr.Failure, err, "")
	}
	err = a.reportNCCLLog(o, r)
	if r.Transport == nccl.TransportSocket && o.Output != "json" {
		a.portCause(ctx, kc, pods)
	}
	return err
}

// portCause probes the IB ports of the nodes a socket-fallback job ran on (failure 3 of the
// course), when the profile is an RDMA one.
func (a *App) portCause(ctx context.Context, kc *kube.Clients, pods []corev1.Pod) {
	p, err := profile.Load(profile.Options{Getenv: a.Getenv})
	nodes := jobs.Nodes(pods)
	if err != nil || !p.RDMA() || len(nodes) == 0 {
		return
	}
	preflight.WritePortCauseHeading(a.Streams.Out, nodes)
	preflight.WritePortCause(a.Streams.Out, preflight.ProbeIBPorts(ctx, a.preflightOptions(kc, nil, p), nodes), withNext)
}

// runDoctorLauncherJob judges an MPIJob launcher's log, read through the API server.
func (a *App) runDoctorLauncherJob(ctx context.Context, o *doctorOptions, name string) error {
	kc, cl, kind, pods, err := a.jobPods(ctx, o, name)
	if err != nil {
		return err
	}
	r, err := cl.LauncherReport(ctx, kind, name, pods,
		"the workers never became Ready within the gate's timeout: `ain status` / kubectl describe pod on them (Pending: resources; not Ready: image, readiness probe), then resubmit")
	var nl *jobs.NoLauncherError
	var le *jobs.PodLogError
	switch {
	case errors.As(err, &nl) && nl.Pending():
		return ainerr.New(ainerr.Failure, err, "`ain status "+name+nsFlag(kc.Namespace)+"` shows which workers are not Ready and why")
	case errors.As(err, &nl):
		return ainerr.Usagef("%v: `ain doctor launcher` reads MPIJob launchers", err)
	case errors.As(err, &le):
		return kc.Classify(le.Err, "reading the log of "+le.Pod)
	case err != nil:
		return ainerr.New(ainerr.Failure, err, "")
	}
	return a.reportLauncher(o, r)
}
