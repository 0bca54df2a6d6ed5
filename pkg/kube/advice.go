package kube

import "github.com/ain-hpc/ain/pkg/next"

// Advice says what usually fixes e ("" when nothing does but waiting or retrying), the commands
// it names worded by cmd. It is not a next.Hinter: an error that wraps a CallError keeps its own
// (or no) hint.
func (e *CallError) Advice(cmd func(next.Command) string) string {
	q := func(c next.Command) string { return "`" + cmd(c) + "`" }
	switch e.Reason {
	case ReasonNoCluster:
		return "start the local simulated cluster with " + q("sandbox up") + ", or point --kubeconfig at your cluster"
	case ReasonBadKubeconfig:
		return "check --kubeconfig and --context (kubectl config get-contexts), or unset $KUBECONFIG to use ~/.kube/config or the local sandbox"
	case ReasonUnauthorized:
		return "the token or certificate in " + e.Where + " is not accepted: refresh your credentials or pick another --context"
	case ReasonForbidden:
		if e.ClusterScope {
			return "this is a cluster-wide resource, which no namespace (-n) grants: ask your administrator for a ClusterRole binding (" + q("preflight --print-role") + " prints what ain needs) (" + e.Where + ")"
		}
		return "your user may not do this in namespace " + e.Namespace + " (" + e.Where + "): ask for RBAC access (" + q("preflight --print-role") + " prints what ain needs) or use -n"
	case ReasonWebhookDenied:
		return "an admission webhook refused the object (not a permission problem); its message says why"
	case ReasonWebhookUnreachable:
		return "the webhook's server is down or unreachable from the API server: for *.kubeflow.org webhooks that is the training-operator (or mpi-operator / Trainer controller); check its pod and run " + q("preflight")
	case ReasonUnreachable:
		if e.Sandbox {
			return "the local sandbox is not answering: " + q("sandbox status") + ", or " + q("sandbox up")
		}
		return "is the cluster up? (" + e.Where + ")"
	}
	return ""
}
