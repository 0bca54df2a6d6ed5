package kube

import (
	"errors"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// NotFoundError says an object (or its kind: the CRD is not installed) does not exist.
type NotFoundError struct {
	Kind, Name, Namespace string
	Err                   error // the API server's answer
}

func (e *NotFoundError) Error() string {
	return fmt.Sprintf("%s %s/%s not found: %s", e.Kind, e.Namespace, e.Name, apiMessage(e.Err))
}
func (e *NotFoundError) Unwrap() error { return e.Err }

// ForbiddenError says RBAC (or an admission policy) refused a request.
type ForbiddenError struct {
	Verb, Kind, Name, Namespace string
	Err                         error
}

func (e *ForbiddenError) Error() string {
	return fmt.Sprintf("%s %s %s/%s: forbidden: %s", e.Verb, e.Kind, e.Namespace, e.Name, apiMessage(e.Err))
}
func (e *ForbiddenError) Unwrap() error { return e.Err }

// ConflictError says another field manager owns fields ain tried to set (server-side apply
// without force), or the object changed under us; Message is the server's list of conflicts.
type ConflictError struct {
	Kind, Name, Namespace string
	Err                   error
}

func (e *ConflictError) Error() string {
	return fmt.Sprintf("%s %s/%s: conflict: %s", e.Kind, e.Namespace, e.Name, apiMessage(e.Err))
}
func (e *ConflictError) Unwrap() error { return e.Err }

// typed wraps an API error about one object into NotFoundError, ForbiddenError or
// ConflictError; other errors are wrapped with the object's name. The API status stays
// reachable through errors.As, so Clients.Classify still maps it to an exit code.
func typed(err error, verb, kind, name, ns string) error {
	switch {
	case err == nil:
		return nil
	case apierrors.IsNotFound(err):
		return &NotFoundError{Kind: kind, Name: name, Namespace: ns, Err: err}
	case apierrors.IsForbidden(err):
		return &ForbiddenError{Verb: verb, Kind: kind, Name: name, Namespace: ns, Err: err}
	case apierrors.IsConflict(err):
		return &ConflictError{Kind: kind, Name: name, Namespace: ns, Err: err}
	}
	return fmt.Errorf("%s %s %s: %w", verb, kind, name, err)
}

// IsNotFound reports whether err says an object or its kind does not exist (a NotFoundError
// or a bare 404 from the API server).
func IsNotFound(err error) bool {
	var nf *NotFoundError
	return errors.As(err, &nf) || apierrors.IsNotFound(err)
}

// IsForbidden reports whether err is a refusal by RBAC or admission.
func IsForbidden(err error) bool {
	var fe *ForbiddenError
	return errors.As(err, &fe) || apierrors.IsForbidden(err)
}
