package vllm

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/ain-hpc/ain/pkg/jobs"
	"github.com/ain-hpc/ain/pkg/profile"
	"github.com/ain-hpc/ain/pkg/recipe"
)

// authCluster is a fake cluster in namespace llm holding objs (a narrow unit test: the
// re-run through a real API server is in the integration tests).
func authCluster(objs ...runtime.Object) *Cluster {
	return &Cluster{Kube: fake.NewClientset(objs...), Namespace: "llm"}
}

func keySecret(name, key, value string, ours bool) *corev1.Secret {
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "llm"}, Data: map[string][]byte{key: []byte(value)}}
	if ours {
		s.Labels = map[string]string{jobs.LabelManagedBy: jobs.ManagedByAin, jobs.LabelRun: "qwen"}
	}
	return s
}

// liveDeployment is a running server's Deployment whose vLLM reads its key from secret.
func liveDeployment(secret string) *appsv1.Deployment {
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "qwen-0", Namespace: "llm", Labels: Selector("qwen")}}
	d.Spec.Template.Spec.Containers = []corev1.Container{{Name: ContainerName, Env: []corev1.EnvVar{{Name: "VLLM_API_KEY",
		ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: secret}, Key: "k"}}}}}}
	return d
}

func TestResolveAuth(t *testing.T) {
	ctx := context.Background()
	random := bytes.NewReader(bytes.Repeat([]byte{7}, 64))
	cases := []struct {
		name    string
		objs    []runtime.Object
		spec    *recipe.SecretRef
		allow   bool
		source  AuthSource
		secret  string
		key     string
		dropped string
	}{
		{name: "first run: a key is generated", source: AuthGenerated, secret: "qwen-api-key", key: "ain-"},
		{name: "re-run: ain's Secret is kept", objs: []runtime.Object{keySecret("qwen-api-key", APIKeySecretKey, "old-key", true)},
			source: AuthLive, secret: "qwen-api-key", key: "old-key"},
		{name: "re-run: the live server's own Secret is kept", objs: []runtime.Object{liveDeployment("mine"), keySecret("mine", "k", "their-key", false)},
			source: AuthLive, secret: "mine", key: "their-key"},
		{name: "live reference to a deleted Secret: ain's own, else a new key", objs: []runtime.Object{liveDeployment("gone")},
			source: AuthGenerated, secret: "qwen-api-key", key: "ain-"},
		{name: "recipe key", spec: &recipe.SecretRef{Name: "mine", Key: "k"}, objs: []runtime.Object{keySecret("mine", "k", "recipe-key-value", false)},
			source: AuthRecipe, secret: "mine", key: "recipe-key-value"},
		{name: "explicitly unauthenticated drops ain's Secret", allow: true, objs: []runtime.Object{keySecret("qwen-api-key", APIKeySecretKey, "old", true)},
			source: AuthNone, dropped: "qwen-api-key"},
		{name: "explicitly unauthenticated keeps a Secret ain did not make", allow: true, objs: []runtime.Object{keySecret("qwen-api-key", APIKeySecretKey, "old", false)},
			source: AuthNone},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := &recipe.ServingSpec{APIKeySecret: c.spec}
			a, err := authCluster(c.objs...).ResolveAuth(ctx, "qwen", s, c.allow, random)
			if err != nil {
				t.Fatal(err)
			}
			if a.Source != c.source || a.Dropped != c.dropped {
				t.Fatalf("auth %+v, want source %s dropped %q", a, c.source, c.dropped)
			}
			if c.source == AuthNone {
				if s.APIKeySecret != nil || a.Secret != nil {
					t.Errorf("unauthenticated, yet a key: %+v", s.APIKeySecret)
				}
				return
			}
			if s.APIKeySecret == nil || s.APIKeySecret.Name != c.secret || a.Secret.Name != c.secret {
				t.Errorf("the Deployment would read %+v, want Secret %s", s.APIKeySecret, c.secret)
			}
			if !strings.HasPrefix(a.Key, c.key) {
				t.Errorf("key %q, want %q...", a.Key, c.key)
			}
			if (a.Generated != "") != (c.source == AuthGenerated) || strings.Contains(a.Describe(), a.Key) {
				t.Errorf("generated %q, describe %q", a.Generated, a.Describe())
			}
		})
	}
	_, err := authCluster().ResolveAuth(ctx, "qwen", &recipe.ServingSpec{APIKeySecret: &recipe.SecretRef{Name: "mine", Key: "k"}}, true, nil)
	var ce *AuthConflictError
	if !errors.As(err, &ce) {
		t.Errorf("a key and --allow-unauthenticated: %v", err)
	}
}

// Offline (render, client dry run): the Deployment reads NAME-api-key unless the user opted out.
func TestDefaultAuthRendered(t *testing.T) {
	for _, allow := range []bool{false, true} {
		r, err := recipe.Load("vllm", nil)
		if err != nil {
			t.Fatal(err)
		}
		auth := DefaultAuth(r.Serving, "vllm", allow)
		objs, err := BuildObjects(r, profile.Default(), ObjectOptions{})
		if err != nil {
			t.Fatal(err)
		}
		ref := apiKeyRef(objs.Deployments[0].Spec.Template.Spec.Containers[0].Env)
		switch {
		case allow && (ref != nil || auth.Source != AuthNone):
			t.Errorf("--allow-unauthenticated rendered a key %+v", ref)
		case !allow && (ref == nil || ref.Name != "vllm-api-key" || ref.Key != APIKeySecretKey || auth.Source != AuthDefault):
			t.Errorf("default: VLLM_API_KEY from %+v, auth %+v", ref, auth)
		}
	}
}

func TestNewAPIKey(t *testing.T) {
	a, err := NewAPIKey(nil)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := NewAPIKey(nil)
	if a == b || len(a) != len("ain-")+43 || strings.ContainsAny(a, "+/= ") {
		t.Errorf("keys %q %q", a, b)
	}
	if _, err := NewAPIKey(bytes.NewReader(nil)); err == nil {
		t.Error("no randomness, yet a key")
	}
}

// A new version of the key Secret rolls the pods (vLLM reads the key at start); the annotation
// holds the Secret's resourceVersion, never the key.
func TestKeyVersion(t *testing.T) {
	objs := servingObjects(t)
	a := Auth{Source: AuthLive, Secret: &recipe.SecretRef{Name: "vllm-api-key", Key: APIKeySecretKey}, Key: "the-key", Version: "41"}
	sec := &unstructured.Unstructured{}
	sec.SetKind("Secret")
	sec.SetName("vllm-api-key")
	sec.SetResourceVersion("57")
	other := sec.DeepCopy()
	other.SetName("hf-token")
	other.SetResourceVersion("99")
	if v := a.KeyVersion([]*unstructured.Unstructured{other}); v != "41" {
		t.Errorf("not applied this run: version %q, want the one read", v)
	}
	v := a.KeyVersion([]*unstructured.Unstructured{other, sec})
	if v != "57" {
		t.Errorf("applied this run: version %q", v)
	}
	SetKeyVersion(objs.Deployments, v)
	for _, d := range objs.Deployments {
		if got := d.Spec.Template.Annotations[AnnotationAPIKeyVersion]; got != "57" || d.Spec.Template.Annotations[AnnotationModel] == "" {
			t.Errorf("%s: pod template annotations %v", d.Name, d.Spec.Template.Annotations)
		}
	}
	if (Auth{Source: AuthNone}).KeyVersion([]*unstructured.Unstructured{sec}) != "" {
		t.Error("no key, yet a version")
	}
}
