package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	ucli "github.com/urfave/cli/v2"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/ain-hpc/ain/internal/ainerr"
	"github.com/ain-hpc/ain/pkg/jobs"
	"github.com/ain-hpc/ain/pkg/kube"
	"github.com/ain-hpc/ain/pkg/openaiclient"
	"github.com/ain-hpc/ain/pkg/recipe"
	"github.com/ain-hpc/ain/pkg/vllm"
)

type serveOptions struct {
	recipeInput
	endpointOptions
	entryFlags
	Name          string
	Model         string
	Replicas      int
	Topology      string
	APIKeyFromEnv bool
	HFTokenEnv    bool
	APIKeyFile    string
	HFTokenFile   string
	// AllowUnauth serves /v1 without an API key; APIKeyOut is where a generated (or kept) key
	// is written.
	AllowUnauth bool
	APIKeyOut   string
	DryRun      string
	Output      string
	NoWait      bool
	Timeout     time.Duration
}

func (o *serveOptions) flags() []ucli.Flag {
	return append(append(append(o.recipeInput.flags(), o.endpointOptions.flags()...), o.entryFlags.flags()...),
		&ucli.StringFlag{Name: "name", Usage: "deployment name (default: the recipe's metadata.name)", Destination: &o.Name},
		&ucli.StringFlag{Name: "model", Usage: "model path on the model volume, or a Hugging Face name (sets spec.model)", Destination: &o.Model},
		&ucli.IntFlag{Name: "replicas", Usage: "model server replicas (sets spec.replicas)", DefaultText: "the recipe's", Destination: &o.Replicas, Action: intBetween("replicas", 1, recipe.MaxReplicas)},
		&ucli.StringFlag{Name: "topology", Usage: "independent (one Deployment per replica, default) or deployment (one with N replicas)", Destination: &o.Topology},
		&ucli.BoolFlag{Name: "api-key-from-env", Usage: "create Secret NAME-api-key from $AIN_API_KEY and have vLLM require it", Destination: &o.APIKeyFromEnv},
		&ucli.BoolFlag{Name: "hf-token-from-env", Usage: "create Secret NAME-hf-token from $HF_TOKEN for gated models", Destination: &o.HFTokenEnv},
		&ucli.StringFlag{Name: "api-key-file", Usage: "create Secret NAME-api-key from this file's content (instead of --api-key-from-env)", Destination: &o.APIKeyFile},
		&ucli.StringFlag{Name: "hf-token-file", Usage: "create Secret NAME-hf-token from this file's content", Destination: &o.HFTokenFile},
		&ucli.BoolFlag{Name: "allow-unauthenticated", Usage: "serve /v1 WITHOUT an API key: anyone who reaches the Service or the ingress uses the GPUs (default: a key; without --api-key-* ain keeps the server's key or generates one into Secret NAME-api-key)", Destination: &o.AllowUnauth},
		&ucli.StringFlag{Name: "api-key-out", Usage: "write the server's API key (generated or kept) to this file, mode 0600; without it a generated key is shown once on a terminal, never in a log", Destination: &o.APIKeyOut},
		&ucli.StringFlag{Name: "dry-run", Usage: "client: print what would be applied; server: ask the API server (schema, webhooks) without creating", Destination: &o.DryRun},
		outputFlag(&o.Output, "", "with --dry-run: yaml or json"),
		&ucli.BoolFlag{Name: "no-wait", Usage: "apply and return; check later with ain serve status", Destination: &o.NoWait},
		&ucli.DurationFlag{Name: "timeout", Usage: "stop waiting for the model after this long (default: the recipe's startupTimeout + 5m)", Destination: &o.Timeout, Action: positiveDuration("timeout")},
	)
}

func (a *App) serveCommand() *ucli.Command {
	o := &serveOptions{}
	var statusOut string
	status := &endpointOptions{}
	return &ucli.Command{
		Name:      "serve",
		Usage:     "deploy vLLM replicas from a serving recipe: Deployments, a Service and an HTTPS entry (Ingress or Gateway API HTTPRoute)",
		ArgsUsage: "RECIPE",
		Description: "Server-side applies the serving recipe (`ain recipes show vllm`), then waits until the replicas are\n" +
			"ready and the endpoint's /v1/models lists the model (/health turns true before the model can answer).\n" +
			"The entry routes /v1 and /health only. --expose auto (the vllm recipe's) keeps the entry a model server\n" +
			"has; a new one gets a Gateway API HTTPRoute where the cluster serves the Gateway API and exactly one\n" +
			"GatewayClass is accepted, else an Ingress; ain says which and why.\n\n" +
			"Examples:\n" +
			"  ain serve vllm --model /shared/models/Qwen2.5-7B-Instruct --replicas 2 --host llm.example.com\n" +
			"  ain serve vllm --expose gateway --gateway-class eg --host llm.example.com\n" +
			"  ain serve vllm --gateway infra/public:https --host llm.example.com\n" +
			"  ain serve vllm --dry-run=client -o yaml\n" +
			"  ain serve status\n" +
			"  ain serve delete vllm",
		Flags:  o.flags(),
		Action: func(c *ucli.Context) error { return a.runServe(c, o) },
		Subcommands: []*ucli.Command{
			{
				Name:      "status",
				Usage:     "replicas ready/total, each pod's phase and node, the endpoint URL, the model, and a /v1/models probe",
				ArgsUsage: "[NAME]",
				Flags:     append(status.flags(), outputFlag(&statusOut, "text", "text or json")),
				Action: func(c *ucli.Context) error {
					return a.runServeStatus(c.Context, c.Args().First(), status, statusOut)
				},
			},
			{
				Name:      "delete",
				Usage:     "delete a model server's Deployments, Service, Ingress or HTTPRoute (and the Gateway ain created; never a shared one) and the Secrets ain created for it",
				ArgsUsage: "NAME",
				Action: func(c *ucli.Context) error {
					if c.NArg() != 1 {
						return ainerr.Usagef("name the model server to delete (ain serve status lists them)")
					}
					return a.runServeDelete(c.Context, c.Args().First())
				},
			},
		},
	}
}

func (a *App) servingCluster() (*kube.Clients, *vllm.Cluster, error) {
	kc, err := a.clients()
	if err != nil {
		return nil, nil, err
	}
	return kc, &vllm.Cluster{Kube: kc.Kube, Dynamic: kc.Dynamic, Namespace: kc.Namespace}, nil
}

func (a *App) runServe(c *ucli.Context, o *serveOptions) error {
	switch o.DryRun {
	case "", "none", "client", "server":
	default:
		return ainerr.Usagef("--dry-run=%s: use client or server", o.DryRun)
	}
	if o.Output != "" && o.DryRun == "" {
		return ainerr.Usagef("-o %s goes with --dry-run (ain serve status -o json reports a running one)", o.Output)
	}
	// Flags are field overrides, so they are validated (and located, by the flag's name) like
	// the recipe's fields; an explicit --set wins.
	if o.Model != "" {
		o.setBy("--model "+o.Model, "model="+o.Model)
	}
	if o.Replicas != 0 {
		o.setBy(fmt.Sprintf("--replicas %d", o.Replicas), fmt.Sprintf("replicas=%d", o.Replicas))
	}
	if o.Topology != "" {
		o.setBy("--topology "+o.Topology, "topology="+o.Topology)
	}
	if err := o.entryFlags.set(&o.recipeInput, func() (*recipe.Recipe, error) {
		r, _, err := o.load(c, a.Getenv)
		return r, err
	}); err != nil {
		return err
	}
	var secrets []runtime.Object
	name := o.Name
	apiKey, hfToken := o.APIKeyFromEnv || o.APIKeyFile != "", o.HFTokenEnv || o.HFTokenFile != ""
	if o.APIKeyFromEnv && o.APIKeyFile != "" || o.HFTokenEnv && o.HFTokenFile != "" {
		return ainerr.Usagef("take a credential either from the environment or from a file, not both")
	}
	if (apiKey || hfToken) && name == "" {
		// The Secret is named after the deployment: resolve the name first.
		r, _, err := o.load(c, a.Getenv)
		if err != nil {
			return err
		}
		name = r.Metadata.Name
	}
	// secretOf reads a credential from $env or file into a Secret ain creates (labelled as
	// its own, so ain serve delete removes it) and points the recipe's field at it.
	secretOf := func(env, file, suffix, key, field string) error {
		var v string
		if file != "" {
			b, err := os.ReadFile(file)
			if err != nil {
				return ainerr.Usagef("--%s-file %s: %v", suffix, file, errors.Unwrap(err))
			}
			v = strings.TrimRight(string(b), "\r\n")
		} else if v = a.Getenv(env); v == "" {
			return ainerr.Usagef("$%s is empty", env)
		}
		if v == "" {
			return ainerr.Usagef("%s is empty", file)
		}
		if env == "AIN_API_KEY" && o.APIKey == "" {
			// The readiness check must send the key the server now requires, wherever it
			// came from (--api-key-file used to deploy, then fail the check with 401).
			o.APIKey = v
		}
		sname := name + "-" + suffix
		secrets = append(secrets, vllm.CredentialSecret(sname, a.Global.Namespace, key, []byte(v),
			map[string]string{jobs.LabelManagedBy: jobs.ManagedByAin, jobs.LabelRun: name}))
		flag := "--" + suffix + "-from-env"
		if file != "" {
			flag = "--" + suffix + "-file " + file
		}
		o.setBy(flag, field+".name="+sname)
		o.setBy(flag, field+".key="+key)
		return nil
	}
	if apiKey {
		if err := secretOf("AIN_API_KEY", o.APIKeyFile, "api-key", "api-key", "apiKeySecret"); err != nil {
			return err
		}
	}
	if hfToken {
		if err := secretOf("HF_TOKEN", o.HFTokenFile, "hf-token", "token", "hfTokenSecret"); err != nil {
			return err
		}
	}
	r, p, err := o.load(c, a.Getenv)
	if err != nil {
		return err
	}
	if r.Serving == nil {
		return ainerr.Usagef("recipe %s is kind %s: run it with `ain train %s`; `ain recipes list` shows serving recipes", r.Metadata.Name, r.Kind, r.Metadata.Name)
	}
	a.printWarnings(r)
	a.warnImage(r.Serving.Image)
	if o.AllowUnauth && r.Serving.APIKeySecret != nil {
		return ainerr.Usagef("--allow-unauthenticated with an API key (Secret %s, from spec.apiKeySecret or --api-key-*): choose one", r.Serving.APIKeySecret.Name)
	}
	serverName := o.Name
	if serverName == "" {
		serverName = r.Metadata.Name
	}
	if o.DryRun == "client" {
		auth := vllm.DefaultAuth(r.Serving, serverName, o.AllowUnauth)
		fmt.Fprintf(a.Streams.Err, "# %s\n", auth.Describe())
		a.offlineEntry(r, &o.entryFlags)
	}
	objs, err := vllm.BuildObjects(r, p, vllm.ObjectOptions{Name: o.Name, Namespace: a.Global.Namespace})
	var noGateway *vllm.NoGatewayError
	if errors.As(err, &noGateway) && o.DryRun != "client" {
		err = nil // ain serve asks the cluster for its GatewayClass (chooseEntry)
	}
	if err != nil {
		return ainerr.New(ainerr.Usage, err, "")
	}
	if err := c.Context.Err(); err != nil {
		return errInterrupted() // building thousands of objects is no reason to ignore Ctrl-C
	}
	if o.DryRun == "client" {
		for _, s := range secrets {
			fmt.Fprintf(a.Streams.Err, "# also Secret %s (not printed: it holds a credential)\n", objName(s))
		}
		if objs.Ingress != nil {
			fmt.Fprintf(a.Streams.Err, "# the Ingress's TLS Secret %s is checked (or created self-signed) when applied\n", objs.Ingress.Spec.TLS[0].SecretName)
		}
		if objs.Gateway != nil {
			fmt.Fprintf(a.Streams.Err, "# the Gateway's TLS Secret %s is checked (or created self-signed) when applied\n", objs.Gateway.Spec.Listeners[0].TLS.CertificateRefs[0].Name)
		}
		return a.printObjects(objs.All(), o.Output)
	}
	kc, cl, err := a.servingCluster()
	if err != nil {
		return err
	}
	ctx := c.Context
	// The entry first: a Gateway API entry on a cluster without it, or naming no Gateway, is
	// refused before anything is read or created.
	if err := a.chooseEntry(ctx, kc, cl, r, serverName, &o.entryFlags); err != nil {
		return err
	}
	s := r.Serving
	if err := cl.CheckClaims(ctx, s); err != nil {
		var cp *vllm.ClaimProblem
		switch {
		case errors.As(err, &cp) && cp.Missing:
			return ainerr.New(ainerr.Usage, err, "create the claim, or name an existing one in spec.volumes[].claimName (kubectl get pvc"+nsFlag(kc.Namespace)+" lists them)")
		case errors.As(err, &cp):
			return ainerr.New(ainerr.Usage, err, "use a ReadWriteMany (or ReadOnlyMany) claim for the model, such as NFS, or serve one replica: --replicas 1")
		}
		return kc.Classify(err, "reading the model volume's claim")
	}
	auth, err := cl.ResolveAuth(ctx, serverName, s, o.AllowUnauth, nil)
	if err != nil {
		return kc.Classify(err, "reading the model server's API key")
	}
	if objs, err = vllm.BuildObjects(r, p, vllm.ObjectOptions{Name: o.Name, Namespace: a.Global.Namespace}); err != nil {
		return ainerr.New(ainerr.Usage, err, "")
	}
	if auth.Generated != "" {
		secrets = append(secrets, vllm.CredentialSecret(auth.Secret.Name, a.Global.Namespace, auth.Secret.Key, []byte(auth.Generated),
			map[string]string{jobs.LabelManagedBy: jobs.ManagedByAin, jobs.LabelRun: serverName}))
	}
	if auth.Key != "" && o.APIKey == "" {
		o.APIKey = auth.Key // the readiness check sends the key the server requires
	}
	if o.APIKeyOut != "" && o.DryRun != "server" {
		// Written before anything is applied: a key nobody can read back is not created.
		if auth.Key == "" {
			return ainerr.Usagef("--api-key-out %s: %s, whose value ain cannot read", o.APIKeyOut, auth.Describe())
		}
		if err := writeSecretFile(o.APIKeyOut, auth.Key); err != nil {
			return ainerr.Usagef("--api-key-out: %v", err)
		}
	}
	if o.DryRun == "server" && auth.Source == vllm.AuthGenerated {
		fmt.Fprintf(a.Streams.Err, "auth: vLLM would require an API key generated into Secret %s\n", auth.Secret.Name)
	} else {
		fmt.Fprintln(a.Streams.Err, auth.Describe())
	}
	if auth.Source != vllm.AuthNone {
		fmt.Fprintln(a.Streams.Err, vllm.InClusterNote)
	}
	if auth.Source == vllm.AuthNone {
		fmt.Fprintln(a.Streams.Err, "WARNING: --allow-unauthenticated: no API key; anyone who reaches the Service or the ingress can use the model and its GPUs")
	}
	tlsCreated, err := a.ensureEntryTLS(ctx, kc, cl, objs, s, o.DryRun == "server")
	if err != nil {
		return err
	}
	var rest []runtime.Object
	rest = append(rest, secrets...)
	rest = append(rest, objs.Service)
	if objs.PDB != nil {
		rest = append(rest, objs.PDB)
	}
	if objs.Ingress != nil {
		rest = append(rest, objs.Ingress)
	}
	if objs.Gateway != nil {
		rest = append(rest, objs.Gateway)
	}
	if objs.HTTPRoute != nil {
		rest = append(rest, objs.HTTPRoute)
	}
	if o.DryRun == "server" {
		applied, err := cl.Apply(ctx, append(rest, deploymentObjects(objs)...), true)
		if err != nil {
			return kc.Classify(err, "applying the model server")
		}
		var shown []runtime.Object
		for _, u := range applied {
			if u.GetKind() != "Secret" {
				shown = append(shown, u)
			}
		}
		fmt.Fprintln(a.Streams.Err, "server dry run: the API server accepted it (schema and admission webhooks); nothing was created")
		return a.printObjects(shown, o.Output)
	}
	a.sandboxNote(kc)
	applied, err := cl.Apply(ctx, rest, false)
	if errors.Is(err, context.Canceled) {
		// The interrupt came before the first object was sent.
		msg := "interrupted before the model server was applied: nothing was created"
		if tlsCreated != "" {
			msg = fmt.Sprintf("interrupted before the model server was applied: only the TLS Secret %s was created (ain serve delete %s%s removes it)", tlsCreated, objs.Name, nsFlag(kc.Namespace))
		}
		return ainerr.New(ainerr.Cancelled, errors.New(msg), "")
	}
	if err != nil {
		// What went in before the refusal stays (a Secret with the generated key, say): named,
		// with the command that removes it.
		var left []string
		if tlsCreated != "" {
			left = append(left, "Secret "+kc.Namespace+"/"+tlsCreated)
		}
		for _, u := range applied {
			left = append(left, u.GetKind()+" "+u.GetNamespace()+"/"+u.GetName())
		}
		if len(left) > 0 {
			fmt.Fprintf(a.Streams.Err, "created before the error below: %s; `ain serve delete %s%s` removes them\n", strings.Join(left, ", "), objs.Name, nsFlag(kc.Namespace))
		}
		return kc.Classify(err, "applying the model server")
	}
	for _, u := range applied {
		fmt.Fprintf(a.Streams.Err, "applied %s %s/%s\n", u.GetKind(), u.GetNamespace(), u.GetName())
	}
	if auth.Generated != "" {
		a.revealAPIKey(auth, o.APIKeyOut, kc.Namespace)
	}
	// Pods read the key at start: a new version of its Secret rolls them (a changed key would
	// otherwise leave the old one working and fail the readiness check with the new one).
	vllm.SetKeyVersion(objs.Deployments, auth.KeyVersion(applied))
	timeout := o.Timeout
	if timeout == 0 {
		timeout = s.StartupDuration() + 5*time.Minute
	}
	progress := func(line string) { fmt.Fprintf(a.Streams.Err, "%s\n", line) }
	deps, err := cl.ApplyRolling(ctx, objs.Deployments, vllm.RollOptions{ReplicaTimeout: timeout, Progress: progress})
	for _, d := range deps {
		fmt.Fprintf(a.Streams.Err, "applied Deployment %s/%s\n", cl.Namespace, objName(d))
	}
	if ctx.Err() != nil {
		return a.interruptedServe(ctx, kc, cl, objs, deps)
	}
	if err != nil {
		return a.waitError(kc, err, objs.Name)
	}
	if auth.Dropped != "" {
		// The Deployments no longer read it: a key Secret left behind would look like a guard.
		if err := cl.DeleteAPIKeySecret(ctx, auth.Dropped); err != nil {
			fmt.Fprintf(a.Streams.Err, "note: could not delete Secret %s, whose key no longer guards the server: %v\n", auth.Dropped, err)
		} else {
			fmt.Fprintf(a.Streams.Err, "deleted Secret %s: the server no longer requires its key\n", auth.Dropped)
		}
	}
	pruned, err := cl.Prune(ctx, objs.Name, objs.All())
	for _, p := range pruned {
		fmt.Fprintf(a.Streams.Err, "pruned %s (this run no longer renders it)\n", p)
	}
	if ctx.Err() != nil {
		// Interrupted once everything was applied (what was not pruned yet is pruned next run).
		return a.interruptedServe(ctx, kc, cl, objs, deps)
	}
	if err != nil {
		return kc.Classify(err, "removing what this run no longer renders")
	}
	fmt.Fprintf(a.Streams.Err, "model %s as %q: %d replica(s) x %d GPU (%s)\n", s.Model, s.ServedModelName, s.Replicas, s.GPUsPerReplica, s.Topology)
	if o.NoWait {
		fmt.Fprintf(a.Streams.Err, "check it with: ain serve status %s\n", objs.Name)
		return nil
	}
	return a.waitServing(ctx, kc, cl, objs.Name, s.ServedModelName, &o.endpointOptions, timeout)
}

// ensureEntryTLS checks (or creates, self-signed) the TLS Secret of the model server's
// entry before the entry that names it is applied: a bad Secret makes ingress-nginx serve its
// fake certificate, which clients misreport as an unknown CA, and a Gateway's listener with an
// unusable certificateRef is not programmed. A route on an existing Gateway uses that
// Gateway's certificate. It returns the Secret this run created, if any.
func (a *App) ensureEntryTLS(ctx context.Context, kc *kube.Clients, cl *vllm.Cluster, objs *vllm.Objects, s *recipe.ServingSpec, dryRun bool) (string, error) {
	lbl := map[string]string{jobs.LabelManagedBy: jobs.ManagedByAin, jobs.LabelRun: objs.Name}
	var t *vllm.TLSOutcome
	var err error
	var host, entry, field string
	switch {
	case objs.Ingress != nil:
		host, entry, field = s.Ingress.Host, "the ingress", "ingress"
		t, err = cl.EnsureTLS(ctx, s.Ingress, objs.Name, lbl, a.Now(), dryRun)
	case objs.Gateway != nil:
		host, entry, field = s.Gateway.Host, "Gateway "+objs.Gateway.Name, "gateway"
		t, err = cl.EnsureGatewayTLS(ctx, s.Gateway, objs.Name, lbl, a.Now(), dryRun)
	case objs.HTTPRoute != nil:
		fmt.Fprintf(a.Streams.Err, "TLS: terminated by the listener of Gateway %s, whose certificate is that Gateway's (ain reads nor changes it)\n", gatewayRefName(s.Gateway, kc.Namespace))
		return "", nil
	default:
		return "", nil
	}
	var tp *vllm.TLSProblem
	switch {
	case errors.As(err, &tp):
		return "", ainerr.New(ainerr.Usage, err, "fix or delete the Secret (ain then creates a self-signed one), name another with --set "+field+".tlsSecret=NAME, or let cert-manager issue it with --set "+field+".clusterIssuer=ISSUER")
	case err != nil:
		return "", kc.Classify(err, "checking the TLS Secret of "+entry)
	case t.Issuer != "":
		fmt.Fprintf(a.Streams.Err, "TLS: cert-manager ClusterIssuer %s issues Secret %s for %s\n", t.Issuer, t.Secret, entry)
	case t.Created && dryRun:
		fmt.Fprintf(a.Streams.Err, "TLS: Secret %s does not exist; ain would create a self-signed certificate\n", t.Secret)
	case t.Created:
		fmt.Fprintf(a.Streams.Err, "TLS: created Secret %s with a self-signed certificate for %s; its CA is the Secret's ca.crt, which ain trusts when it finds the endpoint itself (others: kubectl get secret %s -o jsonpath='{.data.ca\\.crt}' | base64 -d > ca.pem; then --ca-file ca.pem)\n",
			t.Secret, orDashStr(t.For), t.Secret)
		if t.For == "" {
			fmt.Fprintf(a.Streams.Err, "WARNING: no --host and no address for %s yet: the certificate names nothing a client connects to, so no client can verify it; pass --host NAME (a DNS name pointing at it), or once `ain serve status` shows the address, delete Secret %s and re-run (ain then certifies the address)\n", entry, t.Secret)
		}
		return t.Secret, nil
	default:
		fmt.Fprintf(a.Streams.Err, "TLS: Secret %s holds a valid certificate for %s\n", t.Secret, orDashStr(host))
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

// warnImage says when the serving image's vLLM is older than the newest release that fixes a
// published advisory (vllm.Advisories), or that its tag tells no version.
func (a *App) warnImage(image string) {
	c := vllm.CheckImage(image)
	if w := c.Warning(); w != "" && c.Version == "" {
		fmt.Fprintf(a.Streams.Err, "note: %s\n", w)
	} else if w != "" {
		fmt.Fprintf(a.Streams.Err, "WARNING: %s\n", w)
	}
}

func deploymentObjects(objs *vllm.Objects) []runtime.Object {
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

// waitError maps pkg/vllm's wait errors to exit codes and hints.
func (a *App) waitError(kc *kube.Clients, err error, name string) error {
	var se *vllm.StalledError
	var te *vllm.WaitTimeoutError
	switch {
	case errors.As(err, &se):
		return ainerr.New(ainerr.JobFailed, err, "`ain serve status "+name+nsFlag(kc.Namespace)+"` shows each pod; `kubectl logs` the pod for vLLM's own error")
	case errors.As(err, &te) && strings.Contains(te.Last, "waiting for the Gateway"):
		return ainerr.New(ainerr.Timeout, err, "the replicas are ready but the Gateway does not serve the route yet: `ain serve status "+name+nsFlag(kc.Namespace)+"` shows the route's conditions; `kubectl describe gateway` and the controller's logs say why")
	case errors.As(err, &te):
		return ainerr.New(ainerr.Timeout, err, "it keeps starting: `ain serve status "+name+nsFlag(kc.Namespace)+"`; a big model may need a longer spec.startupTimeout")
	case errors.Is(err, context.Canceled):
		return ainerr.New(ainerr.Cancelled, errors.New("interrupted; the model server keeps running"), "follow it: ain serve status "+name+nsFlag(kc.Namespace)+"   end it: ain serve delete "+name+nsFlag(kc.Namespace))
	case ainerr.CodeOf(exitError(err)) != ainerr.Failure:
		return err
	}
	return discoveryError(kc, err, "waiting for the model server")
}

// waitServing waits (vllm.WaitReady) until every replica is ready and the endpoint lists the
// model, printing each change of state, then prints the endpoint on stdout.
func (a *App) waitServing(ctx context.Context, kc *kube.Clients, cl *vllm.Cluster, name, model string, eo *endpointOptions, timeout time.Duration) error {
	via := ""
	client, err := cl.WaitReady(ctx, vllm.WaitOptions{
		Name: name, Model: model, Timeout: timeout, Now: a.Now,
		Progress: func(el time.Duration, line string) {
			fmt.Fprintf(a.Streams.Err, "[%s] %s\n", fmtElapsed(el), line)
		},
		Connect: func(ctx context.Context, st *vllm.ServingStatus) (*openaiclient.Client, error) {
			ep := vllm.Endpoint{URL: eo.Endpoint, Via: "endpoint"}
			if ep.URL == "" {
				ep.URL = a.Getenv("AIN_ENDPOINT")
			}
			if ep.URL == "" {
				d := &vllm.Discovery{Cluster: cl, Config: kc.Config, Log: a.Streams.Err, Reachable: a.reachable(eo), AllowPortForward: eo.PortForward}
				var err error
				if ep, err = d.Endpoint(ctx, name); err != nil {
					return nil, err
				}
			}
			via = ep.Via
			key := eo.APIKey
			if key == "" {
				key = a.Getenv("AIN_API_KEY")
			}
			c, err := openaiclient.New(eo.clientOptions(ep, key, 0))
			return c, endpointError(err)
		},
	})
	if err != nil {
		return a.waitError(kc, err, name)
	}
	fmt.Fprintf(a.Streams.Err, "ready: %s serves %s (listed by /v1/models)\n", client.Endpoint(), model)
	if via == "port-forward" {
		fmt.Fprintf(a.Streams.Err, "(checked through a port-forward, which ends with this command; the ingress did not answer from here)\n")
		return nil
	}
	fmt.Fprintf(a.Streams.Out, "%s\n", strings.TrimSuffix(client.Endpoint(), "/v1"))
	return nil
}

func fmtElapsed(d time.Duration) string {
	d = d.Round(time.Second)
	return fmt.Sprintf("%d:%02d", int(d.Minutes()), int(d.Seconds())%60)
}

// servingProbe is what `ain serve status` found at the endpoint.
type servingProbe struct {
	Endpoint string   `json:"endpoint"`
	At       string   `json:"at"`
	Models   []string `json:"models,omitempty"`
	Error    string   `json:"error,omitempty"`
}

func (a *App) runServeStatus(ctx context.Context, name string, eo *endpointOptions, out string) error {
	if out != "text" && out != "json" {
		return ainerr.Usagef("-o %s: use text or json", out)
	}
	kc, cl, err := a.servingCluster()
	if err != nil {
		return err
	}
	all, err := cl.List(ctx, name)
	if err != nil {
		return kc.Classify(err, "listing model servers")
	}
	if len(all) == 0 {
		if name != "" {
			return ainerr.New(ainerr.Failure, &vllm.NotFoundError{Name: name, Namespace: kc.Namespace}, "ain serve status lists what runs in the namespace; -n picks another")
		}
		fmt.Fprintf(a.Streams.Err, "no model servers in namespace %s\n", kc.Namespace)
		return nil
	}
	type entry struct {
		vllm.ServingStatus
		Probe *servingProbe `json:"probe,omitempty"`
	}
	var entries []entry
	// The ingress as clients find it: its CA from the Secret ain created, its published
	// address when the host has no DNS record.
	d := &vllm.Discovery{Cluster: cl, Config: kc.Config, Reachable: a.reachable(eo)}
	for _, st := range all {
		e := entry{ServingStatus: st}
		ep := vllm.Endpoint{URL: eo.Endpoint, Via: "endpoint"}
		if ep.URL == "" && st.URL != "" && st.Ready > 0 {
			var err error
			if ep, err = d.EndpointOf(ctx, st); err != nil {
				e.Probe = &servingProbe{Endpoint: st.URL, At: a.Now().UTC().Format(time.RFC3339), Error: err.Error()}
			}
		}
		if ep.URL != "" && st.Ready > 0 && e.Probe == nil {
			e.Probe = a.probeModels(ctx, eo, ep)
		}
		entries = append(entries, e)
	}
	if out == "json" {
		return a.writeJSON(entries)
	}
	w := a.Streams.Out
	for i, e := range entries {
		if i > 0 {
			fmt.Fprintln(w)
		}
		fmt.Fprintf(w, "%s: %d/%d replicas ready, model %s\n", e.Name, e.Ready, e.Desired, orDashStr(e.Model))
		if e.URL != "" {
			fmt.Fprintf(w, "  url:     %s\n", e.URL)
		}
		if e.Address != "" && !strings.Contains(e.URL, e.Address) {
			by := "the ingress controller"
			if e.Route != nil {
				by = "Gateway " + e.Route.Gateway
			}
			fmt.Fprintf(w, "  address: %s (published by %s)\n", e.Address, by)
		}
		if rt := e.Route; rt != nil {
			gw := "Gateway " + rt.Gateway
			if rt.Listener != "" {
				gw += " listener " + rt.Listener
			}
			if rt.OwnGateway {
				gw += ", created by ain"
			}
			fmt.Fprintf(w, "  route:   HTTPRoute %s on %s: Accepted %s, ResolvedRefs %s\n", rt.Name, gw, orDashStr(rt.Accepted), orDashStr(rt.ResolvedRefs))
			if rt.Problem != "" {
				state := "not serving"
				if rt.Pending {
					state = "not serving yet"
				}
				fmt.Fprintf(w, "  %s: %s\n", state, rt.Problem)
			}
		}
		if e.TLSSecret != "" {
			fmt.Fprintf(w, "  tls:     Secret %s\n", e.TLSSecret)
		}
		fmt.Fprintf(w, "  service: %s (in the cluster)\n", e.Service)
		if p := e.Probe; p != nil {
			if p.Error != "" {
				fmt.Fprintf(w, "  probe:   %s/models failed at %s: %s\n", p.Endpoint, p.At, p.Error)
			} else {
				fmt.Fprintf(w, "  probe:   %s/models lists %s (at %s)\n", p.Endpoint, strings.Join(p.Models, ", "), p.At)
			}
		}
		var rows [][]string
		for _, r := range e.Replicas {
			for _, p := range r.Pods {
				ready := "no"
				if p.Ready {
					ready = "yes"
				}
				rows = append(rows, []string{r.Deployment, p.Name, p.Phase, ready, orDashStr(p.Node), fmt.Sprint(p.Restarts), orDashStr(p.Reason)})
			}
			if len(r.Pods) == 0 {
				rows = append(rows, []string{r.Deployment, "-", "no pods", "no", "-", "0", orDashStr(r.Stalled)})
			}
		}
		a.table([]string{"REPLICA", "POD", "PHASE", "READY", "NODE", "RESTARTS", "REASON"}, rows)
	}
	return nil
}

func (a *App) probeModels(ctx context.Context, eo *endpointOptions, ep vllm.Endpoint) *servingProbe {
	p := &servingProbe{Endpoint: ep.URL, At: a.Now().UTC().Format(time.RFC3339)}
	c, err := a.endpointClient(eo, ep, 0)
	if err == nil {
		p.Endpoint = c.Endpoint()
		pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		var models []openaiclient.Model
		models, err = c.Models(pctx)
		cancel()
		for _, m := range models {
			p.Models = append(p.Models, m.ID)
		}
	}
	if err != nil {
		p.Error = err.Error()
	}
	return p
}

func (a *App) runServeDelete(ctx context.Context, name string) error {
	kc, cl, err := a.servingCluster()
	if err != nil {
		return err
	}
	gone, err := cl.Delete(ctx, name)
	var nf *vllm.NotFoundError
	if errors.As(err, &nf) {
		return ainerr.New(ainerr.Failure, err, "ain serve status lists the model servers; training jobs are deleted with ain delete")
	}
	if err != nil {
		return kc.Classify(err, "deleting the model server")
	}
	for _, g := range gone {
		fmt.Fprintf(a.Streams.Out, "deleted %s\n", g)
	}
	return nil
}

// revealAPIKey tells the user the key ain generated, once: in the file --api-key-out named
// (written before the apply), else on a terminal, never into a log or a pipe.
func (a *App) revealAPIKey(auth vllm.Auth, file, ns string) {
	switch {
	case file != "":
		fmt.Fprintf(a.Streams.Err, "API key: written to %s (mode 0600)\n", file)
	case a.Streams.ErrTTY:
		fmt.Fprintf(a.Streams.Err, "API key (shown once; ain models/chat read it from Secret %s themselves):\n  %s\n", auth.Secret.Name, auth.Generated)
	default:
		fmt.Fprintf(a.Streams.Err, "API key: not shown (stderr is not a terminal); ain models/chat read it from Secret %s; others: kubectl get secret %s%s -o jsonpath='{.data.%s}' | base64 -d\n",
			auth.Secret.Name, auth.Secret.Name, nsFlag(ns), auth.Secret.Key)
	}
}

// writeSecretFile writes a credential to path, readable by its owner only (also when the file
// existed with a wider mode).
func writeSecretFile(path, value string) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	if err := f.Chmod(0o600); err != nil {
		f.Close()
		return err
	}
	if _, err := f.WriteString(value + "\n"); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
