package cli

import (
	"cmp"
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
	return ainerr.New(cmp.Or(kubeCodes[ce.Reason], ainerr.Failure), err, ce.Advice(ainCommand))
}

// kubeCodes are the exit codes of cluster errors (any other is a failure).
var kubeCodes = map[kube.Reason]ainerr.Code{
	kube.ReasonNoCluster: ainerr.Unreachable, kube.ReasonBadKubeconfig: ainerr.Usage, kube.ReasonInterrupted: ainerr.Cancelled,
	kube.ReasonUnauthorized: ainerr.Unauthorized, kube.ReasonForbidden: ainerr.Unauthorized,
	kube.ReasonWebhookUnreachable: ainerr.Unreachable, kube.ReasonUnreachable: ainerr.Unreachable,
}
