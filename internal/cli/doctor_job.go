package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/ain-hpc/ain/internal/ainerr"
	"github.com/ain-hpc/ain/pkg/jobs"
	"github.com/ain-hpc/ain/pkg/kube"
	"github.com/ain-hpc/ain/pkg/mpilauncher"
	"github.com/ain-hpc/ain/pkg/nccl"
	"github.com/ain-hpc/ain/pkg/preflight"
	"github.com/ain-hpc/ain/pkg/profile"
)

// jobArg reports whether the doctor's only argument names a job rather than a file: it is not
// "-", no such file exists, and it is a valid job name.
func jobArg(args []string) (string, bool) {
	if len(args) != 1 || args[0] == "-" {
		return "", false
	}
	if _, err := os.Stat(args[0]); err == nil {
		return "", false
	}
	if len(validation.IsDNS1123Label(args[0])) > 0 {
		return "", false
	}
	return args[0], true
}

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

// runDoctorNCCLLogJob reads every rank's log of a job through the API server (one stream at a
// time, in constant memory) and gives the transport verdict per rank.
func (a *App) runDoctorNCCLLogJob(ctx context.Context, o *doctorOptions, name string) error {
	kc, cl, kind, pods, err := a.jobPods(ctx, o, name)
	if err != nil {
		return err
	}
	an := nccl.NewLogAnalyzer()
	container := jobs.MainContainer(kind)
	for i := range pods {
		p := &pods[i]
		cname := container
		if !jobs.HasContainer(p, cname) {
			cname = ""
		}
		rc, err := cl.PodLogs(ctx, p.Name, cname, -1, false)
		if err != nil {
			fmt.Fprintf(a.Streams.Err, "warning: %s: reading its log: %v\n", p.Name, err)
			continue
		}
		err = an.Feed(p.Name, rc)
		rc.Close()
		if err != nil {
			return ainerr.New(ainerr.Failure, fmt.Errorf("%s: %w", p.Name, err), "")
		}
	}
	r := an.Report()
	err = a.reportNCCLLog(o, r)
	if r.Transport == nccl.TransportSocket && o.Output != "json" {
		a.portCause(ctx, kc, pods)
	}
	return err
}

// portCause probes the IB ports of the nodes a socket-fallback job ran on: a port that is not
// ACTIVE (failure 3) is silently skipped by NCCL and shows in its log only as the fallback.
func (a *App) portCause(ctx context.Context, kc *kube.Clients, pods []corev1.Pod) {
	p, err := profile.Load(profile.Options{Getenv: a.Getenv})
	if err != nil || !p.RDMA() {
		return
	}
	seen := map[string]bool{}
	var nodes []string
	for _, pod := range pods {
		if n := pod.Spec.NodeName; n != "" && !seen[n] {
			seen[n] = true
			nodes = append(nodes, n)
		}
	}
	if len(nodes) == 0 {
		return
	}
	w := a.Streams.Out
	fmt.Fprintf(w, "\nIB ports of the job's nodes (%s), probed now: a port not ACTIVE is skipped by NCCL silently\n", strings.Join(nodes, ", "))
	opts := a.preflightOptions(kc, nil, p)
	checks := preflight.ProbeIBPorts(ctx, opts, nodes)
	bad := 0
	for _, c := range checks {
		if c.Status == preflight.Pass {
			fmt.Fprintf(w, "  ok: %s\n", c.Message)
			continue
		}
		bad++
		fmt.Fprintf(w, "  cause [%s] %s: %s\n", c.Status, c.Target, c.Message)
		for _, e := range c.Evidence {
			fmt.Fprintf(w, "    evidence: %s\n", e)
		}
		if c.Fix != "" {
			fmt.Fprintf(w, "    fix: %s\n", withNext(c.Fix, c.Next))
		}
	}
	if bad == 0 {
		fmt.Fprintln(w, "  the port state is not the cause: look at the other causes above (RDMA resource, IPC_LOCK, NCCL_IB_HCA, libibverbs)")
	}
}

// runDoctorLauncherJob reads an MPIJob launcher's log through the API server. A launcher that
// failed in ain's worker gate (its init container timed out) is reported from the gate's log.
func (a *App) runDoctorLauncherJob(ctx context.Context, o *doctorOptions, name string) error {
	kc, cl, kind, pods, err := a.jobPods(ctx, o, name)
	if err != nil {
		return err
	}
	launcher := jobs.Launcher(pods)
	if launcher == nil {
		if kind == jobs.TrainJobKind || kind == "MPIJob" {
			// v2beta1 (WaitForWorkersReady) and a TrainJob's MPI runtime (dependsOn node Ready)
			// create the launcher only once every worker is Ready.
			return ainerr.New(ainerr.Failure, fmt.Errorf("%s %s has no launcher pod (yet): on the mpi-operator and the Trainer the launcher is created only when every worker pod is Ready", kind, name),
				"`ain status "+name+nsFlag(kc.Namespace)+"` shows which workers are not Ready and why")
		}
		return ainerr.Usagef("%s is a %s without a launcher pod: `ain doctor launcher` reads MPIJob launchers", name, kind)
	}
	if r := a.gateVerdict(ctx, cl, launcher); r != nil {
		return a.reportLauncher(o, r)
	}
	cname := jobs.MainContainer(kind)
	if !jobs.HasContainer(launcher, cname) {
		cname = ""
	}
	rc, err := cl.PodLogs(ctx, launcher.Name, cname, -1, false)
	if err != nil {
		return kc.Classify(err, "reading the log of "+launcher.Name)
	}
	r, err := mpilauncher.Analyze(rc)
	rc.Close()
	if err != nil {
		return ainerr.New(ainerr.Failure, err, "")
	}
	return a.reportLauncher(o, r)
}

// gateVerdict returns a launcher-before-workers verdict when ain's worker gate gave up, nil
// otherwise.
func (a *App) gateVerdict(ctx context.Context, cl *jobs.Cluster, launcher *corev1.Pod) *mpilauncher.Report {
	if !jobs.GateFailed(launcher) {
		return nil
	}
	rc, err := cl.PodLogs(ctx, launcher.Name, jobs.GateContainer, 50, false)
	if err != nil {
		return nil
	}
	defer rc.Close()
	return mpilauncher.GateReport(rc, jobs.GateLogPrefix,
		"the workers never became Ready within the gate's timeout: `ain status` / kubectl describe pod on them (Pending: resources; not Ready: image, readiness probe), then resubmit")
}
