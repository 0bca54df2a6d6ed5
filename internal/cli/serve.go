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

	"github.com/ain-hpc/ain/pkg/ainerr"
	"github.com/ain-hpc/ain/pkg/jobs"
	"github.com/ain-hpc/ain/pkg/kube"
	"github.com/ain-hpc/ain/pkg/vllm"
)

type serveOptions struct {
	recipeInput
	endpointOptions
	Name          string
	Model         string
	Replicas      int
	Topology      string
	Host          string
	APIKeyFromEnv bool
	HFTokenEnv    bool
	APIKeyFile    string
	HFTokenFile   string
	DryRun        string
	Output        string
	NoWait        bool
	Timeout       time.Duration
}

func (o *serveOptions) flags() []ucli.Flag {
	return append(append(o.recipeInput.flags(), o.endpointOptions.flags()...),
		&ucli.StringFlag{Name: "name", Usage: "deployment name (default: the recipe's metadata.name)", Destination: &o.Name},
		&ucli.StringFlag{Name: "model", Usage: "model path on the model volume, or a Hugging Face name (sets spec.model)", Destination: &o.Model},
		&ucli.IntFlag{Name: "replicas", Usage: "model server replicas (sets spec.replicas)", Destination: &o.Replicas},
		&ucli.StringFlag{Name: "topology", Usage: "independent (one Deployment per replica, default) or deployment (one with N replicas)", Destination: &o.Topology},
		&ucli.StringFlag{Name: "host", Usage: "HTTPS ingress host (sets spec.ingress.host)", Destination: &o.Host},
		&ucli.BoolFlag{Name: "api-key-from-env", Usage: "create Secret NAME-api-key from $AIN_API_KEY and have vLLM require it", Destination: &o.APIKeyFromEnv},
		&ucli.BoolFlag{Name: "hf-token-from-env", Usage: "create Secret NAME-hf-token from $HF_TOKEN for gated models", Destination: &o.HFTokenEnv},
		&ucli.StringFlag{Name: "api-key-file", Usage: "create Secret NAME-api-key from this file's content (instead of --api-key-from-env)", Destination: &o.APIKeyFile},
		&ucli.StringFlag{Name: "hf-token-file", Usage: "create Secret NAME-hf-token from this file's content", Destination: &o.HFTokenFile},
		&ucli.StringFlag{Name: "dry-run", Usage: "client: print what would be applied; server: ask the API server (schema, webhooks) without creating", Destination: &o.DryRun},
		outputFlag(&o.Output, "", "with --dry-run: yaml or json"),
		&ucli.BoolFlag{Name: "no-wait", Usage: "apply and return; check later with ain serve status", Destination: &o.NoWait},
		&ucli.DurationFlag{Name: "timeout", Usage: "stop waiting for the model after this long (default: the recipe's startupTimeout + 5m)", Destination: &o.Timeout},
	)
}

func (a *App) serveCommand() *ucli.Command {
	o := &serveOptions{}
	var statusOut string
	status := &endpointOptions{}
	return &ucli.Command{
		Name:      "serve",
		Usage:     "deploy vLLM replicas from a serving recipe: Deployments, a Service and an HTTPS Ingress",
		ArgsUsage: "RECIPE",
		Description: "Server-side applies the serving recipe (`ain recipes show vllm`), then waits until the replicas are\n" +
			"ready and the endpoint's /v1/models lists the model (/health turns true before the model can answer).\n\n" +
			"Examples:\n" +
			"  ain serve vllm --model /shared/models/Qwen2.5-7B-Instruct --replicas 2 --host llm.example.com\n" +
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
				Usage:     "delete a model server's Deployments, Service, Ingress and the Secrets ain created for it",
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
	// Flags are --set overrides, so they are validated (and located) like the recipe's fields.
	var sets []string
	if o.Model != "" {
		sets = append(sets, "model="+o.Model)
	}
	if o.Replicas != 0 {
		sets = append(sets, fmt.Sprintf("replicas=%d", o.Replicas))
	}
	if o.Topology != "" {
		sets = append(sets, "topology="+o.Topology)
	}
	if o.Host != "" {
		sets = append(sets, "ingress.host="+o.Host)
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
				return ainerr.Usagef("%v", err)
			}
			v = strings.TrimRight(string(b), "\r\n")
		} else if v = a.Getenv(env); v == "" {
			return ainerr.Usagef("$%s is empty", env)
		}
		if v == "" {
			return ainerr.Usagef("%s is empty", file)
		}
		sname := name + "-" + suffix
		secrets = append(secrets, vllm.CredentialSecret(sname, a.Global.Namespace, key, []byte(v),
			map[string]string{jobs.LabelManagedBy: jobs.ManagedByAin, jobs.LabelRun: name}))
		sets = append(sets, field+".name="+sname, field+".key="+key)
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
	o.Sets = *ucli.NewStringSlice(append(sets, o.Sets.Value()...)...)
	r, p, err := o.load(c, a.Getenv)
	if err != nil {
		return err
	}
	if r.Serving == nil {
		return ainerr.Usagef("recipe %s is kind %s: run it with `ain train %s`; `ain recipes list` shows serving recipes", r.Metadata.Name, r.Kind, r.Metadata.Name)
	}
	a.printWarnings(r)
	objs, err := vllm.BuildObjects(r, p, vllm.ObjectOptions{Name: o.Name, Namespace: a.Global.Namespace})
	if err != nil {
		return ainerr.New(ainerr.Usage, err, "")
	}
	if o.DryRun == "client" {
		for _, s := range secrets {
			fmt.Fprintf(a.Streams.Err, "# also Secret %s (not printed: it holds a credential)\n", objName(s))
		}
		return a.printObjects(objs.All(), o.Output)
	}
	kc, cl, err := a.servingCluster()
	if err != nil {
		return err
	}
	ctx := c.Context
	if o.DryRun == "server" {
		applied, err := cl.Apply(ctx, append(secrets, objs.All()...), true)
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
	applied, err := cl.Apply(ctx, append(secrets, objs.All()...), false)
	if err != nil {
		return kc.Classify(err, "applying the model server")
	}
	s := r.Serving
	for _, u := range applied {
		fmt.Fprintf(a.Streams.Err, "applied %s %s/%s\n", u.GetKind(), u.GetNamespace(), u.GetName())
	}
	fmt.Fprintf(a.Streams.Err, "model %s as %q: %d replica(s) x %d GPU (%s)\n", s.Model, s.ServedModelName, s.Replicas, s.GPUsPerReplica, s.Topology)
	if o.NoWait {
		fmt.Fprintf(a.Streams.Err, "check it with: ain serve status %s\n", objs.Name)
		return nil
	}
	timeout := o.Timeout
	if timeout == 0 {
		timeout = s.StartupDuration() + 5*time.Minute
	}
	return a.waitServing(ctx, kc, cl, objs.Name, s.ServedModelName, &o.endpointOptions, timeout)
}

func objName(o runtime.Object) string {
	u, err := jobs.ToUnstructured(o)
	if err != nil {
		return "?"
	}
	return u.GetName()
}

// waitServing follows the replicas until every pod is ready, then until the endpoint's
// /v1/models lists the model, printing each change of state.
func (a *App) waitServing(parent context.Context, kc *kube.Clients, cl *vllm.Cluster, name, model string, eo *endpointOptions, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(parent, timeout)
	defer cancel()
	start := a.Now()
	last := ""
	var client *vllm.Client
	forwarded := false // reached through a port-forward that ends with this command
	tick := time.NewTicker(2 * time.Second)
	defer tick.Stop()
	for {
		st, err := cl.Status(ctx, name)
		if err != nil && ctx.Err() == nil {
			return kc.Classify(err, "reading the model server's status")
		}
		if st != nil {
			line := servingProgress(st)
			if line != last {
				fmt.Fprintf(a.Streams.Err, "[%s] %s\n", fmtElapsed(a.Now().Sub(start)), line)
				last = line
			}
			for _, r := range st.Replicas {
				if r.Stalled != "" {
					return ainerr.New(ainerr.JobFailed, fmt.Errorf("replica %s did not become ready: %s", r.Deployment, r.Stalled),
						"`ain serve status "+name+"` shows each pod; `kubectl logs` the pod for vLLM's own error")
				}
			}
			if st.AllReady() {
				if client == nil {
					endpoint := eo.Endpoint
					if endpoint == "" {
						endpoint = a.Getenv("AIN_ENDPOINT")
					}
					if endpoint == "" {
						// The ingress when it answers from here, else a port-forward to a ready replica.
						d := &vllm.Discovery{Cluster: cl, Config: kc.Config, Log: a.Streams.Err, Reachable: a.reachable(eo)}
						if endpoint, _, err = d.Endpoint(ctx, name); err != nil {
							return kc.Classify(err, "reaching the model server")
						}
						forwarded = endpoint != st.URL
					}
					eo2 := *eo
					eo2.Endpoint = endpoint
					if client, err = a.modelClient(ctx, &eo2, 0); err != nil {
						return err
					}
				}
				pctx, pcancel := context.WithTimeout(ctx, 10*time.Second)
				models, err := client.Models(pctx)
				pcancel()
				if err == nil {
					for _, m := range models {
						if m.ID == model {
							fmt.Fprintf(a.Streams.Err, "ready: %s serves %s (listed by /v1/models) after %s\n", client.Endpoint(), model, fmtElapsed(a.Now().Sub(start)))
							if forwarded {
								fmt.Fprintf(a.Streams.Err, "(checked through a port-forward; without an ingress reachable from here, use `ain models`/`ain chat`, which open one)\n")
								return nil
							}
							fmt.Fprintf(a.Streams.Out, "%s\n", strings.TrimSuffix(client.Endpoint(), "/v1"))
							return nil
						}
					}
					err = fmt.Errorf("/v1/models does not list %s yet", model)
				}
				if ainerr.CodeOf(err) == ainerr.Unauthorized {
					return err
				}
				if msg := "replicas ready; waiting for the endpoint: " + err.Error(); msg != last {
					fmt.Fprintf(a.Streams.Err, "[%s] %s\n", fmtElapsed(a.Now().Sub(start)), msg)
					last = msg
				}
			}
		}
		select {
		case <-ctx.Done():
			if parent.Err() != nil {
				return ainerr.New(ainerr.Cancelled, errors.New("interrupted; the model server keeps running"), "ain serve status "+name+"   ain serve delete "+name)
			}
			return ainerr.New(ainerr.Timeout, fmt.Errorf("the model server was not ready within %s (last: %s)", timeout, last),
				"it keeps starting: `ain serve status "+name+"`; a big model may need a longer spec.startupTimeout")
		case <-tick.C:
		}
	}
}

// servingProgress is one line: ready/total and each pod's state.
func servingProgress(st *vllm.ServingStatus) string {
	var pods []string
	for _, r := range st.Replicas {
		for _, p := range r.Pods {
			s := p.Name + " " + p.Phase
			if p.Ready {
				s += " ready"
			}
			if p.Node != "" {
				s += " on " + p.Node
			}
			if p.Reason != "" {
				s += " (" + p.Reason + ")"
			}
			pods = append(pods, s)
		}
	}
	if len(pods) == 0 {
		pods = append(pods, "no pods yet")
	}
	return fmt.Sprintf("%d/%d replicas ready: %s", st.Ready, st.Desired, strings.Join(pods, "; "))
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
	for _, st := range all {
		e := entry{ServingStatus: st}
		endpoint := eo.Endpoint
		if endpoint == "" {
			endpoint = st.URL
		}
		if endpoint != "" && st.Ready > 0 {
			e.Probe = a.probeModels(ctx, eo, endpoint)
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

func (a *App) probeModels(ctx context.Context, eo *endpointOptions, endpoint string) *servingProbe {
	p := &servingProbe{Endpoint: endpoint, At: a.Now().UTC().Format(time.RFC3339)}
	eo2 := *eo
	eo2.Endpoint = endpoint
	c, err := a.modelClient(ctx, &eo2, 0)
	if err == nil {
		p.Endpoint = c.Endpoint()
		pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		var models []vllm.Model
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
