package kube

import (
	"strings"
	"testing"

	"github.com/ain-hpc/ain/pkg/next"
)

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
