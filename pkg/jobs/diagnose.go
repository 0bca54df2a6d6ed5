package jobs

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/ain-hpc/ain/pkg/mpilauncher"
	"github.com/ain-hpc/ain/pkg/nccl"
)

// NameArg reports whether args, a command's arguments, are one job name rather than a file:
// not "-", no such file, and a valid job name.
func NameArg(args []string) (string, bool) {
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

// Nodes are the nodes pods are bound to, each once, in the pods' order.
func Nodes(pods []corev1.Pod) []string {
	seen := map[string]bool{}
	var nodes []string
	for _, p := range pods {
		if n := p.Spec.NodeName; n != "" && !seen[n] {
			seen[n] = true
			nodes = append(nodes, n)
		}
	}
	return nodes
}

// PodLogError is a pod whose log could not be opened.
type PodLogError struct {
	Pod string
	Err error
}

func (e *PodLogError) Error() string { return "reading the log of " + e.Pod + ": " + e.Err.Error() }
func (e *PodLogError) Unwrap() error { return e.Err }

// mainLog opens the log of p's container holding a job of kind's work (or its only container).
func (c *Cluster) mainLog(ctx context.Context, p *corev1.Pod, kind string) (io.ReadCloser, error) {
	cname := MainContainer(kind)
	if !HasContainer(p, cname) {
		cname = ""
	}
	rc, err := c.PodLogs(ctx, p.Name, cname, -1, false)
	if err != nil {
		return nil, &PodLogError{Pod: p.Name, Err: err}
	}
	return rc, nil
}

// NCCLLogs reads the log of each of pods (a job of kind's ranks) through the API server, one
// stream at a time, in constant memory, and gives the transport verdict per rank. A pod whose log
// cannot be opened goes to skipped and is left out.
func (c *Cluster) NCCLLogs(ctx context.Context, kind string, pods []corev1.Pod, skipped func(pod string, err error)) (*nccl.LogReport, error) {
	an := nccl.NewLogAnalyzer()
	for i := range pods {
		rc, err := c.mainLog(ctx, &pods[i], kind)
		if err != nil {
			skipped(pods[i].Name, errors.Unwrap(err))
			continue
		}
		err = an.Feed(pods[i].Name, rc)
		rc.Close()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", pods[i].Name, err)
		}
	}
	return an.Report(), nil
}

// NoLauncherError is a job (Kind, Name) with no launcher pod among its pods.
type NoLauncherError struct{ Kind, Name string }

// Pending reports whether the launcher may still come: the mpi-operator's v2beta1 MPIJob
// (WaitForWorkersReady) and a TrainJob's MPI runtime (dependsOn node Ready) create it only once
// every worker is Ready; other kinds have none.
func (e *NoLauncherError) Pending() bool { return e.Kind == TrainJobKind || e.Kind == "MPIJob" }

func (e *NoLauncherError) Error() string {
	if e.Pending() {
		return fmt.Sprintf("%s %s has no launcher pod (yet): on the mpi-operator and the Trainer the launcher is created only when every worker pod is Ready", e.Kind, e.Name)
	}
	return fmt.Sprintf("%s is a %s without a launcher pod", e.Name, e.Kind)
}

// LauncherReport judges the launcher's log of job name (of kind) among pods through the API
// server. A launcher that failed in ain's worker gate (its init container timed out) is judged
// from the gate's log, a launcher-before-workers verdict with gateFix as its fix. Errors:
// *NoLauncherError, *PodLogError, or the analyser's.
func (c *Cluster) LauncherReport(ctx context.Context, kind, name string, pods []corev1.Pod, gateFix string) (*mpilauncher.Report, error) {
	launcher := Launcher(pods)
	if launcher == nil {
		return nil, &NoLauncherError{Kind: kind, Name: name}
	}
	if GateFailed(launcher) {
		if rc, err := c.PodLogs(ctx, launcher.Name, GateContainer, 50, false); err == nil {
			defer rc.Close()
			return mpilauncher.GateReport(rc, GateLogPrefix, gateFix), nil
		}
	}
	rc, err := c.mainLog(ctx, launcher, kind)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	return mpilauncher.Analyze(rc)
}
