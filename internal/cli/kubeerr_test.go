package cli

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"syscall"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/ain-hpc/ain/internal/ainerr"
	"github.com/ain-hpc/ain/pkg/kube"
)

// TestExitError: pkg/kube says why a call failed; the command layer alone picks the exit code and
// the advice, also through a command's own wrapping, and a command's explicit code wins.
func TestExitError(t *testing.T) {
	c := &kube.Clients{Kubeconfig: "/k", Context: "ctx", Server: "https://127.0.0.1:6443", Namespace: "ns"}
	denial := &apierrors.StatusError{ErrStatus: metav1.Status{Status: metav1.StatusFailure, Code: 403, Reason: metav1.StatusReasonForbidden,
		Message: `admission webhook "validate.trainjob.trainer.kubeflow.org" denied the request: spec.runtimeRef: not found`}}
	for _, tc := range []struct {
		name    string
		err     error
		code    ainerr.Code
		hint    string
		mustNot string
		sandbox bool
	}{
		{name: "interrupt", err: &url.Error{Op: "Patch", URL: "https://x", Err: context.Canceled}, code: ainerr.Cancelled},
		{name: "refused", err: &url.Error{Op: "Get", URL: "https://x", Err: syscall.ECONNREFUSED}, code: ainerr.Unreachable, hint: "is the cluster up? (kubeconfig /k"},
		{name: "refused sandbox", err: &url.Error{Op: "Get", URL: "https://x", Err: syscall.ECONNREFUSED}, code: ainerr.Unreachable, hint: "ain sandbox status", sandbox: true},
		{name: "forbidden", err: apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, "p", errors.New("no")), code: ainerr.Unauthorized, hint: "ask for RBAC access", mustNot: "cluster-wide"},
		{name: "forbidden nodes", err: apierrors.NewForbidden(schema.GroupResource{Resource: "nodes"}, "", errors.New(`User "student" cannot list resource "nodes" in API group "" at the cluster scope`)),
			code: ainerr.Unauthorized, hint: "no namespace (-n) grants", mustNot: "or use -n"},
		{name: "denial", err: denial, code: ainerr.Failure, hint: "not a permission problem", mustNot: "RBAC"},
		{name: "unauthorized", err: apierrors.NewUnauthorized("x"), code: ainerr.Unauthorized, hint: "refresh your credentials"},
	} {
		c.Sandbox = tc.sandbox
		err := fmt.Errorf("wrapped by a command: %w", c.Classify(tc.err, "applying the job"))
		got := exitError(err)
		if ainerr.CodeOf(got) != tc.code || !strings.Contains(ainerr.HintOf(got), tc.hint) || (tc.mustNot != "" && strings.Contains(ainerr.HintOf(got), tc.mustNot)) {
			t.Errorf("%s: code %d hint %q, want %d with %q", tc.name, ainerr.CodeOf(got), ainerr.HintOf(got), tc.code, tc.hint)
		}
		if got.Error() != err.Error() {
			t.Errorf("%s: message changed: %q", tc.name, got)
		}
	}
	own := ainerr.New(ainerr.JobFailed, c.Classify(apierrors.NewUnauthorized("x"), "x"), "mine")
	if got := exitError(own); ainerr.CodeOf(got) != ainerr.JobFailed || ainerr.HintOf(got) != "mine" {
		t.Errorf("a command's own code was replaced: %v", got)
	}
	if exitError(nil) != nil {
		t.Error("nil became an error")
	}
}
