package cli

import (
	"context"
	"errors"
	"fmt"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/ain-hpc/ain/internal/ainerr"
	"github.com/ain-hpc/ain/pkg/kube"
	"github.com/ain-hpc/ain/pkg/train"
	"github.com/ain-hpc/ain/pkg/vllm"
)

// What an interrupt (Ctrl-C, SIGTERM) leaves behind is always said: a command never stops
// half-way through applying a bundle (kube.Applier.Apply finishes it), and a job left running
// is named with the commands to follow and to end it.

// errInterrupted is the error of a command stopped by an interrupt (exit 130). What it left
// was already printed.
func errInterrupted() error { return ainerr.New(ainerr.Cancelled, errors.New("interrupted"), "") }

// nsFlag is " -n NS", for commands printed as hints (a hint without it acts on the default
// namespace, not the one the job is in).
func nsFlag(ns string) string {
	if ns == "" {
		return ""
	}
	return " -n " + ns
}

// printInterrupted says what an interrupt of `ain train` left: the job keeps running (how to
// follow and end it), or what --delete-on-interrupt deleted. Before the apply nothing exists and
// the error says so.
func (a *App) printInterrupted(e *train.InterruptedError) {
	w := a.Streams.Err
	ns := nsFlag(e.Namespace)
	switch e.Stage {
	case train.StageBeforeApply:
		return
	case train.StageApplying:
		fmt.Fprintf(w, "\ninterrupted while applying: the apply was finished rather than left half-done (%s %s/%s and its objects exist)\n", e.Kind, e.Namespace, e.Name)
	default:
		fmt.Fprintf(w, "\ninterrupted %s %s %s/%s (%s)\n", e.Stage, e.Kind, e.Namespace, e.Name, e.Phase)
	}
	switch {
	case !e.DeleteAsked:
		fmt.Fprintf(w, "%s %s/%s keeps running. Follow it: ain status %s%s   ain logs %s%s -f\nEnd it: ain delete %s%s\n",
			e.Kind, e.Namespace, e.Name, e.Name, ns, e.Name, ns, e.Name, ns)
	case len(e.Deleted) > 0:
		fmt.Fprintf(w, "--delete-on-interrupt: deleted %s\n", strings.Join(e.Deleted, ", "))
	case e.Gone:
		fmt.Fprintf(w, "--delete-on-interrupt: %s %s/%s is already gone\n", e.Kind, e.Namespace, e.Name)
	default:
		fmt.Fprintf(w, "--delete-on-interrupt: could not delete %s %s/%s (%v): it may still be running. End it: ain delete %s%s\n",
			e.Kind, e.Namespace, e.Name, e.DeleteErr, e.Name, ns)
	}
}

// interruptedServe reports an interrupt during `ain serve`'s apply. The Secrets, Service and
// Ingress were applied (as one bundle); deps are the Deployments applied after them. A first
// deployment interrupted before its Deployments were sent is finished (a Service without its
// Deployments serves nothing); a rolling update interrupted between replicas is left as it is,
// each replica whole, and said so.
func (a *App) interruptedServe(ctx context.Context, kc *kube.Clients, cl *vllm.Cluster, objs *vllm.Objects, deps []runtime.Object) error {
	w := a.Streams.Err
	ns := nsFlag(kc.Namespace)
	follow := fmt.Sprintf("Follow it: ain serve status %s%s\nEnd it: ain serve delete %s%s\n", objs.Name, ns, objs.Name, ns)
	total := len(objs.Deployments)
	switch {
	case len(deps) == total:
		fmt.Fprintf(w, "\ninterrupted while applying: the apply was finished rather than left half-done (%d Deployment(s) and their Service exist); the model server keeps starting.\n%s", total, follow)
	case len(deps) > 0:
		fmt.Fprintf(w, "\ninterrupted during the rolling update: %d of %d replica(s) have the new spec, the others keep the previous one and keep serving. `ain serve` again finishes the update.\n%s", len(deps), total, follow)
	default:
		fctx, cancel := kube.Finishing(ctx)
		defer cancel()
		existing := 0
		for _, d := range objs.Deployments {
			if _, err := cl.Kube.AppsV1().Deployments(cl.Namespace).Get(fctx, d.Name, metav1.GetOptions{}); err == nil {
				existing++
			}
		}
		if existing > 0 {
			fmt.Fprintf(w, "\ninterrupted before the rolling update: the Service is applied, the %d existing Deployment(s) keep their previous spec and keep serving. `ain serve` again rolls them.\n%s", existing, follow)
			break
		}
		if _, err := cl.Apply(fctx, deploymentObjects(objs), false); err != nil {
			fmt.Fprintf(w, "\ninterrupted while applying, and finishing the apply failed (%v): the Service exists without its Deployments.\nRemove it: ain serve delete %s%s\n", err, objs.Name, ns)
			return errInterrupted()
		}
		for _, d := range objs.Deployments {
			fmt.Fprintf(w, "applied Deployment %s/%s\n", cl.Namespace, d.Name)
		}
		fmt.Fprintf(w, "\ninterrupted while applying: the apply was finished rather than left half-done (a Service without its Deployments serves nothing); the model server keeps starting.\n%s", follow)
	}
	return errInterrupted()
}
