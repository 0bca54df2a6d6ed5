package vllm

import "fmt"

// BuildError says the serving objects could not be built from the recipe and profile.
type BuildError struct{ Err error }

func (e *BuildError) Error() string { return e.Err.Error() }
func (e *BuildError) Unwrap() error { return e.Err }

// ClusterError is a cluster call that failed while Doing something ("applying the model server").
type ClusterError struct {
	Doing string
	Err   error
}

func (e *ClusterError) Error() string { return e.Doing + ": " + e.Err.Error() }
func (e *ClusterError) Unwrap() error { return e.Err }

// EntryTLSError says the TLS Secret of the entry is unusable (Err is a TLSProblem). Field is the
// recipe field holding the entry's TLS settings: "ingress" or "gateway".
type EntryTLSError struct {
	Field string
	Err   error
}

func (e *EntryTLSError) Error() string { return e.Err.Error() }
func (e *EntryTLSError) Unwrap() error { return e.Err }

// KeyUnreadableError says Options.WriteKey was set but the server's key is not one ain can
// read (Auth describes where it comes from).
type KeyUnreadableError struct{ Auth Auth }

func (e *KeyUnreadableError) Error() string {
	return e.Auth.Describe() + ", whose value ain cannot read"
}

// ApplyError says the API server refused the apply. Created lists what went in before the
// refusal ("KIND NAMESPACE/NAME", the TLS Secret this run created first) and stays.
type ApplyError struct {
	Name    string // the model server's
	Created []string
	Err     error
}

func (e *ApplyError) Error() string { return e.Err.Error() }
func (e *ApplyError) Unwrap() error { return e.Err }

// InterruptStage is where an interrupt of Deploy came.
type InterruptStage int

// The stages an interrupt can come in.
const (
	// InterruptedBuilding: the interrupt came while the objects were built; nothing was read.
	InterruptedBuilding InterruptStage = iota
	// InterruptedBeforeApply: nothing of the model server was applied (TLSSecret may be).
	InterruptedBeforeApply
	// InterruptedApplyFinished: every Deployment was applied (Deployed of Total).
	InterruptedApplyFinished
	// InterruptedRolling: Deployed of Total replicas have the new spec; the others keep the
	// previous one.
	InterruptedRolling
	// InterruptedBeforeRolling: Existing Deployments keep their previous spec.
	InterruptedBeforeRolling
	// InterruptedFinished: no Deployment existed; Deploy applied them all rather than leave a
	// Service without them.
	InterruptedFinished
	// InterruptedFinishFailed: finishing the apply failed (FinishErr); the Service exists
	// without its Deployments.
	InterruptedFinishFailed
)

// InterruptedError says Deploy was interrupted (its context ended) and what that left.
type InterruptedError struct {
	Stage     InterruptStage
	Name      string // the model server's
	TLSSecret string // created by this run before the interrupt (InterruptedBeforeApply)
	Deployed  int
	Existing  int
	Total     int
	FinishErr error
}

func (e *InterruptedError) Error() string {
	switch e.Stage {
	case InterruptedBeforeApply:
		if e.TLSSecret != "" {
			return fmt.Sprintf("interrupted before the model server was applied: only the TLS Secret %s was created", e.TLSSecret)
		}
		return "interrupted before the model server was applied: nothing was created"
	case InterruptedFinishFailed:
		return fmt.Sprintf("interrupted while applying, and finishing the apply failed (%v): the Service exists without its Deployments", e.FinishErr)
	}
	return "interrupted"
}
