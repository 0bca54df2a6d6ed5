package vllm

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/ain-hpc/ain/pkg/openaiclient"
)

// Connector opens clients to a model server the way ain's commands reach one: the endpoint
// given, else the one Discovery finds (the server's entry, or with AllowPortForward a
// port-forward to one pod, open until the context ends); the API key given, else the one the
// server found requires (read from the Secret its Deployments name).
type Connector struct {
	// Options are every client's TLS settings and bounds; Endpoint, APIKey, CAPEM and CAName
	// are set per endpoint, and ConnectTo where a port-forward or the entry's address needs it.
	Options openaiclient.Options
	// Endpoint is the URL given ("": found); APIKey the key given ("": the server's).
	Endpoint, APIKey string
	// Discovery returns how to find the model server; called only when no Endpoint is given.
	// Its error is returned as is. Its Reachable, when nil, is set to Reachable.
	Discovery func() (*Discovery, error)
	// Log receives notes (a key that could not be read, a key sent in clear text).
	Log io.Writer
	// NewError, when set, maps the error of a client's options (openaiclient.New's) for the
	// caller.
	NewError func(error) error

	found     *Discovery
	serverKey string
}

// ClientOptions are the options of a client to ep sending key.
func (k *Connector) ClientOptions(ep Endpoint, key string) openaiclient.Options {
	o := k.Options
	if o.ConnectTo == "" || ep.Via == "port-forward" {
		o.ConnectTo = ep.ConnectTo // a port-forward is local: the given address is for the entry
	}
	o.Endpoint, o.APIKey, o.CAPEM, o.CAName = ep.URL, key, ep.CAPEM, ep.CAName
	return o
}

// Reachable checks that ep answers GET /health from here within 3s, with the TLS settings.
func (k *Connector) Reachable(ctx context.Context, ep Endpoint) error {
	c, err := openaiclient.New(k.ClientOptions(ep, ""))
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	return c.Health(ctx)
}

// Find returns the endpoint given, else that of model server name ("": the only one).
func (k *Connector) Find(ctx context.Context, name string) (Endpoint, error) {
	if k.Endpoint != "" {
		return Endpoint{URL: k.Endpoint, Via: "endpoint"}, nil
	}
	if k.found == nil {
		d, err := k.Discovery()
		if err != nil {
			return Endpoint{}, err
		}
		if d.Reachable == nil {
			d.Reachable = k.Reachable
		}
		k.found = d
	}
	return k.found.Endpoint(ctx, name)
}

// Open returns a client to ep (found by Find), sending the key given, else the one the
// server found requires.
func (k *Connector) Open(ctx context.Context, ep Endpoint) (*openaiclient.Client, error) {
	if k.APIKey == "" && ep.Server != "" && k.found != nil {
		key, ok, err := k.found.Cluster.APIKey(ctx, ep.Server)
		switch {
		case err != nil:
			fmt.Fprintf(k.Log, "note: could not read the API key of model server %s from its Secret (%v); pass it in AIN_API_KEY\n", ep.Server, err)
		case ok:
			k.serverKey = key
		}
	}
	return k.Client(ep)
}

// Client is a client to ep sending the key given, else the one Open read; it warns on Log
// when that key would cross the network in clear text.
func (k *Connector) Client(ep Endpoint) (*openaiclient.Client, error) {
	key := k.APIKey
	if key == "" {
		key = k.serverKey
	}
	c, err := k.newClient(ep, key)
	if err != nil {
		return nil, err
	}
	if addr := c.ClearTextKeyTo(); addr != "" {
		fmt.Fprintf(k.Log, "WARNING: the API key goes in clear text over http:// to %s, off this machine: whoever sits on the path can read it, and the prompts and answers. Use the https:// ingress, or a port-forward (http://127.0.0.1:PORT).\n", addr)
	}
	return c, nil
}

func (k *Connector) newClient(ep Endpoint, key string) (*openaiclient.Client, error) {
	c, err := openaiclient.New(k.ClientOptions(ep, key))
	if err != nil && k.NewError != nil {
		err = k.NewError(err)
	}
	return c, err
}

// Ready opens the readiness check's client to the deployment st (DeployOptions.Connect), sending
// key, else the key given, and says how the endpoint was reached.
func (k *Connector) Ready(ctx context.Context, st *ServingStatus, key string) (*openaiclient.Client, string, error) {
	ep, err := k.Find(ctx, st.Name)
	if err != nil {
		return nil, "", err
	}
	if key == "" {
		key = k.APIKey
	}
	c, err := k.newClient(ep, key)
	return c, ep.Via, err
}
