package vllm

import (
	"errors"

	"github.com/ain-hpc/ain/pkg/next"
)

// serverOf names p's model server on a wait's error, for its hint.
func serverOf(err error, p *prepared) error {
	if e, ok := errors.AsType[*StalledError](err); ok {
		e.Server, e.Namespace = p.objs.Name, p.cl.Namespace
	}
	if e, ok := errors.AsType[*WaitTimeoutError](err); ok {
		e.Server, e.Namespace = p.objs.Name, p.cl.Namespace
	}
	return err
}

// Hint names the command that shows each pod, and where vLLM says why.
func (e *StalledError) Hint(cmd func(next.Command) string) string {
	return "`" + cmd(next.Command("serve status "+e.Server).In(e.Namespace)) + "` shows each pod; `kubectl logs` the pod for vLLM's own error"
}

// Hint says the model server keeps starting, or what keeps its Gateway from serving it.
func (e *WaitTimeoutError) Hint(cmd func(next.Command) string) string {
	status := cmd(next.Command("serve status " + e.Server).In(e.Namespace))
	if e.Gateway {
		return "the replicas are ready but the Gateway does not serve the route yet: `" + status + "` shows the route's conditions; `kubectl describe gateway` and the controller's logs say why"
	}
	return "it keeps starting: `" + status + "`; a big model may need a longer spec.startupTimeout"
}

// Hint says what serves the Gateway API, or how to do without it.
func (e *GatewayAPIMissingError) Hint(func(next.Command) string) string {
	return "install the Gateway API's standard CRDs and a Gateway controller (https://gateway-api.sigs.k8s.io/implementations/), or --expose ingress"
}

// Hint says how to name the Gateway.
func (e *GatewayChoiceError) Hint(func(next.Command) string) string {
	return "name one: --gateway-class CLASS (`kubectl get gatewayclass` lists them) or --gateway [NAMESPACE/]NAME of an existing Gateway"
}

// Hint says how to name another Gateway.
func (e *UnknownGatewayError) Hint(func(next.Command) string) string {
	return "check the name, or name another with --gateway-class or --gateway"
}

// Hint says how to get a usable TLS Secret.
func (e *EntryTLSError) Hint(func(next.Command) string) string {
	return "fix or delete the Secret (ain then creates a self-signed one), name another with --set " + e.Field + ".tlsSecret=NAME, or let cert-manager issue it with --set " + e.Field + ".clusterIssuer=ISSUER"
}

// Hint says which of the two to drop.
func (e *AuthConflictError) Hint(func(next.Command) string) string {
	return "drop --allow-unauthenticated to keep the key, or remove spec.serving.apiKeySecret (--set) to serve without one"
}

// Hint says how to put the key in place.
func (e *BadKeyError) Hint(func(next.Command) string) string {
	return "put the key in that Secret (kubectl create secret generic " + e.Secret + " --from-literal=" + e.Key + "=...), or name another in spec.serving.apiKeySecret"
}

// Hint says how to choose among the model servers.
func (e *AmbiguousError) Hint(cmd func(next.Command) string) string {
	return "pass --endpoint (`" + cmd("serve status") + "` shows each URL)"
}

// Hint says how to reach the model server another way.
func (e *IngressUnreachableError) Hint(func(next.Command) string) string {
	return "check that the host resolves to the ingress controller or Gateway (or pass --connect-to ADDR:443 to reach it by address), " +
		"or pass --port-forward to reach one pod through the API server instead (a quick look, not a measurement)"
}

// Hint names the command that shows the pods.
func (e *NoReadyReplicaError) Hint(cmd func(next.Command) string) string {
	return "`" + cmd(next.Command("serve status "+e.Name).In(e.Namespace)) + "` shows what the pods are doing"
}
