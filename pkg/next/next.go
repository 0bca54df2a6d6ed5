// Package next holds the ain command that a finding, a check or an error suggests running next,
// as data: the libraries say in words what to look at and name the subcommand; only the command
// tree (internal/cli) knows the binary's name and prints "ain " before it.
package next

import "errors"

// Command is an ain subcommand with its arguments, without the binary's name, e.g.
// "doctor ib-ports" or "preflight --print-role --node-read". Upper-case words are placeholders
// the user fills in ("doctor counters --node NODE").
type Command string

// Error is an error that suggests commands to run next.
type Error struct {
	Err  error
	Next []Command
}

func (e *Error) Error() string { return e.Err.Error() }
func (e *Error) Unwrap() error { return e.Err }

// NextCommands returns e.Next.
func (e *Error) NextCommands() []Command { return e.Next }

// Suggester is an error that suggests commands to run next (*Error, or a library's own error
// type such as a list of field problems).
type Suggester interface {
	error
	NextCommands() []Command
}

// With returns err suggesting the commands next; nil stays nil.
func With(err error, next ...Command) error {
	if err == nil {
		return nil
	}
	return &Error{Err: err, Next: next}
}

// Of returns the commands the outermost Suggester in err's chain suggests.
func Of(err error) []Command {
	var s Suggester
	if errors.As(err, &s) {
		return s.NextCommands()
	}
	return nil
}

// In is c acting on namespace ns: c followed by " -n NS", or c itself when ns is "".
func (c Command) In(ns string) Command {
	if ns == "" {
		return c
	}
	return c + " -n " + Command(ns)
}

// Hinter is an error that says what usually fixes it, the commands it names formatted by cmd
// (the command tree puts the binary's name before them).
type Hinter interface {
	error
	Hint(cmd func(Command) string) string
}
