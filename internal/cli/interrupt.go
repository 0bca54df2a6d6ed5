package cli

import (
	"errors"
	"fmt"
	"strings"

	"github.com/ain-hpc/ain/internal/ainerr"
	"github.com/ain-hpc/ain/pkg/train"
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
