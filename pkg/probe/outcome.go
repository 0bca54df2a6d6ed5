package probe

import (
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// Source names where out.Log came from.
func (out *Outcome) Source() string {
	if out.FromMessage {
		return "termination message"
	}
	return "log"
}

// NotRun explains a probe that gave no output, in one line: the create's error, or the pod's
// phase with the scheduler's, the kubelet's and the runtime's reasons.
func (out *Outcome) NotRun() string {
	if out.CreateErr != nil {
		return "creating the probe pod: " + out.CreateErr.Error()
	}
	p := out.Pod
	s := "probe pod " + p.Name + " " + string(p.Status.Phase)
	if p.Status.Phase == "" {
		s = "probe pod " + p.Name + " not started"
	}
	if p.Status.Reason != "" || p.Status.Message != "" {
		s += ": " + strings.TrimSpace(p.Status.Reason+" "+p.Status.Message)
	}
	for _, c := range p.Status.Conditions {
		if c.Status == corev1.ConditionFalse && c.Message != "" {
			s += "; " + string(c.Type) + ": " + c.Message
		}
	}
	for _, cs := range p.Status.ContainerStatuses {
		if w := cs.State.Waiting; w != nil && w.Reason != "" {
			s += "; " + w.Reason + " " + w.Message
		}
	}
	if out.LogErr != nil {
		s += "; reading its log: " + out.LogErr.Error()
	}
	return s
}

// Err is why the probe gave no result, as one of the typed errors below (nil when its script
// ran and exited 0): a *CreateError, *PendingError, *ImagePullError, *ScriptError or
// *TimeoutError.
func (out *Outcome) Err() error {
	p := out.Pod
	switch {
	case out.CreateErr != nil:
		return &CreateError{Pod: p.Name, Err: out.CreateErr}
	case p.Status.Phase == corev1.PodSucceeded && out.Log != nil:
		return nil
	case p.Status.Phase == corev1.PodSucceeded:
		return fmt.Errorf("probe pod %s: reading its output: %w", p.Name, out.LogErr)
	case p.Status.Reason == "DeadlineExceeded": // the kubelet at activeDeadlineSeconds (k8s.io/kubernetes v1.37.2 pkg/kubelet/active_deadline.go)
		return &TimeoutError{Pod: p.Name, Timeout: out.Timeout, State: out.NotRun()}
	case p.Status.Phase == corev1.PodFailed && exitCode(p) != nil:
		return &ScriptError{Pod: p.Name, Node: p.Spec.NodeName, ExitCode: *exitCode(p), Output: out.Log}
	}
	if reason, msg := PullProblem(p); reason != "" && reason != Pulling {
		return &ImagePullError{Pod: p.Name, Image: p.Spec.Containers[0].Image, Reason: reason, Message: msg}
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse {
			return &PendingError{Pod: p.Name, Reason: c.Reason, Message: c.Message}
		}
	}
	return &TimeoutError{Pod: p.Name, Timeout: out.Timeout, State: out.NotRun()}
}

func exitCode(p *corev1.Pod) *int32 {
	for _, cs := range p.Status.ContainerStatuses {
		if t := cs.State.Terminated; cs.Name == Container && t != nil {
			return &t.ExitCode
		}
	}
	return nil
}

// Pulling is PullProblem's reason while the image is still being pulled.
const Pulling = "pulling"

// PullProblem says why a probe pod's image was not pulled (the kubelet's waiting reason and
// message), Pulling while it is still being pulled, "" when it was or nothing says.
func PullProblem(p *corev1.Pod) (reason, msg string) {
	for _, cs := range p.Status.ContainerStatuses {
		if w := cs.State.Waiting; w != nil {
			switch w.Reason {
			case "ErrImagePull", "ImagePullBackOff", "InvalidImageName", "ErrImageNeverPull", "RegistryUnavailable":
				return w.Reason, w.Message
			case "ContainerCreating", "PodInitializing":
				return Pulling, w.Message
			}
		}
	}
	return "", ""
}

// CreateError: the API server refused the probe pod (RBAC, Pod Security admission, a quota).
type CreateError struct {
	Pod string
	Err error
}

func (e *CreateError) Error() string { return "creating the probe pod: " + e.Err.Error() }
func (e *CreateError) Unwrap() error { return e.Err }

// PendingError: the scheduler did not place the probe pod; Reason and Message are its
// PodScheduled condition's (Unschedulable, "0/3 nodes are available: ..."), which the scheduler
// sets with the FailedScheduling event.
type PendingError struct {
	Pod, Reason, Message string
}

func (e *PendingError) Error() string {
	return fmt.Sprintf("probe pod %s Pending: not scheduled: %s", e.Pod, strings.TrimSpace(e.Reason+" "+e.Message))
}

// ImagePullError: the kubelet could not pull the probe's image.
type ImagePullError struct {
	Pod, Image, Reason, Message string
}

func (e *ImagePullError) Error() string {
	return fmt.Sprintf("probe pod %s: image %s cannot be pulled: %s", e.Pod, e.Image, strings.TrimSpace(e.Reason+" "+e.Message))
}

// ScriptError: the probe's script ran and exited non-zero; Output is what it printed.
type ScriptError struct {
	Pod, Node string
	ExitCode  int32
	Output    []byte
}

func (e *ScriptError) Error() string {
	return fmt.Sprintf("probe pod %s: its script exited %d", e.Pod, e.ExitCode)
}

// TimeoutError: the probe pod did not end within the timeout; State says where it was.
type TimeoutError struct {
	Pod     string
	Timeout time.Duration
	State   string
}

func (e *TimeoutError) Error() string {
	return fmt.Sprintf("probe pod %s did not end within %s: %s", e.Pod, e.Timeout, e.State)
}
