// Package openaiclient is a client for OpenAI-compatible model servers such as vLLM (built on
// github.com/sashabaranov/go-openai): models, chat, embeddings, and the streaming primitives the
// serving benchmark reads with; its errors say which address, CA and key were used and why a
// call failed (CallError and its Reason).
package openaiclient

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	openai "github.com/sashabaranov/go-openai"
)

// Options say how to reach an OpenAI-compatible server.
type Options struct {
	// Endpoint is the server's base URL, with or without the trailing /v1
	// (https://llm.example.com, http://127.0.0.1:8000/v1).
	Endpoint string
	// APIKey is sent as a bearer token (vLLM's --api-key). Never printed.
	APIKey string
	// CAFile is a PEM bundle of extra CAs to trust (a private CA signing the ingress certificate).
	CAFile string
	// CAPEM is more PEM CAs to trust, e.g. the ca.crt of the self-signed TLS Secret `ain serve`
	// created; CAName says where it came from (for error messages).
	CAPEM  []byte
	CAName string
	// ConnectTo, when set (HOST:PORT), is where every connection goes instead of the
	// endpoint's own address; TLS still verifies the endpoint's host name (curl --connect-to).
	// It reaches an ingress whose DNS name does not resolve from here yet.
	ConnectTo string
	// Insecure skips TLS certificate verification. Never the default.
	Insecure bool
	// FirstByteTimeout bounds the wait for the first byte of an answer, from sending the
	// request (a streamed answer's first event; a whole non-streamed answer); IdleTimeout bounds
	// each gap between bytes of a streamed answer. 0: no bound. See watchdog.go.
	FirstByteTimeout time.Duration
	IdleTimeout      time.Duration
	// MaxConns sizes the connection pool (the benchmark's concurrency); 0 means 64.
	MaxConns int
}

// Client talks to one OpenAI-compatible endpoint.
type Client struct {
	opts    Options
	base    *url.URL // ends in /v1
	http    *http.Client
	openai  *openai.Client
	caNames string // for TLS error messages
}

// New checks the options and builds the client. TLS is verified against the system roots
// plus Options.CAFile unless Options.Insecure.
func New(opts Options) (*Client, error) {
	base, err := ParseEndpoint(opts.Endpoint)
	if err != nil {
		return nil, err
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	conns := opts.MaxConns
	if conns <= 0 {
		conns = 64
	}
	tr.MaxIdleConns = conns
	tr.MaxIdleConnsPerHost = conns
	tr.ResponseHeaderTimeout = 0 // a model may take long to start answering; contexts bound it
	// Compressed event streams would be decompressed in blocks, delaying tokens.
	tr.DisableCompression = true
	// HTTP/1.1 only, as vLLM's own benchmark client (aiohttp: one connection per request in
	// flight): through an ingress that offers h2, Go would multiplex every stream on one
	// connection, and bench serve's TTFT and ITL would measure that instead.
	var protos http.Protocols
	protos.SetHTTP1(true)
	tr.Protocols = &protos
	tlsCfg := &tls.Config{MinVersion: tls.VersionTLS12}
	caNames := "the system's trusted CAs"
	if opts.CAFile != "" || len(opts.CAPEM) > 0 {
		pool, err := x509.SystemCertPool()
		if err != nil || pool == nil {
			pool = x509.NewCertPool()
		}
		if opts.CAFile != "" {
			pem, err := os.ReadFile(opts.CAFile)
			if err != nil {
				return nil, &CAFileError{Path: opts.CAFile, Err: err}
			}
			if !pool.AppendCertsFromPEM(pem) {
				return nil, &CAFileError{Path: opts.CAFile, Err: errors.New("no PEM certificate found in it")}
			}
			caNames += " and --ca-file " + opts.CAFile
		}
		if len(opts.CAPEM) > 0 && pool.AppendCertsFromPEM(opts.CAPEM) {
			caNames += " and " + opts.CAName
		}
		tlsCfg.RootCAs = pool
	}
	if opts.ConnectTo != "" {
		// net.SplitHostPort takes "127.0.0.1:" (an empty port), which dials port 0.
		host, port, err := net.SplitHostPort(opts.ConnectTo)
		if n, perr := strconv.Atoi(port); err != nil || host == "" || perr != nil || n < 1 || n > 65535 {
			return nil, &EndpointError{Endpoint: opts.ConnectTo, Reason: "want HOST:PORT with a port number (e.g. 203.0.113.10:443)", ConnectTo: true}
		}
		d := &net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}
		tr.DialContext = func(ctx context.Context, network, _ string) (net.Conn, error) {
			return d.DialContext(ctx, network, opts.ConnectTo)
		}
	}
	// Every connection records when its bytes arrive (arrival.go).
	dial := tr.DialContext
	tr.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		conn, err := dial(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return &arrivalConn{Conn: conn}, nil
	}
	if opts.Insecure {
		tlsCfg.InsecureSkipVerify = true //nolint:gosec // explicit, loud --insecure
	}
	tr.TLSClientConfig = tlsCfg

	hc := &http.Client{Transport: &fieldsTransport{next: tr}}
	cfg := openai.DefaultConfig(opts.APIKey)
	cfg.BaseURL = strings.TrimSuffix(base.String(), "/")
	cfg.HTTPClient = hc
	return &Client{opts: opts, base: base, http: hc, openai: openai.NewClientWithConfig(cfg), caNames: caNames}, nil
}

// CAFileError is a CA bundle that cannot be read or holds no certificate.
type CAFileError struct {
	Path string
	Err  error
}

func (e *CAFileError) Error() string { return fmt.Sprintf("CA file %s: %v", e.Path, e.Err) }
func (e *CAFileError) Unwrap() error { return e.Err }

// EndpointError is an endpoint URL, or with ConnectTo the connect-to address, that cannot
// be used.
type EndpointError struct {
	Endpoint  string
	Reason    string
	ConnectTo bool
}

func (e *EndpointError) Error() string {
	if e.Endpoint == "" {
		return e.Reason
	}
	return fmt.Sprintf("endpoint %q: %s", e.Endpoint, e.Reason)
}

// ParseEndpoint checks an endpoint URL and returns it ending in /v1.
func ParseEndpoint(s string) (*url.URL, error) {
	if s == "" {
		return nil, &EndpointError{Reason: "no endpoint given"}
	}
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, &EndpointError{Endpoint: s, Reason: "want http(s)://HOST[:PORT][/v1]"}
	}
	if u.User != nil {
		return nil, &EndpointError{Endpoint: u.Redacted(), Reason: "credentials belong in the API key, not in the URL"}
	}
	u.Path = strings.TrimSuffix(u.Path, "/")
	if !strings.HasSuffix(u.Path, "/v1") {
		u.Path += "/v1"
	}
	u.RawQuery, u.Fragment = "", ""
	return u, nil
}

// Endpoint is the base URL requests go to (ending in /v1).
func (c *Client) Endpoint() string { return c.base.String() }

// MaxConns is the size of the connection pool asked for (Options.MaxConns; 0: the default).
func (c *Client) MaxConns() int { return c.opts.MaxConns }

// HTTPClient is the client's HTTP client (TLS settings, connection pool).
func (c *Client) HTTPClient() *http.Client { return c.http }

// OpenAI is the underlying go-openai client, for calls this package does not wrap.
func (c *Client) OpenAI() *openai.Client { return c.openai }

// Model is one entry of /v1/models, with vLLM's extra fields.
type Model struct {
	ID          string `json:"id"`
	OwnedBy     string `json:"owned_by"`
	Root        string `json:"root,omitempty"`
	MaxModelLen int    `json:"max_model_len,omitempty"`
	Created     int64  `json:"created,omitempty"`
}

// Models lists the served models. go-openai's model type drops vLLM's root and max_model_len,
// so this reads /v1/models itself.
func (c *Client) Models(ctx context.Context) ([]Model, error) {
	wctx, wrap, done := c.Watch(ctx)
	defer done()
	req, err := http.NewRequestWithContext(wctx, http.MethodGet, c.base.String()+"/models", nil)
	if err != nil {
		return nil, err
	}
	c.Authorize(req)
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, c.Explain(Stalled(wctx, err), "GET /v1/models")
	}
	resp.Body = wrap(resp.Body)
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, c.Explain(StatusError(resp), "GET /v1/models")
	}
	var list struct {
		Data []Model `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&list); err != nil {
		if err = Stalled(wctx, err); errors.As(err, new(*StallError)) {
			return nil, c.Explain(err, "GET /v1/models")
		}
		return nil, fmt.Errorf("GET %s/models: not an OpenAI model list: %w", c.base, err)
	}
	return list.Data, nil
}

// ForServer are the options of a client to another server (a judge model's) at endpoint
// with key: Insecure and ConnectTo are about this one (its self-signed ingress, its
// controller's address) and must not send key to an unverified server or to that address;
// CAFile only adds trust and the timeouts bound any server, so those carry over.
func (o Options) ForServer(endpoint, key string) Options {
	return Options{Endpoint: endpoint, APIKey: key, CAFile: o.CAFile, FirstByteTimeout: o.FirstByteTimeout, IdleTimeout: o.IdleTimeout}
}

// ModelList is what a server serves (`ain models -o json`).
type ModelList struct {
	Endpoint string  `json:"endpoint"`
	Models   []Model `json:"models"`
}

// List lists the served models (Models) within timeout; Models is never nil.
func (c *Client) List(ctx context.Context, timeout time.Duration) (*ModelList, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	models, err := c.Models(ctx)
	if err != nil {
		return nil, err
	}
	if models == nil {
		models = []Model{}
	}
	return &ModelList{Endpoint: c.Endpoint(), Models: models}, nil
}

// Health calls GET /health (next to /v1, not under it). vLLM answers 200 as soon as the
// engine runs, before the model can answer: use Models to know that it serves.
func (c *Client) Health(ctx context.Context) error {
	u := *c.base
	u.Path = strings.TrimSuffix(u.Path, "/v1") + "/health"
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return err
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return c.Explain(err, "GET /health")
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s (the engine is not healthy)", u.String(), resp.Status)
	}
	return nil
}

// ResolveModel returns model if the server serves it, the only served model if model is
// empty, and otherwise a usage error listing what is served (vLLM lists LoRA adapters as
// models too, so with several there is no safe guess).
func (c *Client) ResolveModel(ctx context.Context, model string) (string, error) {
	models, err := c.Models(ctx)
	if err != nil {
		return "", err
	}
	if len(models) == 0 {
		return "", callError(ReasonFailure, fmt.Errorf("%s serves no model yet", c.base),
			"the model may still be loading: try again when `%s` lists it", "models")
	}
	if model == "" {
		if len(models) == 1 {
			return models[0].ID, nil
		}
		ids := make([]string, len(models))
		for i, m := range models {
			ids[i] = m.ID
		}
		return "", callError(ReasonInput, fmt.Errorf("%s serves %d models (%s): say which", c.base, len(models), strings.Join(ids, ", ")),
			fmt.Sprintf("pass --model %s", ids[0]))
	}
	for _, m := range models {
		if m.ID == model {
			return model, nil
		}
	}
	return "", modelNotFound(model, models)
}

func modelNotFound(model string, models []Model) error {
	ids := make([]string, len(models))
	for i, m := range models {
		ids[i] = m.ID
	}
	return callError(ReasonInput, fmt.Errorf("model %q is not served here; served: %s", model, strings.Join(ids, ", ")),
		fmt.Sprintf("pass --model %s", ids[0]))
}

func (c *Client) Authorize(req *http.Request) {
	if c.opts.APIKey != "" {
		req.Header.Set("Authorization", "Bearer "+c.opts.APIKey)
	}
}

// ClearTextKeyTo returns the address the API key travels to in clear text: that of an http://
// endpoint (its --connect-to address when set) off this machine. "" when there is no key,
// the endpoint is https://, or the address is a loopback one (a port-forward).
func (c *Client) ClearTextKeyTo() string {
	if c.opts.APIKey == "" || c.base.Scheme != "http" {
		return ""
	}
	addr := c.base.Host
	if c.opts.ConnectTo != "" {
		addr = c.opts.ConnectTo
	}
	host := addr
	if h, _, err := net.SplitHostPort(addr); err == nil {
		host = h
	}
	host = strings.Trim(host, "[]")
	if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() || host == "localhost" || strings.HasSuffix(host, ".localhost") {
		return ""
	}
	return addr
}

// dialAddr is the host:port a request to the endpoint connects to.
func (c *Client) dialAddr() string {
	if c.opts.ConnectTo != "" {
		return c.opts.ConnectTo + " (--connect-to for " + c.base.Host + ")"
	}
	if c.base.Port() != "" {
		return c.base.Host
	}
	if c.base.Scheme == "https" {
		return net.JoinHostPort(c.base.Hostname(), "443")
	}
	return net.JoinHostPort(c.base.Hostname(), "80")
}

// ModelTable is the header and rows of a table of models: name, root (the path loaded, when
// it is not the name), longest context and owner ("-" for none).
func ModelTable(models []Model) ([]string, [][]string) {
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
		owner := m.OwnedBy
		if strings.TrimSpace(owner) == "" {
			owner = "-"
		}
		rows = append(rows, []string{m.ID, root, maxLen, owner})
	}
	return []string{"MODEL", "ROOT", "MAX LEN", "OWNED BY"}, rows
}
