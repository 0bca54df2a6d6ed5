package cli

import (
	"errors"

	"github.com/ain-hpc/ain/internal/ainerr"
	"github.com/ain-hpc/ain/pkg/answers"
	"github.com/ain-hpc/ain/pkg/kube"
	"github.com/ain-hpc/ain/pkg/openaiclient"
)

// endpointCodes are the exit codes of a model endpoint's failures.
var endpointCodes = map[openaiclient.Reason]ainerr.Code{
	openaiclient.ReasonFailure:      ainerr.Failure,
	openaiclient.ReasonInput:        ainerr.Usage,
	openaiclient.ReasonTimeout:      ainerr.Timeout,
	openaiclient.ReasonCancelled:    ainerr.Cancelled,
	openaiclient.ReasonUnreachable:  ainerr.Unreachable,
	openaiclient.ReasonUnauthorized: ainerr.Unauthorized,
}

// exitError gives a cluster error (pkg/kube's *CallError, anywhere in err's chain) or a model
// endpoint's (pkg/vllm's) its exit code and the advice for it, unless a command already chose
// both (an *ainerr.Error wraps it).
func exitError(err error) error {
	var ce *kube.CallError
	var ve *openaiclient.CallError
	var vi *answers.InputError
	switch {
	case err == nil || isAinErr(err):
		return err
	case errors.As(err, &ve):
		return ainerr.New(endpointCodes[ve.Reason], err, ve.Hint(ainCommand))
	case errors.As(err, &vi):
		return ainerr.New(ainerr.Usage, err, "")
	case !errors.As(err, &ce):
		return err
	}
	code, hint := ainerr.Failure, ""
	switch {
	case ce.Reason == kube.ReasonNoCluster:
		code, hint = ainerr.Unreachable, "start the local simulated cluster with `ain sandbox up`, or point --kubeconfig at your cluster"
	case ce.Reason == kube.ReasonBadKubeconfig:
		code, hint = ainerr.Usage, "check --kubeconfig and --context (kubectl config get-contexts), or unset $KUBECONFIG to use ~/.kube/config or the local sandbox"
	case ce.Reason == kube.ReasonInterrupted:
		code = ainerr.Cancelled
	case ce.Reason == kube.ReasonUnauthorized:
		code, hint = ainerr.Unauthorized, "the token or certificate in "+ce.Where+" is not accepted: refresh your credentials or pick another --context"
	case ce.Reason == kube.ReasonForbidden && ce.ClusterScope:
		code, hint = ainerr.Unauthorized, "this is a cluster-wide resource, which no namespace (-n) grants: ask your administrator for a ClusterRole binding (`ain preflight --print-role` prints what ain needs) ("+ce.Where+")"
	case ce.Reason == kube.ReasonForbidden:
		code, hint = ainerr.Unauthorized, "your user may not do this in namespace "+ce.Namespace+" ("+ce.Where+"): ask for RBAC access (`ain preflight --print-role` prints what ain needs) or use -n"
	case ce.Reason == kube.ReasonWebhookDenied:
		hint = "an admission webhook refused the object (not a permission problem); its message says why"
	case ce.Reason == kube.ReasonWebhookUnreachable:
		code, hint = ainerr.Unreachable, "the webhook's server is down or unreachable from the API server: for *.kubeflow.org webhooks that is the training-operator (or mpi-operator / Trainer controller); check its pod and run `ain preflight`"
	case ce.Reason == kube.ReasonUnreachable:
		code, hint = ainerr.Unreachable, "is the cluster up? ("+ce.Where+")"
		if ce.Sandbox {
			hint = "the local sandbox is not answering: `ain sandbox status`, or `ain sandbox up`"
		}
	}
	return ainerr.New(code, err, hint)
}
