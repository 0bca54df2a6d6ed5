package vllm

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/ain-hpc/ain/pkg/jobs"
	"github.com/ain-hpc/ain/pkg/kube"
	"github.com/ain-hpc/ain/pkg/openaiclient"
	"github.com/ain-hpc/ain/pkg/profile"
	"github.com/ain-hpc/ain/pkg/recipe"
)

// Deployer deploys a model server from a serving recipe: it chooses the entry against the
// cluster, checks the model volume's claims, resolves the API key, checks (or creates) the
// entry's TLS Secret, server-side applies the Secrets, Service and entry, rolls the
// Deployments one replica at a time, drops a key Secret the server no longer reads, prunes what
// the run no longer renders, and waits until the endpoint lists the model. It prints nothing:
// each step is an Event given to Progress, and its errors are typed (deploy_errors.go and the
// cluster calls' own) so that the command decides exit codes and hints.
type Deployer struct {
	// Cluster and Now are required.
	//
	// Cluster returns the cluster to deploy to. It is called once the objects are built, so
	// that a recipe which cannot be built is refused without one; its error is returned as is.
	Cluster func() (*Cluster, error)
	Now     func() time.Time
	// Random is where a generated API key comes from (nil: crypto/rand).
	Random io.Reader
	// Progress receives every step, from the calling goroutine. nil: none.
	Progress func(Event)
}

// DeployOptions are one deployment's inputs.
type DeployOptions struct {
	Recipe  *recipe.Recipe
	Profile *profile.Profile
	// Name overrides the recipe's metadata.name; Namespace is where the objects go.
	Name, Namespace string
	// ExposeSource says who chose spec.expose (a flag, or the recipe), for the entry's reason.
	ExposeSource string
	// Secrets are the credential Secrets the caller made (CredentialSecret), applied first.
	Secrets []runtime.Object
	// AllowUnauthenticated serves /v1 without an API key.
	AllowUnauthenticated bool
	// APIKey is the key the caller already holds (sent by the readiness check); empty: the
	// server's own.
	APIKey string
	// WriteKey, when set, receives the server's API key before anything is applied (not on a
	// server dry run): a key nobody can read back is not created. Its error is returned as is.
	WriteKey func(key string) error
	// DryRunServer asks the API server (schema, admission webhooks) without creating anything.
	DryRunServer bool
	// NoWait returns once everything is applied.
	NoWait bool
	// Timeout bounds the wait for each replica and for the model (0: the recipe's
	// startupTimeout + 5m).
	Timeout time.Duration
	// Connect opens a client to the ready deployment with the API key to send (WaitOptions);
	// via says how the endpoint was reached ("port-forward", "ingress", ...). Required unless
	// NoWait or DryRunServer.
	Connect func(ctx context.Context, st *ServingStatus, key string) (c *openaiclient.Client, via string, err error)
}

// EventKind says which step an Event reports.
type EventKind int

// The steps of a deployment.
const (
	EventInfo                EventKind = iota // a line about the deployment
	EventNote                                 // a remark
	EventWarning                              // something the user should fix or know is risky
	EventExpose                               // the entry chosen (Message: "KIND (why)")
	EventTLS                                  // the entry's TLS Secret (TLS set, except for a route on an existing Gateway)
	EventApplying                             // the objects are about to be sent
	EventApplied                              // an object was applied (Message: "KIND NAMESPACE/NAME")
	EventKeyGenerated                         // the API key was generated and applied (Auth)
	EventRolling                              // a step of the rolling update
	EventKeyDropped                           // the key Secret the server no longer reads was deleted (Message: its name)
	EventKeyDropFailed                        // it could not be deleted (Message: its name; Err)
	EventPruned                               // an object this run no longer renders was deleted
	EventWaiting                              // a change of state while waiting (Elapsed)
	EventUnauthenticated                      // the server requires no API key (DeployOptions.AllowUnauthenticated)
	EventIngressClassMissing                  // the Ingress's class does not exist (Message: the class)
)

// Event is one step, worded for a person where Message is set.
type Event struct {
	Kind    EventKind
	Message string
	Elapsed time.Duration
	Auth    *Auth
	TLS     *TLSOutcome
	// Entry names the entry whose TLS Secret EventTLS reports ("the ingress", "Gateway NAME").
	Entry string
	// Host is the host the entry's certificate must cover (EventTLS; "" for none).
	Host string
	Err  error
}

// DeployResult is what a deployment found.
type DeployResult struct {
	Name string
	// DryRun are the objects (Secrets left out) as the API server would store them.
	DryRun []runtime.Object
	// Endpoint is the URL that lists the model (…/v1), Via how it was reached; empty with NoWait.
	Endpoint, Via string
	Model         string
}

// ServerName is the model server's name: the override, else the recipe's name.
func ServerName(r *recipe.Recipe, override string) string {
	if override != "" {
		return override
	}
	return r.Metadata.Name
}

func (d *Deployer) emit(e Event) {
	if d.Progress != nil {
		d.Progress(e)
	}
}

func (d *Deployer) say(k EventKind, format string, args ...any) {
	d.emit(Event{Kind: k, Message: fmt.Sprintf(format, args...)})
}

// Deploy deploys o.Recipe (see Deployer). ctx's end is an interrupt: InterruptedError says what
// it left; an interrupt while waiting returns the wait's error (context.Canceled).
func (d *Deployer) Deploy(ctx context.Context, o DeployOptions) (*DeployResult, error) {
	p, err := d.prepare(ctx, o)
	if err != nil {
		return nil, err
	}
	if err := d.keepKey(o, p.auth); err != nil {
		return nil, err
	}
	d.announceAuth(o, p.auth)
	tlsCreated, err := d.ensureEntryTLS(ctx, p.cl, p.objs, p.s, o.DryRunServer)
	if err != nil {
		return nil, err
	}
	rest := append([]runtime.Object{}, p.secrets...)
	rest = append(rest, p.objs.Service)
	if p.objs.PDB != nil {
		rest = append(rest, p.objs.PDB)
	}
	if p.objs.Ingress != nil {
		rest = append(rest, p.objs.Ingress)
	}
	if p.objs.Gateway != nil {
		rest = append(rest, p.objs.Gateway)
	}
	if p.objs.HTTPRoute != nil {
		rest = append(rest, p.objs.HTTPRoute)
	}
	res := &DeployResult{Name: p.objs.Name, Model: p.s.ServedModelName}
	if o.DryRunServer {
		return d.serverDryRun(ctx, p, rest, res)
	}
	d.emit(Event{Kind: EventApplying})
	applied, err := p.cl.Apply(ctx, rest, false)
	if errors.Is(err, context.Canceled) {
		// The interrupt came before the first object was sent.
		return nil, &InterruptedError{Stage: InterruptedBeforeApply, Name: p.objs.Name, TLSSecret: tlsCreated}
	}
	if err != nil {
		// What went in before the refusal stays (a Secret with the generated key, say): named.
		ae := &ApplyError{Name: p.objs.Name, Err: err}
		if tlsCreated != "" {
			ae.Created = append(ae.Created, "Secret "+p.cl.Namespace+"/"+tlsCreated)
		}
		for _, u := range applied {
			ae.Created = append(ae.Created, u.GetKind()+" "+u.GetNamespace()+"/"+u.GetName())
		}
		return nil, ae
	}
	for _, u := range applied {
		d.say(EventApplied, "%s %s/%s", u.GetKind(), u.GetNamespace(), u.GetName())
	}
	if p.auth.Generated != "" {
		d.emit(Event{Kind: EventKeyGenerated, Auth: &p.auth})
	}
	// Pods read the key at start: a new version of its Secret rolls them (a changed key would
	// otherwise leave the old one working and fail the readiness check with the new one).
	SetKeyVersion(p.objs.Deployments, p.auth.KeyVersion(applied))
	timeout := o.Timeout
	if timeout == 0 {
		timeout = p.s.StartupDuration() + 5*time.Minute
	}
	if err := d.rollOut(ctx, p, timeout); err != nil {
		return nil, serverOf(err, p)
	}
	d.say(EventInfo, "model %s as %q: %d replica(s) x %d GPU (%s)", p.s.Model, p.s.ServedModelName, p.s.Replicas, p.s.GPUsPerReplica, p.s.Topology)
	if o.NoWait {
		return res, nil
	}
	key := o.APIKey
	if key == "" {
		key = p.auth.Key // the readiness check sends the key the server requires
	}
	client, err := p.cl.WaitReady(ctx, WaitOptions{
		Name: p.objs.Name, Model: p.s.ServedModelName, Timeout: timeout, Now: d.Now,
		Progress: func(el time.Duration, line string) {
			d.emit(Event{Kind: EventWaiting, Message: line, Elapsed: el})
		},
		Connect: func(ctx context.Context, st *ServingStatus) (*openaiclient.Client, error) {
			c, via, err := o.Connect(ctx, st, key)
			res.Via = via
			return c, err
		},
	})
	if err != nil {
		return nil, serverOf(err, p)
	}
	res.Endpoint = client.Endpoint()
	return res, nil
}

// prepared is a deployment decided against the cluster, before anything is applied.
type prepared struct {
	cl      *Cluster
	s       *recipe.ServingSpec
	objs    *Objects
	auth    Auth
	secrets []runtime.Object // the caller's credential Secrets and, when generated, the key's
}

// prepare builds the objects (refusing a recipe that cannot be built before the cluster is
// read), then chooses the entry, checks the claims and resolves the API key against the cluster,
// and builds the objects again with what it found.
func (d *Deployer) prepare(ctx context.Context, o DeployOptions) (*prepared, error) {
	r := o.Recipe
	if r == nil || r.Serving == nil {
		return nil, &BuildError{Err: errors.New("the recipe has no spec.serving: only a serving recipe can be deployed")}
	}
	oo := ObjectOptions{Name: o.Name, Namespace: o.Namespace}
	_, err := BuildObjects(r, o.Profile, oo)
	var noGateway *NoGatewayError
	if errors.As(err, &noGateway) {
		err = nil // the cluster is asked for its GatewayClass (ChooseEntry)
	}
	if err != nil {
		return nil, &BuildError{Err: err}
	}
	if err := ctx.Err(); err != nil {
		// Building thousands of objects is no reason to ignore an interrupt.
		return nil, &InterruptedError{Stage: InterruptedBuilding}
	}
	cl, err := d.Cluster()
	if err != nil {
		return nil, err
	}
	name := ServerName(r, o.Name)
	// The entry first: a Gateway API entry on a cluster without it, or naming no Gateway, is
	// refused before anything is read or created.
	if err := d.chooseEntry(ctx, cl, r, name, o.ExposeSource); err != nil {
		return nil, err
	}
	s := r.Serving
	if err := cl.CheckClaims(ctx, s); err != nil {
		var cp *ClaimProblem
		if errors.As(err, &cp) {
			return nil, err
		}
		return nil, &ClusterError{Doing: "reading the model volume's claim", Err: err}
	}
	auth, err := cl.ResolveAuth(ctx, name, s, o.AllowUnauthenticated, d.Random)
	var conflict *AuthConflictError
	var badKey *BadKeyError
	switch {
	case errors.As(err, &conflict) || errors.As(err, &badKey):
		return nil, err // the inputs disagree: not the cluster's failure
	case err != nil:
		return nil, &ClusterError{Doing: "reading the model server's API key", Err: err}
	}
	objs, err := BuildObjects(r, o.Profile, oo)
	if err != nil {
		return nil, &BuildError{Err: err}
	}
	secrets := slices.Clone(o.Secrets) // the generated key's Secret must not land in the caller's slice
	if auth.Generated != "" {
		secrets = append(secrets, CredentialSecret(auth.Secret.Name, o.Namespace, auth.Secret.Key, []byte(auth.Generated),
			map[string]string{jobs.LabelManagedBy: jobs.ManagedByAin, jobs.LabelRun: name}))
	}
	return &prepared{cl: cl, s: s, objs: objs, auth: auth, secrets: secrets}, nil
}

// keepKey writes the key through o.WriteKey before anything is applied: a key nobody can read
// back is not created.
func (d *Deployer) keepKey(o DeployOptions, auth Auth) error {
	if o.WriteKey == nil || o.DryRunServer {
		return nil
	}
	if auth.Key == "" {
		return &KeyUnreadableError{Auth: auth}
	}
	return o.WriteKey(auth.Key)
}

// announceAuth says how the server is guarded (or that it is not).
func (d *Deployer) announceAuth(o DeployOptions, auth Auth) {
	if o.DryRunServer && auth.Source == AuthGenerated {
		d.say(EventInfo, "auth: vLLM would require an API key generated into Secret %s", auth.Secret.Name)
	} else {
		d.say(EventInfo, "%s", auth.Describe())
	}
	if auth.Source != AuthNone {
		d.say(EventInfo, "%s", InClusterNote)
	}
	if auth.Source == AuthNone {
		d.emit(Event{Kind: EventUnauthenticated, Auth: &auth})
	}
}

// serverDryRun sends everything with dryRun=All: the API server's schema and admission webhooks
// judge it and nothing is created; the result shows what would be (Secrets left out).
func (d *Deployer) serverDryRun(ctx context.Context, p *prepared, rest []runtime.Object, res *DeployResult) (*DeployResult, error) {
	applied, err := p.cl.Apply(ctx, append(rest, deploymentObjects(p.objs)...), true)
	if err != nil {
		return nil, &ClusterError{Doing: "applying the model server", Err: err}
	}
	for _, u := range applied {
		if u.GetKind() != "Secret" {
			res.DryRun = append(res.DryRun, u)
		}
	}
	d.say(EventInfo, "server dry run: the API server accepted it (schema and admission webhooks); nothing was created")
	return res, nil
}

// rollOut applies the Deployments replica by replica, removes a key Secret the server no longer
// reads, and prunes what this run no longer renders.
func (d *Deployer) rollOut(ctx context.Context, p *prepared, timeout time.Duration) error {
	progress := func(line string) { d.say(EventRolling, "%s", line) }
	deps, err := p.cl.ApplyRolling(ctx, p.objs.Deployments, RollOptions{ReplicaTimeout: timeout, Progress: progress})
	for _, dep := range deps {
		d.say(EventApplied, "Deployment %s/%s", p.cl.Namespace, objName(dep))
	}
	if ctx.Err() != nil {
		return d.interrupted(ctx, p.cl, p.objs, deps)
	}
	if err != nil {
		return err
	}
	if p.auth.Dropped != "" {
		// The Deployments no longer read it: a key Secret left behind would look like a guard.
		if err := p.cl.DeleteAPIKeySecret(ctx, p.auth.Dropped); err != nil {
			d.emit(Event{Kind: EventKeyDropFailed, Message: p.auth.Dropped, Err: err})
		} else {
			d.emit(Event{Kind: EventKeyDropped, Message: p.auth.Dropped})
		}
	}
	pruned, err := p.cl.Prune(ctx, p.objs.Name, p.objs.All())
	for _, pr := range pruned {
		d.say(EventPruned, "%s", pr)
	}
	if ctx.Err() != nil {
		// Interrupted once everything was applied (what was not pruned yet is pruned next run).
		return d.interrupted(ctx, p.cl, p.objs, deps)
	}
	if err != nil {
		return &ClusterError{Doing: "removing what this run no longer renders", Err: err}
	}
	return nil
}

// interrupted says what an interrupt during the apply left. The Secrets, Service and entry
// were applied (as one bundle); deps are the Deployments applied after them. A first
// deployment interrupted before its Deployments were sent is finished (a Service without its
// Deployments serves nothing); a rolling update interrupted between replicas is left as it
// is, each replica whole.
func (d *Deployer) interrupted(ctx context.Context, cl *Cluster, objs *Objects, deps []runtime.Object) error {
	e := &InterruptedError{Name: objs.Name, Deployed: len(deps), Total: len(objs.Deployments)}
	switch {
	case e.Deployed == e.Total:
		e.Stage = InterruptedApplyFinished
	case e.Deployed > 0:
		e.Stage = InterruptedRolling
	default:
		fctx, cancel := kube.Finishing(ctx)
		defer cancel()
		for _, dep := range objs.Deployments {
			if _, err := cl.Kube.AppsV1().Deployments(cl.Namespace).Get(fctx, dep.Name, metav1.GetOptions{}); err == nil {
				e.Existing++
			}
		}
		if e.Existing > 0 {
			e.Stage = InterruptedBeforeRolling
			break
		}
		if _, err := cl.Apply(fctx, deploymentObjects(objs), false); err != nil {
			e.Stage, e.FinishErr = InterruptedFinishFailed, err
			break
		}
		for _, dep := range objs.Deployments {
			d.say(EventApplied, "Deployment %s/%s", cl.Namespace, dep.Name)
		}
		e.Stage = InterruptedFinished
	}
	return e
}

func deploymentObjects(objs *Objects) []runtime.Object {
	out := make([]runtime.Object, len(objs.Deployments))
	for i, d := range objs.Deployments {
		out[i] = d
	}
	return out
}

func objName(o runtime.Object) string {
	u, err := jobs.ToUnstructured(o)
	if err != nil {
		return "?"
	}
	return u.GetName()
}
