package cli

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	ucli "github.com/urfave/cli/v2"

	"github.com/ain-hpc/ain/pkg/ainerr"
	"github.com/ain-hpc/ain/pkg/vllm"
)

// endpointOptions are the flags every command talking to a model server takes
// (ain models, ain chat, ain chat test, ain bench serve).
type endpointOptions struct {
	Endpoint string
	APIKey   string
	CAFile   string
	Insecure bool
}

func (o *endpointOptions) flags() []ucli.Flag {
	return []ucli.Flag{
		&ucli.StringFlag{Name: "endpoint", Usage: "the OpenAI-compatible server's URL, e.g. https://llm.example.com or http://127.0.0.1:8000 (env AIN_ENDPOINT; default: what ain serve deployed in the namespace, via its ingress or a port-forward)", Destination: &o.Endpoint},
		&ucli.StringFlag{Name: "api-key", Usage: "bearer token, the server's --api-key (prefer env AIN_API_KEY: flags show in the process list)", Destination: &o.APIKey},
		&ucli.StringFlag{Name: "ca-file", Usage: "PEM file of a private CA to trust, besides the system's, for the server's certificate", Destination: &o.CAFile},
		&ucli.BoolFlag{Name: "insecure", Usage: "do NOT verify the server's TLS certificate (testing only; never the default)", Destination: &o.Insecure},
	}
}

// modelClient builds the client from flags and environment; the endpoint comes from
// --endpoint, else AIN_ENDPOINT, else what `ain serve` deployed (discoverEndpoint).
func (a *App) modelClient(ctx context.Context, o *endpointOptions, conns int) (*vllm.Client, error) {
	endpoint := o.Endpoint
	if endpoint == "" {
		endpoint = a.Getenv("AIN_ENDPOINT")
	}
	if endpoint == "" {
		var err error
		if endpoint, err = a.discoverEndpoint(ctx, o); err != nil {
			return nil, err
		}
	}
	key := o.APIKey
	if key == "" {
		key = a.Getenv("AIN_API_KEY")
	}
	if o.Insecure {
		fmt.Fprintln(a.Streams.Err, "WARNING: --insecure: the server's TLS certificate is NOT verified; whoever sits on the path can read the API key, the prompts and the answers.")
	}
	return vllm.NewClient(vllm.Options{Endpoint: endpoint, APIKey: key, CAFile: o.CAFile, Insecure: o.Insecure, MaxConns: conns})
}

// discoverEndpoint finds what `ain serve` deployed in the namespace (by label): its ingress
// URL when that answers from here, else a port-forward to a ready replica, open until ctx ends.
func (a *App) discoverEndpoint(ctx context.Context, o *endpointOptions) (string, error) {
	kc, err := a.clients()
	if err != nil {
		return "", ainerr.New(ainerr.Usage, fmt.Errorf("no endpoint: pass --endpoint URL or set AIN_ENDPOINT (no cluster to find an `ain serve` deployment in: %v)", err),
			"for a vLLM server, the URL of its ingress (https://HOST) or of a port-forward (http://127.0.0.1:8000)")
	}
	d := &vllm.Discovery{
		Cluster:   &vllm.Cluster{Kube: kc.Kube, Dynamic: kc.Dynamic, Namespace: kc.Namespace},
		Config:    kc.Config,
		Log:       a.Streams.Err,
		Reachable: a.reachable(o),
	}
	url, _, err := d.Endpoint(ctx, "") // the port-forward ends with ctx
	if err != nil {
		return "", kc.Classify(err, "finding the model server")
	}
	return url, nil
}

// reachable checks that a URL answers GET /health from here, with the TLS settings given.
func (a *App) reachable(o *endpointOptions) func(context.Context, string) error {
	return func(ctx context.Context, url string) error {
		c, err := vllm.NewClient(vllm.Options{Endpoint: url, CAFile: o.CAFile, Insecure: o.Insecure})
		if err != nil {
			return err
		}
		ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
		defer cancel()
		return c.Health(ctx)
	}
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
		Flags:  append(o.flags(), outputFlag(&o.Output, "table", "table or json")),
		Action: func(c *ucli.Context) error { return a.runModels(c.Context, o) },
	}
}

func (a *App) runModels(ctx context.Context, o *modelsOptions) error {
	if o.Output != "table" && o.Output != "json" {
		return ainerr.Usagef("-o %s: use table or json", o.Output)
	}
	c, err := a.modelClient(ctx, &o.endpointOptions, 0)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	models, err := c.Models(ctx)
	if err != nil {
		return err
	}
	if o.Output == "json" {
		if models == nil {
			models = []vllm.Model{}
		}
		return a.writeJSON(map[string]any{"endpoint": c.Endpoint(), "models": models})
	}
	if len(models) == 0 {
		fmt.Fprintf(a.Streams.Err, "%s serves no model yet (still loading?)\n", c.Endpoint())
		return nil
	}
	rows := make([][]string, 0, len(models))
	for _, m := range models {
		maxLen := "-"
		if m.MaxModelLen > 0 {
			maxLen = strconv.Itoa(m.MaxModelLen)
		}
		root := m.Root
		if root == "" || root == m.ID {
			root = "-"
		}
		rows = append(rows, []string{m.ID, root, maxLen, orDashStr(m.OwnedBy)})
	}
	a.table([]string{"MODEL", "ROOT", "MAX LEN", "OWNED BY"}, rows)
	return nil
}

func orDashStr(s string) string {
	if strings.TrimSpace(s) == "" {
		return "-"
	}
	return s
}
