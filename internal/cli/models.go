package cli

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"time"

	ucli "github.com/urfave/cli/v2"

	"github.com/ain-hpc/ain/internal/ainerr"
	"github.com/ain-hpc/ain/pkg/kube"
	"github.com/ain-hpc/ain/pkg/openaiclient"
	"github.com/ain-hpc/ain/pkg/vllm"
)

// endpointOptions are the flags every command talking to a model server takes
// (ain models, ain chat, ain chat test, ain bench serve).
type endpointOptions struct {
	Endpoint    string
	APIKey      string
	CAFile      string
	Insecure    bool
	ConnectTo   string
	PortForward bool
	// TTFBTimeout and IdleTimeout bound each request (openaiclient.Options.FirstByteTimeout and
	// IdleTimeout); zero where a command has no such flags.
	TTFBTimeout time.Duration
	IdleTimeout time.Duration

	// via says how the endpoint was reached once resolved ("endpoint", "ingress",
	// "port-forward"), for what a benchmark says it measured.
	via string
}

func (o *endpointOptions) flags() []ucli.Flag {
	return []ucli.Flag{
		&ucli.StringFlag{Name: "endpoint", Usage: "the OpenAI-compatible server's URL, e.g. https://llm.example.com or http://127.0.0.1:8000 (env AIN_ENDPOINT; default: the HTTPS ingress of what ain serve deployed in the namespace)", Destination: &o.Endpoint},
		&ucli.StringFlag{Name: "api-key", Usage: "bearer token, the server's --api-key (prefer env AIN_API_KEY: flags show in the process list)", Destination: &o.APIKey},
		&ucli.StringFlag{Name: "ca-file", Usage: "PEM file of a private CA to trust, besides the system's, for the server's certificate", Destination: &o.CAFile},
		&ucli.BoolFlag{Name: "insecure", Usage: "do NOT verify the server's TLS certificate (testing only; never the default)", Destination: &o.Insecure},
		&ucli.StringFlag{Name: "connect-to", Usage: "HOST:PORT to connect to instead of resolving the endpoint's host, still verifying its certificate for that name (like curl --connect-to): an ingress whose DNS record is not there yet", Destination: &o.ConnectTo},
		&ucli.BoolFlag{Name: "port-forward", Usage: "when the ingress does not answer, reach ONE pod through an API-server port-forward: for a quick look, not for measuring (it bypasses the ingress and the Service)", Destination: &o.PortForward},
	}
}

// Bounds of a request to a model server, so that a wedged engine (/health answering while a
// hung NCCL group stops every request) fails the command instead of holding it for ever. An
// interactive question gives up sooner than a benchmark, whose requests may queue in vLLM
// behind the whole run (--request-rate inf) before their first token.
const (
	chatTTFBTimeout  = 5 * time.Minute
	chatIdleTimeout  = time.Minute
	benchTTFBTimeout = 30 * time.Minute
	benchIdleTimeout = 5 * time.Minute
)

// timeoutFlags are --ttfb-timeout and --idle-timeout with these defaults.
func (o *endpointOptions) timeoutFlags(ttfb, idle time.Duration) []ucli.Flag {
	return []ucli.Flag{
		&ucli.DurationFlag{Name: "ttfb-timeout", Value: ttfb, Usage: "fail a request whose answer has not begun this long after it was sent (a streamed answer's first event; without streaming, the whole answer); 0: wait for ever", Destination: &o.TTFBTimeout, Action: nonNegativeDuration("ttfb-timeout")},
		&ucli.DurationFlag{Name: "idle-timeout", Value: idle, Usage: "fail a streamed answer that stops for this long between two pieces; 0: wait for ever", Destination: &o.IdleTimeout, Action: nonNegativeDuration("idle-timeout")},
	}
}

// connector reaches the model server: --endpoint, else AIN_ENDPOINT, else the one deployed in
// the namespace (found in cl's cluster, else the flags'); --api-key, else AIN_API_KEY, else the
// found server's own. kc is set once the cluster is asked.
func (a *App) connector(o *endpointOptions, conns int, cl func() (*kube.Clients, *vllm.Cluster, error), kc **kube.Clients) *vllm.Connector {
	return &vllm.Connector{
		Options: openaiclient.Options{CAFile: o.CAFile, Insecure: o.Insecure, ConnectTo: o.ConnectTo, MaxConns: conns,
			FirstByteTimeout: o.TTFBTimeout, IdleTimeout: o.IdleTimeout},
		Endpoint: cmp.Or(o.Endpoint, a.Getenv("AIN_ENDPOINT")), APIKey: cmp.Or(o.APIKey, a.Getenv("AIN_API_KEY")), Log: a.Streams.Err,
		NewError: endpointError,
		Discovery: func() (*vllm.Discovery, error) {
			k, c, err := cl()
			if err != nil {
				return nil, ainerr.New(ainerr.Usage, fmt.Errorf("no endpoint: pass --endpoint URL or set AIN_ENDPOINT (no cluster to find an `ain serve` deployment in: %v)", err),
					"for a vLLM server, the URL of its ingress (https://HOST) or of a port-forward (http://127.0.0.1:8000)")
			}
			*kc = k
			return &vllm.Discovery{Cluster: c, Config: k.Config, Log: a.Streams.Err, AllowPortForward: o.PortForward}, nil
		},
	}
}

// modelClient is the client to the model server (connector), the port-forward it may open
// ending with ctx.
func (a *App) modelClient(ctx context.Context, o *endpointOptions, conns int) (*openaiclient.Client, error) {
	var kc *kube.Clients
	k := a.connector(o, conns, a.servingCluster, &kc)
	ep, err := k.Find(ctx, "")
	if err != nil && kc != nil {
		return nil, discoveryError(kc, err, "finding the model server")
	} else if err != nil {
		return nil, err
	}
	o.via = ep.Via
	if o.Insecure {
		fmt.Fprintln(a.Streams.Err, "WARNING: --insecure: the server's TLS certificate is NOT verified; whoever sits on the path can read the API key, the prompts and the answers.")
	}
	return k.Open(ctx, ep)
}

// endpointError maps the client library's typed errors to usage errors naming the flag.
func endpointError(err error) error {
	var cf *openaiclient.CAFileError
	var ee *openaiclient.EndpointError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &cf):
		return ainerr.New(ainerr.Usage, fmt.Errorf("--ca-file %s: %v", cf.Path, cf.Err), "give a PEM file with the CA that signed the server's certificate")
	case errors.As(err, &ee) && ee.Endpoint == "":
		return ainerr.New(ainerr.Usage, fmt.Errorf("no endpoint: pass --endpoint URL or set AIN_ENDPOINT"),
			"for a server deployed with `ain serve`, run `ain serve status` to see its URL")
	case errors.As(err, &ee) && ee.ConnectTo:
		return ainerr.Usagef("--connect-to %q: %s", ee.Endpoint, ee.Reason)
	case errors.As(err, &ee):
		return ainerr.Usagef("--endpoint %q: %s", ee.Endpoint, ee.Reason)
	}
	return err
}

// discoveryError maps Discovery's typed errors to exit codes and hints.
func discoveryError(kc *kube.Clients, err error, what string) error {
	if _, ok := errors.AsType[*vllm.NotFoundError](err); ok {
		return ainerr.New(ainerr.Usage, err, "`ain serve status` lists the model servers")
	}
	if _, ok := errors.AsType[*vllm.NoModelServerError](err); ok {
		return ainerr.New(ainerr.Usage, fmt.Errorf("no endpoint: %w, and no --endpoint / AIN_ENDPOINT", err),
			"deploy one with `ain serve vllm`, or pass --endpoint URL for any OpenAI-compatible server")
	}
	if mapped, ok := libError(err, code[*vllm.AmbiguousError](ainerr.Usage), code[*vllm.RouteError](ainerr.JobFailed),
		code[*vllm.IngressUnreachableError](ainerr.Unreachable), code[*vllm.NoReadyReplicaError](ainerr.Unreachable)); ok {
		return mapped
	}
	return kc.Classify(err, what)
}

type modelsOptions struct {
	endpointOptions
	Output string
}

func (a *App) modelsCommand() *ucli.Command {
	o := &modelsOptions{}
	return &ucli.Command{
		Name:  "models",
		Usage: "list the models an OpenAI-compatible server (vLLM) serves",
		Description: "Reads GET /v1/models. vLLM answers /health before the model is loaded; a model listed here\n" +
			"can answer.",
		Flags:  append(append(o.flags(), o.timeoutFlags(chatTTFBTimeout, chatIdleTimeout)...), outputFlag(&o.Output, "table", "table or json", "json")),
		Action: func(c *ucli.Context) error { return a.runModels(c.Context, o) },
	}
}

func (a *App) runModels(ctx context.Context, o *modelsOptions) error {
	c, err := a.modelClient(ctx, &o.endpointOptions, 0)
	if err != nil {
		return err
	}
	l, err := c.List(ctx, 30*time.Second)
	switch {
	case err != nil:
		return err
	case o.Output == "json":
		return a.writeJSON(l)
	case len(l.Models) == 0:
		fmt.Fprintf(a.Streams.Err, "%s serves no model yet (still loading?)\n", l.Endpoint)
		return nil
	}
	a.table(openaiclient.ModelTable(l.Models))
	return nil
}
