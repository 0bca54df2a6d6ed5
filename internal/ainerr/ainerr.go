// Package ainerr holds the exit codes of ain's commands and the error that carries one with a
// hint. Only the command tree uses it: the libraries under pkg/ return typed errors of their
// own, which the command tree maps to these.
package ainerr

import (
	"errors"
	"fmt"
)

// Code is a process exit status. The table is documented in README.md.
type Code int

// Exit codes. Keep README.md's table in step with these.
const (
	OK              Code = 0
	Failure         Code = 1   // any other error
	Usage           Code = 2   // bad flags, arguments, recipe or profile
	JobFailed       Code = 3   // the job or workload ended Failed
	PreflightFailed Code = 4   // a preflight check failed
	CheckFailed     Code = 5   // the job ran but a check failed (e.g. NCCL used sockets, answer checks below --min-pass)
	Timeout         Code = 6   // --timeout reached
	Unreachable     Code = 7   // the cluster did not answer
	Unauthorized    Code = 8   // the cluster refused our credentials
	Cancelled       Code = 130 // interrupted (Ctrl-C)
)

// Error is an error with an exit code and an optional hint telling the user what to do next.
type Error struct {
	Code Code
	Err  error
	Hint string
}

func (e *Error) Error() string {
	if e.Err == nil {
		return fmt.Sprintf("exit %d", e.Code)
	}
	return e.Err.Error()
}

func (e *Error) Unwrap() error { return e.Err }

// New returns an error with the given code.
func New(code Code, err error, hint string) *Error { return &Error{Code: code, Err: err, Hint: hint} }

// Newf formats a message into an error with the given code.
func Newf(code Code, format string, args ...any) *Error {
	return &Error{Code: code, Err: fmt.Errorf(format, args...)}
}

// Usagef is a usage error (exit 2).
func Usagef(format string, args ...any) *Error { return Newf(Usage, format, args...) }

// WithHint returns err carrying code and hint; an existing *Error keeps its code.
func WithHint(err error, hint string) error {
	var e *Error
	if errors.As(err, &e) {
		if e.Hint == "" {
			e.Hint = hint
		}
		return err
	}
	return &Error{Code: Failure, Err: err, Hint: hint}
}

// CodeOf returns the exit code for err: OK for nil, the code of the outermost *Error, else Failure.
func CodeOf(err error) Code {
	if err == nil {
		return OK
	}
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return Failure
}

// HintOf returns the hint attached to err, if any.
func HintOf(err error) string {
	var e *Error
	if errors.As(err, &e) {
		return e.Hint
	}
	return ""
}
