package cli

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	ucli "github.com/urfave/cli/v2"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/ain-hpc/ain/internal/ainerr"
	"github.com/ain-hpc/ain/pkg/kube"
	"github.com/ain-hpc/ain/pkg/next"
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
				Flags:     append(status.flags(), outputFlag(&statusOut, "text", "text or json", "json")),
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
	secrets, err := a.serveOverrides(c, o)
	if err != nil {
		return err
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
	var kc *kube.Clients
	opts := vllm.DeployOptions{
		Recipe: r, Profile: p, Name: o.Name, Namespace: a.Global.Namespace,
		ExposeSource: o.exposeSource(r.Serving), Secrets: secrets, AllowUnauthenticated: o.AllowUnauth,
		APIKey: o.APIKey, DryRunServer: o.DryRun == "server", NoWait: o.NoWait, Timeout: o.Timeout,
		Connect: a.connector(&o.endpointOptions, 0, func() (*kube.Clients, *vllm.Cluster, error) {
			return kc, &vllm.Cluster{Kube: kc.Kube, Dynamic: kc.Dynamic, Namespace: kc.Namespace}, nil
		}, &kc).Ready,
	}
	if o.DryRun == "client" {
		objs, lines, err := vllm.ClientDryRun(c.Context, opts)
		for _, l := range lines {
			fmt.Fprintln(a.Streams.Err, l)
		}
		if err != nil {
			return a.deployError(nil, err, o, "")
		}
		return a.printObjects(objs, o.Output)
	}
	if o.APIKeyOut != "" {
		opts.WriteKey = vllm.KeyFile(o.APIKeyOut)
	}
	events := &vllm.EventPrinter{W: a.Streams.Err, DryRunServer: o.DryRun == "server", KeyFile: o.APIKeyOut, TTY: a.Streams.ErrTTY,
		Command: ainCommand, Applying: func() { a.sandboxNote(kc) }}
	dep := &vllm.Deployer{
		Cluster: func() (*vllm.Cluster, error) {
			k, cl, err := a.servingCluster()
			if err == nil {
				kc, events.Namespace = k, k.Namespace
			}
			return cl, err
		},
		Now: a.Now, Progress: events.Event,
	}
	res, err := dep.Deploy(c.Context, opts)
	if err != nil {
		return a.deployError(kc, err, o, vllm.ServerName(r, o.Name))
	}
	if o.DryRun == "server" {
		return a.printObjects(res.DryRun, o.Output)
	}
	res.WriteText(a.Streams.Out, a.Streams.Err, ainCommand)
	return nil
}

// serveOverrides checks the flags and records those that override recipe fields (--model,
// --replicas, --topology, the entry's, the credentials' Secrets, which it returns), so that
// they are validated and located, by the flag's name, like the recipe's fields.
func (a *App) serveOverrides(c *ucli.Context, o *serveOptions) ([]runtime.Object, error) {
	switch o.DryRun {
	case "", "none", "client", "server":
	default:
		return nil, ainerr.Usagef("--dry-run=%s: use client or server", o.DryRun)
	}
	if o.Output != "" && o.DryRun == "" {
		return nil, ainerr.Usagef("-o %s goes with --dry-run (ain serve status -o json reports a running one)", o.Output)
	}
	// An explicit --set wins.
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
		return nil, err
	}
	return a.serveCredentials(c, o)
}

// serveCredentials reads the credentials --api-key-* and --hf-token-* name into Secrets ain
// creates (vllm.ReadCredentials) and points the recipe's fields at them.
func (a *App) serveCredentials(c *ucli.Context, o *serveOptions) ([]runtime.Object, error) {
	creds, err := vllm.ReadCredentials([]vllm.CredentialSource{{Credential: vllm.APIKeyCredential, FromEnv: o.APIKeyFromEnv, File: o.APIKeyFile},
		{Credential: vllm.HFTokenCredential, FromEnv: o.HFTokenEnv, File: o.HFTokenFile}},
		func() (string, error) {
			if o.Name != "" {
				return o.Name, nil
			}
			r, _, err := o.load(c, a.Getenv)
			if err != nil {
				return "", err
			}
			return r.Metadata.Name, nil
		}, a.Global.Namespace, a.Getenv, o.setBy)
	if err != nil {
		mapped, _ := libError(err, code[*vllm.CredentialError](ainerr.Usage))
		return nil, mapped
	}
	// The readiness check must send the key the server now requires, wherever it came from
	// (--api-key-file used to deploy, then fail the check with 401).
	o.APIKey = cmp.Or(o.APIKey, creds.APIKey)
	return creds.Secrets, nil
}

// deployError maps vllm.Deployer's errors (the rolling update's and the wait's too) to exit
// codes and hints.
func (a *App) deployError(kc *kube.Clients, err error, o *serveOptions, name string) error {
	be, build := errors.AsType[*vllm.BuildError](err)
	ie, interrupted := errors.AsType[*vllm.InterruptedError](err)
	cp, claim := errors.AsType[*vllm.ClaimProblem](err)
	kf, keyFile := errors.AsType[*vllm.KeyFileError](err)
	ku, unreadable := errors.AsType[*vllm.KeyUnreadableError](err)
	ae, apply := errors.AsType[*vllm.ApplyError](err)
	switch {
	case build:
		return ainerr.New(ainerr.Usage, be.Err, "")
	case interrupted:
		return a.serveInterrupted(kc, ie)
	case kc == nil:
		return err // from a.servingCluster
	case claim && cp.Missing:
		return ainerr.New(ainerr.Usage, err, "create the claim, or name an existing one in spec.volumes[].claimName (kubectl get pvc"+nsFlag(kc.Namespace)+" lists them)")
	case claim:
		return ainerr.New(ainerr.Usage, err, "use a ReadWriteMany (or ReadOnlyMany) claim for the model, such as NFS, or serve one replica: --replicas 1")
	case keyFile:
		return ainerr.Usagef("--api-key-out: %v", kf.Err)
	case unreadable:
		return ainerr.Usagef("--api-key-out %s: %s, whose value ain cannot read", o.APIKeyOut, ku.Auth.Describe())
	case apply:
		if len(ae.Created) > 0 {
			fmt.Fprintf(a.Streams.Err, "created before the error below: %s; `ain serve delete %s%s` removes them\n", strings.Join(ae.Created, ", "), ae.Name, nsFlag(kc.Namespace))
		}
		return kc.Classify(ae.Err, "applying the model server")
	}
	if mapped, ok := libError(err, code[*vllm.GatewayAPIMissingError](ainerr.Usage), code[*vllm.GatewayChoiceError](ainerr.Usage),
		code[*vllm.UnknownGatewayError](ainerr.Usage), code[*vllm.EntryTLSError](ainerr.Usage), code[*vllm.AuthConflictError](ainerr.Usage),
		code[*vllm.BadKeyError](ainerr.Usage), code[*vllm.StalledError](ainerr.JobFailed), code[*vllm.WaitTimeoutError](ainerr.Timeout)); ok {
		return mapped
	}
	if ce, ok := errors.AsType[*vllm.ClusterError](err); ok {
		return kc.Classify(ce.Err, ce.Doing)
	}
	switch { // the rolling update's or the wait's, or WriteKey's
	case errors.Is(err, context.Canceled):
		return ainerr.New(ainerr.Cancelled, errors.New("interrupted; the model server keeps running"), "follow it: ain serve status "+name+nsFlag(kc.Namespace)+"   end it: ain serve delete "+name+nsFlag(kc.Namespace))
	case ainerr.CodeOf(exitError(err)) != ainerr.Failure:
		return err
	}
	return discoveryError(kc, err, "waiting for the model server")
}

// serveInterrupted reports an interrupt of `ain serve` and what it left.
func (a *App) serveInterrupted(kc *kube.Clients, e *vllm.InterruptedError) error {
	switch e.Stage {
	case vllm.InterruptedBuilding:
		return errInterrupted()
	case vllm.InterruptedBeforeApply:
		msg := e.Error()
		if e.TLSSecret != "" {
			msg += fmt.Sprintf(" (ain serve delete %s%s removes it)", e.Name, nsFlag(kc.Namespace))
		}
		return ainerr.New(ainerr.Cancelled, errors.New(msg), "")
	}
	fmt.Fprint(a.Streams.Err, e.Left(kc.Namespace, ainCommand))
	return errInterrupted()
}

// ainCommand is a command a library suggests, as the user types it.
func ainCommand(c next.Command) string { return "ain " + string(c) }

// warnImage says when the serving image's vLLM is older than the newest release that fixes a
// published advisory (vllm.Advisories), or that its tag tells no version.
func (a *App) warnImage(image string) {
	if l := vllm.CheckImage(image).Line(); l != "" {
		fmt.Fprintln(a.Streams.Err, l)
	}
}

func (a *App) runServeStatus(ctx context.Context, name string, eo *endpointOptions, out string) error {
	kc, cl, err := a.servingCluster()
	if err != nil {
		return err
	}
	k := a.connector(eo, 0, nil, nil)
	entries, err := cl.Reports(ctx, vllm.ReportOptions{
		Name: name, Endpoint: eo.Endpoint, Now: a.Now,
		// The ingress as clients find it: its CA from the Secret ain created, its published
		// address when the host has no DNS record.
		Discovery: &vllm.Discovery{Cluster: cl, Config: kc.Config, Reachable: k.Reachable},
		Client:    k.Client,
	})
	switch {
	case err != nil:
		return serveLookupError(kc, err, "ain serve status lists what runs in the namespace; -n picks another")
	case len(entries) == 0:
		fmt.Fprintf(a.Streams.Err, "no model servers in namespace %s\n", kc.Namespace)
		return nil
	}
	if out == "json" {
		return a.writeJSON(entries)
	}
	vllm.WriteReports(a.Streams.Out, entries, a.table)
	return nil
}

func (a *App) runServeDelete(ctx context.Context, name string) error {
	kc, cl, err := a.servingCluster()
	if err != nil {
		return err
	}
	gone, err := cl.Delete(ctx, name)
	if err != nil {
		return serveLookupError(kc, err, "ain serve status lists the model servers; training jobs are deleted with ain delete")
	}
	for _, g := range gone {
		fmt.Fprintf(a.Streams.Out, "deleted %s\n", g)
	}
	return nil
}

// serveLookupError maps the errors of a flow on named model servers: notFound is the hint for a
// name that is not there.
func serveLookupError(kc *kube.Clients, err error, notFound string) error {
	if _, ok := errors.AsType[*vllm.NotFoundError](err); ok {
		return ainerr.New(ainerr.Failure, err, notFound)
	}
	if ce, ok := errors.AsType[*vllm.ClusterError](err); ok {
		return kc.Classify(ce.Err, ce.Doing)
	}
	return err
}
