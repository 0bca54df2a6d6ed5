package kube

import (
	"context"
	"errors"
	"net"
	"net/url"
	"strings"
	"syscall"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/ain-hpc/ain/pkg/next"
)

// Issue 19: a killed webhook was reported as "cannot reach the API server" (its error says
// "connection refused"), and an interrupt as a network fault.
func TestClassify(t *testing.T) {
	c := &Clients{Kubeconfig: "/k", Context: "ctx", Server: "https://127.0.0.1:6443", Namespace: "ns"}
	// The API server's own message for a webhook it cannot call (k8s.io/apiserver
	// pkg/util/webhook/error.go, wrapped in NewInternalError by the validating dispatcher).
	webhook := apierrors.NewInternalError(errors.New(`failed calling webhook "validator.pytorchjob.training-operator.kubeflow.org": failed to call webhook: Post "https://training-operator.kubeflow.svc:443/validate-kubeflow-org-v1-pytorchjob?timeout=10s": dial tcp 127.0.0.1:9443: connect: connection refused`))
	for _, tc := range []struct {
		name    string
		err     error
		reason  Reason
		want    []string
		mustNot string
	}{
		{"webhook down", webhook, ReasonWebhookUnreachable,
			[]string{`admission webhook "validator.pytorchjob.training-operator.kubeflow.org"`, "dial tcp 127.0.0.1:9443: connect: connection refused"}, "cannot reach the API server"},
		{"interrupt", &url.Error{Op: "Patch", URL: "https://x", Err: context.Canceled}, ReasonInterrupted, []string{"interrupted"}, "cannot reach"},
		{"refused", &url.Error{Op: "Get", URL: "https://x", Err: syscall.ECONNREFUSED}, ReasonUnreachable, []string{"cannot reach the API server"}, "webhook"},
		{"forbidden", apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, "p", errors.New("no")), ReasonForbidden, []string{"forbidden"}, "cannot reach"},
		// A validating webhook's denial comes with 403 (controller-runtime admission.Denied): it
		// refuses the object, not the user, so no RBAC hint (same-name runs were told to ask for RBAC).
		{"webhook denial", &apierrors.StatusError{ErrStatus: metav1.Status{Status: metav1.StatusFailure, Code: 403, Reason: metav1.StatusReasonForbidden,
			Message: `admission webhook "validate.trainjob.trainer.kubeflow.org" denied the request: spec.runtimeRef: Invalid value: {"name":"ar"}: TrainingRuntime.trainer.kubeflow.org "ar" not found: specified trainingRuntime must be created before the TrainJob is created`}},
			ReasonWebhookDenied, []string{"denied the request"}, "RBAC"},
	} {
		err := c.Classify(tc.err, "applying the job")
		msg := err.Error()
		var ce *CallError
		if !errors.As(err, &ce) || ce.Reason != tc.reason || ce.Where != c.Where() || ce.Namespace != "ns" {
			t.Errorf("%s: %#v, want reason %d (%s)", tc.name, ce, tc.reason, msg)
		}
		for _, w := range tc.want {
			if !strings.Contains(msg, w) {
				t.Errorf("%s: %q lacks %q", tc.name, msg, w)
			}
		}
		if strings.Contains(msg, tc.mustNot) {
			t.Errorf("%s: %q says %q", tc.name, msg, tc.mustNot)
		}
	}
}

// TestOutage: what a wait rides out (the API server or etcd briefly away) and what ends it.
func TestOutage(t *testing.T) {
	gr := schema.GroupResource{Group: "apps", Resource: "deployments"}
	refused := &url.Error{Op: "Get", URL: "https://127.0.0.1:6443/apis", Err: &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}}
	for _, c := range []struct {
		name string
		err  error
		want bool
	}{
		{"connection refused", refused, true},
		{"503 etcd starting", apierrors.NewServiceUnavailable("etcd is starting"), true},
		{"500 etcd timeout", apierrors.NewInternalError(errors.New("etcdserver: request timed out")), true},
		{"429", apierrors.NewTooManyRequests("slow down", 1), true},
		{"504", apierrors.NewTimeoutError("timed out", 1), true},
		{"forbidden", apierrors.NewForbidden(gr, "rr-0", errors.New("no")), false},
		{"not found", apierrors.NewNotFound(gr, "rr-0"), false},
		{"cancelled", &url.Error{Op: "Get", URL: "https://127.0.0.1:6443/apis", Err: context.Canceled}, false},
		{"deadline", context.DeadlineExceeded, false},
		{"a decoding error", errors.New("json: cannot unmarshal string"), false},
		{"nil", nil, false},
		{"a webhook down", apierrors.NewInternalError(errors.New(`failed calling webhook "validator.pytorchjob.training-operator.kubeflow.org": failed to call webhook: Post "https://x:443/validate": dial tcp 127.0.0.1:9443: connect: connection refused`)), false},
	} {
		if got := Outage(c.err); got != c.want {
			t.Errorf("%s: Outage(%v) = %v, want %v", c.name, c.err, got, c.want)
		}
	}
}

// Each reason's advice names what fixes it, its commands worded by the caller.
func TestCallErrorAdvice(t *testing.T) {
	cmd := func(c next.Command) string { return "X " + string(c) }
	for _, tc := range []struct {
		e    CallError
		want string
	}{
		{CallError{Reason: ReasonNoCluster}, "start the local simulated cluster with `X sandbox up`, or point --kubeconfig at your cluster"},
		{CallError{Reason: ReasonForbidden, Namespace: "team", Where: "ctx c"}, "your user may not do this in namespace team (ctx c): ask for RBAC access (`X preflight --print-role` prints what ain needs) or use -n"},
		{CallError{Reason: ReasonForbidden, ClusterScope: true, Where: "ctx c"}, "this is a cluster-wide resource"},
		{CallError{Reason: ReasonUnreachable, Where: "ctx c"}, "is the cluster up? (ctx c)"},
		{CallError{Reason: ReasonUnreachable, Sandbox: true}, "the local sandbox is not answering: `X sandbox status`, or `X sandbox up`"},
		{CallError{Reason: ReasonWebhookUnreachable}, "check its pod and run `X preflight`"},
	} {
		if got := tc.e.Advice(cmd); !strings.Contains(got, tc.want) {
			t.Errorf("reason %d: %q, want %q", tc.e.Reason, got, tc.want)
		}
	}
	if got := (&CallError{Reason: ReasonInterrupted}).Advice(cmd); got != "" {
		t.Errorf("interrupted: %q, want no advice", got)
	}
}
