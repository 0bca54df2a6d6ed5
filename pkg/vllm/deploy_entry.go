package vllm

import (
	"context"
	"errors"

	"github.com/ain-hpc/ain/pkg/jobs"
	"github.com/ain-hpc/ain/pkg/recipe"
)

// ExposeDescription names an entry kind for the "expose:" line.
func ExposeDescription(kind string) string {
	if kind == recipe.ExposeNone {
		return "none, the Service only, reachable inside the cluster"
	}
	return kind
}

// chooseEntry resolves the entry of model server name against the cluster (ChooseEntry), says
// which and why, and replaces r's serving spec with the resolved one. An Ingress on a class
// that does not exist, or that is not ingress-nginx's, is a warning naming what it may lose.
func (d *Deployer) chooseEntry(ctx context.Context, cl *Cluster, r *recipe.Recipe, name, source string) error {
	ent, err := cl.ChooseEntry(ctx, r.Serving, name, source)
	var missing *GatewayAPIMissingError
	var choice *GatewayChoiceError
	var unknown *UnknownGatewayError
	switch {
	case errors.As(err, &missing), errors.As(err, &choice), errors.As(err, &unknown):
		return err
	case err != nil:
		return &ClusterError{Doing: "choosing the model server's entry", Err: err}
	}
	r.Serving = ent.Spec
	d.say(EventExpose, "%s (%s)", ExposeDescription(ent.Kind), ent.Why)
	for _, n := range ent.Notes {
		d.say(EventNote, "%s", n)
	}
	for _, w := range ent.Warnings {
		d.say(EventWarning, "%s", w)
	}
	if in := ent.Spec.Ingress; in != nil {
		controller, absent := cl.IngressClassController(ctx, in.ClassName)
		if absent {
			d.say(EventIngressClassMissing, "%s", in.ClassName)
		} else if w := IngressClassWarning(in.ClassName, controller); w != "" {
			d.say(EventWarning, "%s", w)
		} else if n := IngressNginxNote(in.ClassName, controller); n != "" {
			d.say(EventNote, "%s", n)
		}
	}
	return nil
}

// ensureEntryTLS checks (or creates, self-signed) the TLS Secret of the model server's entry
// before the entry that names it is applied: a bad Secret makes ingress-nginx serve its fake
// certificate, which clients misreport as an unknown CA, and a Gateway's listener with an
// unusable certificateRef is not programmed. A route on an existing Gateway uses that
// Gateway's certificate. It returns the Secret this run created, if any.
func (d *Deployer) ensureEntryTLS(ctx context.Context, cl *Cluster, objs *Objects, s *recipe.ServingSpec, dryRun bool) (string, error) {
	lbl := map[string]string{jobs.LabelManagedBy: jobs.ManagedByAin, jobs.LabelRun: objs.Name}
	var t *TLSOutcome
	var err error
	var host, entry, field string
	switch {
	case objs.Ingress != nil:
		host, entry, field = s.Ingress.Host, "the ingress", "ingress"
		t, err = cl.EnsureTLS(ctx, s.Ingress, objs.Name, lbl, d.Now(), dryRun)
	case objs.Gateway != nil:
		host, entry, field = s.Gateway.Host, "Gateway "+objs.Gateway.Name, "gateway"
		t, err = cl.EnsureGatewayTLS(ctx, s.Gateway, objs.Name, lbl, d.Now(), dryRun)
	case objs.HTTPRoute != nil:
		d.emit(Event{Kind: EventTLS, Entry: "Gateway " + gatewayRefName(s.Gateway, cl.Namespace)})
		return "", nil
	default:
		return "", nil
	}
	var tp *TLSProblem
	switch {
	case errors.As(err, &tp):
		return "", &EntryTLSError{Field: field, Err: err}
	case err != nil:
		return "", &ClusterError{Doing: "checking the TLS Secret of " + entry, Err: err}
	}
	d.emit(Event{Kind: EventTLS, TLS: t, Entry: entry, Host: host})
	if t.Issuer == "" && t.Created && !dryRun {
		return t.Secret, nil
	}
	return "", nil
}

// gatewayRefName is NAMESPACE/NAME of the existing Gateway g names.
func gatewayRefName(g *recipe.ServingGateway, ns string) string {
	if g.Namespace != "" {
		ns = g.Namespace
	}
	return ns + "/" + g.Name
}
