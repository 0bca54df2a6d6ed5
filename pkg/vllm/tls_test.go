package vllm

import (
	"context"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/ain-hpc/ain/pkg/recipe"
)

func leafOf(t *testing.T, s *corev1.Secret) *x509.Certificate {
	t.Helper()
	b, _ := pem.Decode(s.Data[corev1.TLSCertKey])
	leaf, err := x509.ParseCertificate(b.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	return leaf
}

// The self-signed certificate names what clients connect to: the host, else the address the
// controller published for the Ingress (verifiable by IP), else nothing (For says so). A
// tlsSecret the recipe names that does not exist is an error; only NAME-tls is created.
func TestEnsureTLSNamesAndMissingSecret(t *testing.T) {
	ctx, now := context.Background(), time.Now()
	ing := &networkingv1.Ingress{ObjectMeta: metav1.ObjectMeta{Name: "qwen", Namespace: "llm"},
		Status: networkingv1.IngressStatus{LoadBalancer: networkingv1.IngressLoadBalancerStatus{Ingress: []networkingv1.IngressLoadBalancerIngress{{IP: "203.0.113.7"}}}}}
	fc := fake.NewClientset(ing)
	cl := &Cluster{Kube: fc, Namespace: "llm"}
	get := func(name string) *corev1.Secret {
		s, err := fc.CoreV1().Secrets("llm").Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}

	out, err := cl.EnsureTLS(ctx, &recipe.ServingIngress{Host: "llm.example.com"}, "named", nil, now, false)
	if err != nil || out.For != "llm.example.com" || leafOf(t, get("named-tls")).VerifyHostname("llm.example.com") != nil {
		t.Fatalf("with a host: %+v %v", out, err)
	}
	out, err = cl.EnsureTLS(ctx, &recipe.ServingIngress{}, "qwen", nil, now, false)
	if err != nil || out.For != "203.0.113.7" || leafOf(t, get("qwen-tls")).VerifyHostname("203.0.113.7") != nil {
		t.Fatalf("without a host, with an address: %+v %v", out, err)
	}
	out, err = cl.EnsureTLS(ctx, &recipe.ServingIngress{}, "fresh", nil, now, false)
	if err != nil || !out.Created || out.For != "" {
		t.Fatalf("without a host or an address: %+v %v", out, err)
	}

	_, err = cl.EnsureTLS(ctx, &recipe.ServingIngress{TLSSecret: "qwen-tsl"}, "qwen", nil, now, false)
	var tp *TLSProblem
	if !errors.As(err, &tp) || tp.Secret != "qwen-tsl" || !strings.Contains(err.Error(), "does not exist") {
		t.Fatalf("a missing tlsSecret: %v", err)
	}
	if _, err := fc.CoreV1().Secrets("llm").Get(ctx, "qwen-tsl", metav1.GetOptions{}); err == nil {
		t.Fatal("a self-signed Secret was created under the recipe's misspelt name")
	}
	// Naming the default explicitly is still ain's own name.
	if out, err := cl.EnsureTLS(ctx, &recipe.ServingIngress{TLSSecret: "other-tls"}, "other", nil, now, true); err != nil || !out.Created {
		t.Fatalf("explicit default name: %+v %v", out, err)
	}
}
