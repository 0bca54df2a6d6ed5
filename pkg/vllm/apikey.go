package vllm

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"io"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/ain-hpc/ain/pkg/jobs"
	"github.com/ain-hpc/ain/pkg/recipe"
)

// A model server's /v1 is guarded by an API key unless the user says otherwise. vLLM checks a
// key only when one is set (VLLM_API_KEY or --api-key; vllm/entrypoints/openai/api_server.py
// adds its authentication middleware only then), so a server without one answers anyone who
// reaches its Service or Ingress, including the requests that reach vLLM's pre-authentication
// bugs (CVE-2026-22778, remote code execution through the multimodal path in 0.8.3-0.14.0).
// Without a key in the recipe or a flag, the server gets one ain generates into the Secret
// NAME-api-key; a re-run keeps the key the live server has (server-side apply would otherwise
// drop the env entry and roll the pods open while the old Secret stays, looking secured), and
// removing authentication takes the explicit AllowUnauthenticated.

// APIKeySecretKey is the data key of the API key in the Secrets ain creates.
const APIKeySecretKey = "api-key"

// envAPIKey is the variable vLLM reads its API key from.
const envAPIKey = "VLLM_API_KEY"

// APIKeySecretName is the Secret ain creates for a model server's API key.
func APIKeySecretName(name string) string { return name + "-api-key" }

// AuthSource says where a model server's API key comes from.
type AuthSource string

const (
	AuthRecipe    AuthSource = "recipe"    // spec.apiKeySecret, set in the recipe or by a flag
	AuthLive      AuthSource = "live"      // the Secret the running server already uses
	AuthGenerated AuthSource = "generated" // a new key ain generated (Auth.Generated)
	AuthDefault   AuthSource = "default"   // offline: NAME-api-key, made at apply if missing
	AuthNone      AuthSource = "none"      // no key: AllowUnauthenticated
)

// Auth is how a model server's /v1 is guarded.
type Auth struct {
	Source AuthSource
	// Secret holds the key (nil for AuthNone).
	Secret *recipe.SecretRef
	// Generated is the new key for AuthGenerated: the Secret to create (NewAPIKeySecret) and
	// the one chance to show it.
	Generated string
	// Key is the key's value when ain knows it (generated, or read from the live Secret), for
	// its own readiness check; never printed.
	Key string
	// Dropped is ain's own API-key Secret that AllowUnauthenticated leaves unused (to delete
	// once the Deployments no longer reference it); "" when there is none.
	Dropped string
	// Version is the key Secret's resourceVersion as read (see KeyVersion).
	Version string
}

// AnnotationAPIKeyVersion is the pod-template annotation that records which version of the key
// Secret the pods started with. vLLM reads VLLM_API_KEY once, at container start, and a changed
// Secret leaves the pod template as it was, so a rotated key would never reach the running
// pods (the old key keeps working, the new one gets 401); a new value here rolls them. It holds
// the Secret's resourceVersion, which changes with every write of the Secret and says nothing
// of the key.
const AnnotationAPIKeyVersion = "ain.dev/api-key-version"

// KeyVersion is the key Secret's resourceVersion once applied: its version in applied (what
// this run wrote), else the one ResolveAuth read ("" without a key).
func (a Auth) KeyVersion(applied []*unstructured.Unstructured) string {
	if a.Secret == nil {
		return ""
	}
	for _, u := range applied {
		if u.GetKind() == "Secret" && u.GetName() == a.Secret.Name {
			return u.GetResourceVersion()
		}
	}
	return a.Version
}

// SetKeyVersion records the key Secret's version in every Deployment's pod template ("" leaves
// the templates without the annotation).
func SetKeyVersion(deps []*appsv1.Deployment, version string) {
	if version == "" {
		return
	}
	for _, d := range deps {
		if d.Spec.Template.Annotations == nil {
			d.Spec.Template.Annotations = map[string]string{}
		}
		d.Spec.Template.Annotations[AnnotationAPIKeyVersion] = version
	}
}

// InClusterNote says what the key does not guard. vLLM's middleware checks it only on the /v1,
// /v2, /inference and /cohere prefixes (vllm-project/vllm#58144, open: POST /invocations answers
// a full completion without the key in 0.27-0.29; the deny-by-default middleware of #58028 was
// unmerged when v0.30.0 was tagged). ain's entry routes only /v1 and /health, so this is about
// pods inside the cluster, which reach the Service directly.
const InClusterNote = "note: the key guards vLLM's /v1 API; /invocations, /tokenize, /pooling, /score and /metrics answer without it to any pod that reaches the Service on port 8000 (the ingress or route exposes only /v1 and /health): restrict in-cluster access with a NetworkPolicy admitting only the ingress or gateway's namespace"

// Describe says, in a line without the key, how /v1 is guarded.
func (a Auth) Describe() string {
	switch a.Source {
	case AuthNone:
		return "auth: NONE (--allow-unauthenticated): /v1 answers anyone who reaches the Service or the ingress"
	case AuthGenerated:
		return fmt.Sprintf("auth: vLLM requires an API key: generated into Secret %s (key %s)", a.Secret.Name, a.Secret.Key)
	case AuthLive:
		return fmt.Sprintf("auth: vLLM requires the API key it already has: Secret %s (key %s), kept", a.Secret.Name, a.Secret.Key)
	case AuthDefault:
		return fmt.Sprintf("auth: vLLM requires an API key from Secret %s (key %s), generated when the server is applied if it does not exist", a.Secret.Name, a.Secret.Key)
	}
	return fmt.Sprintf("auth: vLLM requires the API key in Secret %s (key %s)", a.Secret.Name, a.Secret.Key)
}

// DefaultAuth is the offline answer (render, client dry run): the recipe's key, else none when
// allowed, else NAME-api-key. It sets s.APIKeySecret to match.
func DefaultAuth(s *recipe.ServingSpec, name string, allowUnauthenticated bool) Auth {
	switch {
	case s.APIKeySecret != nil:
		return Auth{Source: AuthRecipe, Secret: s.APIKeySecret}
	case allowUnauthenticated:
		return Auth{Source: AuthNone}
	}
	s.APIKeySecret = &recipe.SecretRef{Name: APIKeySecretName(name), Key: APIKeySecretKey}
	return Auth{Source: AuthDefault, Secret: s.APIKeySecret}
}

// AuthConflictError: the recipe or a flag names a key and AllowUnauthenticated was asked too.
type AuthConflictError struct{ Secret string }

func (e *AuthConflictError) Error() string {
	return fmt.Sprintf("an API key (Secret %s) and no authentication were both asked for", e.Secret)
}

// BadKeyError: the Secret that should hold the API key exists, but its key is missing, empty or
// padded with whitespace. vLLM drops an empty key (api_server: `[key for key in (args.api_key
// or [envs.VLLM_API_KEY]) if key]`) and then installs no authentication at all: the server
// would answer anyone while ain reported it guarded.
type BadKeyError struct {
	Secret, Key, Why string
}

func (e *BadKeyError) Error() string {
	return fmt.Sprintf("Secret %s key %s %s: vLLM would run without authentication", e.Secret, e.Key, e.Why)
}

// ResolveAuth decides, against the cluster, how the model server name is guarded, and sets
// s.APIKeySecret to match: the recipe's key (its value read back when the Secret exists); else,
// unless allowUnauthenticated, the key the live server already uses, then ain's own
// NAME-api-key Secret if it exists, else a new key from random (crypto/rand.Reader when nil).
func (c *Cluster) ResolveAuth(ctx context.Context, name string, s *recipe.ServingSpec, allowUnauthenticated bool, random io.Reader) (Auth, error) {
	if s.APIKeySecret != nil {
		if allowUnauthenticated {
			return Auth{}, &AuthConflictError{Secret: s.APIKeySecret.Name}
		}
		a := Auth{Source: AuthRecipe, Secret: s.APIKeySecret}
		if v, rv, ok, err := c.secretValue(ctx, s.APIKeySecret); err != nil {
			return Auth{}, err
		} else if ok {
			a.Key, a.Version = v, rv
		}
		return a, nil
	}
	own := APIKeySecretName(name)
	if allowUnauthenticated {
		a := Auth{Source: AuthNone}
		sec, err := c.Kube.CoreV1().Secrets(c.Namespace).Get(ctx, own, metav1.GetOptions{})
		switch {
		case err == nil && sec.Labels[jobs.LabelManagedBy] == jobs.ManagedByAin:
			a.Dropped = own
		case err != nil && !apierrors.IsNotFound(err):
			return Auth{}, err
		}
		return a, nil
	}
	live, err := c.liveAPIKeyRef(ctx, name)
	if err != nil {
		return Auth{}, err
	}
	for _, ref := range []*recipe.SecretRef{live, {Name: own, Key: APIKeySecretKey}} {
		if ref == nil {
			continue
		}
		v, rv, ok, err := c.secretValue(ctx, ref)
		if err != nil {
			return Auth{}, err
		}
		if ok {
			s.APIKeySecret = ref
			return Auth{Source: AuthLive, Secret: ref, Key: v, Version: rv}, nil
		}
	}
	key, err := NewAPIKey(random)
	if err != nil {
		return Auth{}, err
	}
	s.APIKeySecret = &recipe.SecretRef{Name: own, Key: APIKeySecretKey}
	return Auth{Source: AuthGenerated, Secret: s.APIKeySecret, Generated: key, Key: key}, nil
}

// NewAPIKey is a key of 32 random bytes (256 bits), URL-safe base64 after an "ain-" prefix,
// which an HTTP Authorization header carries as is.
func NewAPIKey(random io.Reader) (string, error) {
	if random == nil {
		random = rand.Reader
	}
	b := make([]byte, 32)
	if _, err := io.ReadFull(random, b); err != nil {
		return "", fmt.Errorf("generating an API key: %w", err)
	}
	return "ain-" + base64.RawURLEncoding.EncodeToString(b), nil
}

// secretValue reads a Secret key and the Secret's resourceVersion; ok is false when the
// Secret does not exist; a Secret without a usable key is a *BadKeyError.
func (c *Cluster) secretValue(ctx context.Context, ref *recipe.SecretRef) (value, version string, ok bool, err error) {
	sec, err := c.Kube.CoreV1().Secrets(c.Namespace).Get(ctx, ref.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return "", "", false, nil
	}
	if err != nil {
		return "", "", false, err
	}
	v, found := sec.Data[ref.Key]
	switch {
	case !found:
		return "", "", false, &BadKeyError{Secret: ref.Name, Key: ref.Key, Why: "does not exist"}
	case strings.TrimSpace(string(v)) == "":
		return "", "", false, &BadKeyError{Secret: ref.Name, Key: ref.Key, Why: "is empty"}
	case strings.TrimSpace(string(v)) != string(v):
		// A key written with `echo` carries a newline that no client sends.
		return "", "", false, &BadKeyError{Secret: ref.Name, Key: ref.Key, Why: "has leading or trailing whitespace (a newline from echo?)"}
	}
	return string(v), sec.ResourceVersion, true, nil
}

// liveAPIKeyRef is the Secret key the running server's Deployments read VLLM_API_KEY from
// (nil when none does).
func (c *Cluster) liveAPIKeyRef(ctx context.Context, name string) (*recipe.SecretRef, error) {
	deps, err := c.Kube.AppsV1().Deployments(c.Namespace).List(ctx, metav1.ListOptions{LabelSelector: runSelector(name)})
	if err != nil {
		return nil, err
	}
	for _, d := range deps.Items {
		for _, ctr := range d.Spec.Template.Spec.Containers {
			if ref := apiKeyRef(ctr.Env); ref != nil {
				return ref, nil
			}
		}
	}
	return nil, nil
}

func apiKeyRef(env []corev1.EnvVar) *recipe.SecretRef {
	for _, e := range env {
		if e.Name == envAPIKey && e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil {
			return &recipe.SecretRef{Name: e.ValueFrom.SecretKeyRef.Name, Key: e.ValueFrom.SecretKeyRef.Key}
		}
	}
	return nil
}

// APIKey is the key the model server name requires, read from the Secret its Deployments name
// (ok false when it requires none, or the Secret cannot be read): what ain's clients send when
// they found the server themselves and were given no key.
func (c *Cluster) APIKey(ctx context.Context, name string) (string, bool, error) {
	ref, err := c.liveAPIKeyRef(ctx, name)
	if err != nil || ref == nil {
		return "", false, err
	}
	v, _, ok, err := c.secretValue(ctx, ref)
	return v, ok, err
}

// DeleteAPIKeySecret deletes ain's own API-key Secret of a server (Auth.Dropped).
func (c *Cluster) DeleteAPIKeySecret(ctx context.Context, secret string) error {
	err := c.Kube.CoreV1().Secrets(c.Namespace).Delete(ctx, secret, metav1.DeleteOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}
