package kube

import "fmt"

// Reason says why a cluster operation failed, in terms a caller can act on; the command layer
// turns it into an exit status and a hint (internal/cli), pkg/kube does neither.
type Reason int

const (
	// ReasonNoCluster: no kubeconfig anywhere and no local sandbox.
	ReasonNoCluster Reason = iota + 1
	// ReasonBadKubeconfig: the kubeconfig named (flag or $KUBECONFIG) is missing or invalid.
	ReasonBadKubeconfig
	// ReasonInterrupted: the context was cancelled (Ctrl-C), not a network fault.
	ReasonInterrupted
	// ReasonUnauthorized: 401, the credentials were not accepted.
	ReasonUnauthorized
	// ReasonForbidden: 403 from RBAC.
	ReasonForbidden
	// ReasonWebhookDenied: an admission webhook refused the object (whatever its status code).
	ReasonWebhookDenied
	// ReasonWebhookUnreachable: the API server answered, but could not call an admission webhook.
	ReasonWebhookUnreachable
	// ReasonUnreachable: the API server did not answer.
	ReasonUnreachable
)

// CallError is a classified cluster error. Its message is complete for a user; Where, Namespace and
// Sandbox say which cluster, so the caller can word its advice.
type CallError struct {
	Reason Reason
	Err    error
	// Where describes the kubeconfig, context and server (Clients.Where).
	Where     string
	Namespace string
	Sandbox   bool
	// Webhook names the admission webhook, for ReasonWebhookUnreachable.
	Webhook string
	// ClusterScope: a ReasonForbidden request was for a cluster-scoped resource (nodes,
	// StorageClasses, CRDs), which no namespace grants.
	ClusterScope bool
}

func (e *CallError) Error() string { return e.Err.Error() }
func (e *CallError) Unwrap() error { return e.Err }

func (c *Clients) errorf(r Reason, format string, args ...any) *CallError {
	return &CallError{Reason: r, Err: fmt.Errorf(format, args...), Where: c.Where(), Namespace: c.Namespace, Sandbox: c.Sandbox}
}
