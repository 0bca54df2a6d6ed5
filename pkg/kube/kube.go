// Package kube holds ain's Kubernetes conventions, shared by every package that talks to a
// cluster: the labels and field manager on what ain creates (labels.go), the conversion of typed
// objects to the form server-side apply sends and their YAML/JSON encoding (encode.go), the one
// server-side Apply and the one Prune of a run's objects (apply.go), typed API errors
// (errors.go), and the clients built from a kubeconfig, with API errors mapped to ain's exit
// codes and a hint naming the kubeconfig and context that were used (this file).
//
// It does not import pkg/sandbox: the caller passes the sandbox's kubeconfig path as the
// fallback, so that this small package does not drag the sandbox's process management along.
package kube

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/ain-hpc/ain/pkg/lazyre"
)

// SandboxClusterName is the cluster name in the kubeconfig `ain sandbox` writes.
const SandboxClusterName = "ain-sandbox"

// Options select the cluster.
type Options struct {
	Kubeconfig string // --kubeconfig
	Context    string // --context
	Namespace  string // -n
	Getenv     func(string) string
	// UserAgent names the client in the API server's logs and audit (default "ain").
	UserAgent string
	// SandboxKubeconfig is the local ain sandbox's kubeconfig: used when no other kubeconfig is
	// found, and recognised (same file) to say the cluster is the sandbox. Empty: no fallback.
	SandboxKubeconfig string
}

// Clients are the clients a command uses, with where they came from. LoadConfig fills in
// where they came from only; Load also builds the clients.
type Clients struct {
	Config  *rest.Config
	Kube    kubernetes.Interface
	Dynamic dynamic.Interface
	// Discovery is Kube's discovery behind a memory cache, for the questions a command asks
	// more than once (which job APIs and gang schedulers the cluster serves: train asks them
	// when it builds the job and again in each summary). A check that must see the server's
	// answer now (preflight: a CRD installed since, a 404 for one group version) uses
	// Kube.Discovery().
	Discovery  discovery.CachedDiscoveryInterface
	Namespace  string
	Kubeconfig string // the file used ("" for in-cluster)
	Context    string
	Server     string
	Sandbox    bool // the kubeconfig is the local ain sandbox's
}

// Load resolves the kubeconfig as LoadConfig does and builds the clients.
func Load(o Options) (*Clients, error) {
	c, err := LoadConfig(o)
	if err != nil {
		return nil, err
	}
	if c.Kube, err = kubernetes.NewForConfig(c.Config); err != nil {
		return nil, err
	}
	if c.Dynamic, err = dynamic.NewForConfig(c.Config); err != nil {
		return nil, err
	}
	c.Discovery = memory.NewMemCacheClient(c.Kube.Discovery())
	return c, nil
}

// LoadConfig resolves the kubeconfig: --kubeconfig, $KUBECONFIG, ~/.kube/config, else the
// running ain sandbox's. It returns an Unreachable error with a hint when none is found. It
// builds no client: render, which asks a cluster one question if one is configured, uses
// DiscoveryWithin.
func LoadConfig(o Options) (*Clients, error) {
	getenv := o.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	path, isSandbox := o.Kubeconfig, false
	if path == "" {
		path = getenv("KUBECONFIG")
	}
	if path == "" {
		if home := getenv("HOME"); home != "" {
			if p := filepath.Join(home, ".kube", "config"); fileExists(p) {
				path = p
			}
		}
	}
	if path == "" && o.SandboxKubeconfig != "" && fileExists(o.SandboxKubeconfig) {
		path, isSandbox = o.SandboxKubeconfig, true
	}
	if path == "" {
		return nil, &CallError{Reason: ReasonNoCluster, Err: errors.New("no cluster configured: no --kubeconfig, $KUBECONFIG or ~/.kube/config, and no local sandbox")}
	}
	if !isSandbox && o.SandboxKubeconfig != "" && sameFile(path, o.SandboxKubeconfig) {
		isSandbox = true
	}
	rules := &clientcmd.ClientConfigLoadingRules{ExplicitPath: path}
	if o.Kubeconfig == "" && getenv("KUBECONFIG") != "" && !isSandbox {
		list := filepath.SplitList(getenv("KUBECONFIG"))
		if !slices.ContainsFunc(list, fileExists) {
			// clientcmd skips missing files and then blames KUBERNETES_MASTER: name the files.
			return nil, &CallError{Reason: ReasonBadKubeconfig, Err: fmt.Errorf("$KUBECONFIG=%s: no such file", getenv("KUBECONFIG"))}
		}
		rules = &clientcmd.ClientConfigLoadingRules{Precedence: list}
	}
	overrides := &clientcmd.ConfigOverrides{CurrentContext: o.Context}
	cc := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, overrides)
	cfg, err := cc.ClientConfig()
	if err != nil {
		return nil, &CallError{Reason: ReasonBadKubeconfig, Err: fmt.Errorf("kubeconfig %s: %w", path, err)}
	}
	raw, _ := cc.RawConfig()
	ctxName := o.Context
	if ctxName == "" {
		ctxName = raw.CurrentContext
	}
	if c, ok := raw.Contexts[ctxName]; ok && c.Cluster == SandboxClusterName {
		isSandbox = true
	}
	ns := o.Namespace
	if ns == "" {
		if n, _, err := cc.Namespace(); err == nil && n != "" {
			ns = n
		} else {
			ns = "default"
		}
	}
	cfg.UserAgent = o.UserAgent
	if cfg.UserAgent == "" {
		cfg.UserAgent = getenv("AIN_USER_AGENT") // lets tests count one run's requests in the audit log
	}
	if cfg.UserAgent == "" {
		cfg.UserAgent = "ain"
	}
	cfg.QPS, cfg.Burst = 50, 100
	return &Clients{Config: cfg, Namespace: ns, Kubeconfig: path, Context: ctxName, Server: cfg.Host, Sandbox: isSandbox}, nil
}

func fileExists(p string) bool {
	st, err := os.Stat(p)
	return err == nil && !st.IsDir()
}

func sameFile(a, b string) bool {
	sa, err1 := os.Stat(a)
	sb, err2 := os.Stat(b)
	return err1 == nil && err2 == nil && os.SameFile(sa, sb)
}

// DiscoveryWithin is a discovery client whose requests give up after d: for a question a command
// can do without (render asks which job APIs a cluster serves, and works with no cluster).
func (c *Clients) DiscoveryWithin(d time.Duration) (discovery.DiscoveryInterface, error) {
	cfg := rest.CopyConfig(c.Config)
	cfg.Timeout = d
	return discovery.NewDiscoveryClientForConfig(cfg)
}

// Client-side rate limit of FanOut's clientset, in requests a second and burst: high enough
// that the caller's bound on requests in flight is what paces a fan-out. At 200 a second a
// 1000-node preflight spent 4.4 s creating its probe pods (16 in flight would have allowed
// about three times that rate on the loaded 2-core sandbox machine).
const (
	FanOutQPS   = 1000
	FanOutBurst = 1000
)

// FanOut is a clientset with c's identity for a fan-out of one request per node whose
// concurrency the caller bounds (preflight creates its probe pods 16 at a time). Every other
// command's 50 requests a second (Load) would hold a 1000-node preflight 20 s on its creates
// alone. The server meters clients by concurrency, not rate: API Priority and Fairness (GA in
// Kubernetes 1.29) gives each priority level a share of the server's seats and queues the excess
// (global-default: 20 shares, 128 queues of 50; k8s.io/apiserver pkg/apis/flowcontrol/bootstrap),
// answering 429 only when its queues are full, and client-go retries a 429 after its Retry-After
// up to 10 times (client-go rest/request.go, with_retry.go). 16 requests in flight never fill a
// queue; the limit here only keeps a loop from running away.
func (c *Clients) FanOut() (kubernetes.Interface, error) {
	cfg := rest.CopyConfig(c.Config)
	cfg.QPS, cfg.Burst = FanOutQPS, FanOutBurst
	return kubernetes.NewForConfig(cfg)
}

// Where describes the cluster for hints: "kubeconfig X, context Y, server Z".
func (c *Clients) Where() string {
	s := fmt.Sprintf("kubeconfig %s, context %q, server %s", c.Kubeconfig, c.Context, c.Server)
	if c.Sandbox {
		s += " (the local ain sandbox)"
	}
	return s
}

// Classify says why a cluster call failed: an interrupt, refused credentials, RBAC, an admission
// webhook's refusal or absence, or an API server that does not answer, as an *CallError whose message
// starts with what; any other error is returned wrapped with what. An *CallError passes unchanged.
func (c *Clients) Classify(err error, what string) error {
	if err == nil || c == nil { // nil: the command asked no cluster, so the error is not the cluster's
		return err
	}
	var ke *CallError
	if errors.As(err, &ke) {
		return err
	}
	if name, reason := WebhookName(err); name != "" {
		// The API server answered: it is one of its admission webhooks that did not (a TLS or
		// connection error between them says nothing about our own connection).
		e := c.errorf(ReasonWebhookUnreachable, "%s: the API server could not call the admission webhook %q: %s", what, name, reason)
		e.Webhook = name
		return e
	}
	switch {
	case errors.Is(err, context.Canceled):
		return c.errorf(ReasonInterrupted, "%s: interrupted", what)
	case apierrors.IsUnauthorized(err):
		return c.errorf(ReasonUnauthorized, "%s: the cluster refused our credentials (401 Unauthorized)", what)
	case IsWebhookDenial(err):
		// controller-runtime's validating webhooks deny with 403 (admission.Denied): a refusal of
		// the object, not of the user.
		return c.errorf(ReasonWebhookDenied, "%s: %v", what, apiMessage(err))
	case apierrors.IsForbidden(err):
		e := c.errorf(ReasonForbidden, "%s: %v", what, apiMessage(err))
		// The API server's RBAC refusal says so (k8s.io/apiserver pkg/endpoints/handlers/
		// responsewriters forbidden: `... at the cluster scope`).
		e.ClusterScope = strings.Contains(apiMessage(err), "at the cluster scope")
		return e
	case isUnreachable(err):
		return c.errorf(ReasonUnreachable, "%s: cannot reach the API server: %v", what, rootCause(err))
	}
	return fmt.Errorf("%s: %w", what, err)
}

// IsWebhookDenial reports whether err is an admission webhook's refusal of an object, as the API
// server words it (k8s.io/apiserver admission/plugin/webhook/errors ToStatusErr: `admission
// webhook "NAME" denied the request: ...`), whatever status code the webhook chose.
func IsWebhookDenial(err error) bool {
	var se apierrors.APIStatus
	if !errors.As(err, &se) {
		return false
	}
	m := se.Status().Message
	return strings.Contains(m, "admission webhook \"") && strings.Contains(m, "denied the request")
}

func apiMessage(err error) string {
	var se apierrors.APIStatus
	if errors.As(err, &se) {
		return se.Status().Message
	}
	return err.Error()
}

// webhookRE finds the webhook in the API server's error for a webhook it could not call
// (k8s.io/apiserver pkg/util/webhook ErrCallingWebhook: `failed calling webhook "NAME": REASON`).
var webhookRE = lazyre.New(`failed calling webhook "([^"]+)"[:;] ?(.*)`)

// WebhookName returns the admission webhook an API error says could not be called, and why.
func WebhookName(err error) (name, reason string) {
	var se apierrors.APIStatus
	if !errors.As(err, &se) {
		return "", ""
	}
	m := webhookRE().FindStringSubmatch(se.Status().Message)
	if m == nil {
		return "", ""
	}
	return m[1], strings.TrimPrefix(m[2], "failed to call webhook: ")
}

// Outage reports whether err is the API server (or its etcd) briefly away rather than an answer:
// no answer at all (connection refused or reset while it restarts, isUnreachable), or 429, 500,
// 503 or 504. A wait rides it out until its own timeout instead of ending a rollout that goes on
// in the cluster (issue 19: an API server restart mid-rollout ended `ain serve` with "cannot reach
// the API server" while the Deployments kept rolling). A cancelled or expired context is not one,
// nor a webhook the API server could not call (Classify names it).
func Outage(err error) bool {
	if err == nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	if name, _ := WebhookName(err); name != "" {
		return false // a 500 from a webhook that is down: the API server answered, and will again
	}
	return isUnreachable(err) || apierrors.IsTooManyRequests(err) || apierrors.IsInternalError(err) ||
		apierrors.IsServiceUnavailable(err) || apierrors.IsServerTimeout(err) || apierrors.IsTimeout(err)
}

func isUnreachable(err error) bool {
	var se apierrors.APIStatus
	if errors.As(err, &se) {
		return false // the API server answered
	}
	if errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.EHOSTUNREACH) || errors.Is(err, syscall.ECONNRESET) {
		return true
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return true
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		return true
	}
	var oe *net.OpError
	if errors.As(err, &oe) {
		return true
	}
	msg := err.Error()
	return strings.Contains(msg, "connection refused") || strings.Contains(msg, "no such host") || strings.Contains(msg, "i/o timeout")
}

func rootCause(err error) error {
	for {
		u := errors.Unwrap(err)
		if u == nil {
			return err
		}
		err = u
	}
}

// Identity is a stable, non-secret name for the credentials in cfg: a hash of the user name,
// token (or token file), client certificate, exec plugin and impersonation. Two users of one
// cluster get different identities; the credentials themselves never leave this function.
func Identity(cfg *rest.Config) string {
	if cfg == nil {
		return ""
	}
	h := sha256.New()
	parts := []string{cfg.Username, cfg.Password, cfg.BearerToken, cfg.BearerTokenFile, cfg.CertFile, string(cfg.CertData),
		cfg.Impersonate.UserName, strings.Join(cfg.Impersonate.Groups, ",")}
	if cfg.ExecProvider != nil {
		parts = append(parts, cfg.ExecProvider.Command, strings.Join(cfg.ExecProvider.Args, " "))
	}
	if cfg.AuthProvider != nil {
		parts = append(parts, cfg.AuthProvider.Name)
	}
	for _, p := range parts {
		h.Write([]byte(p))
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil))[:16]
}

// RESTOrNil is c's REST config; nil for a nil c (a command that asked no cluster).
func (c *Clients) RESTOrNil() *rest.Config {
	if c == nil {
		return nil
	}
	return c.Config
}

// KubeOrNil is c's clientset; nil for a nil c.
func (c *Clients) KubeOrNil() kubernetes.Interface {
	if c == nil {
		return nil
	}
	return c.Kube
}
