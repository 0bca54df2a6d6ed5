package cli

import (
	"errors"

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

// printInterrupted says what an interrupt of `ain train` left (train.InterruptedError.WriteText).
func (a *App) printInterrupted(e *train.InterruptedError) { e.WriteText(a.Streams.Err, ainCommand) }
