package vllm

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/ain-hpc/ain/pkg/openaiclient"
	"github.com/ain-hpc/ain/pkg/openaiclient/clienttest"
	"github.com/ain-hpc/ain/pkg/recipe"
	"github.com/ain-hpc/ain/pkg/vllm/vllmsim"
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

// The self-signed certificate `ain serve` puts in NAME-tls serves HTTPS for the host, a client
// trusting the Secret's ca.crt verifies it, and --connect-to reaches the server by address
// while verifying the host name (an ingress whose DNS record is not there yet).
func TestSelfSignedTLSAndConnectTo(t *testing.T) {
	now := time.Now()
	sec, err := SelfSignedTLS("qwen-tls", "llm", "llm.ain.test", nil, now)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := CheckTLSSecret(sec, "llm.ain.test", now); err != nil {
		t.Fatal(err)
	}
	var tp *TLSProblem
	if _, err := CheckTLSSecret(sec, "other.example", now); !errors.As(err, &tp) || !strings.Contains(err.Error(), "does not cover host other.example") {
		t.Fatalf("wrong host: %v", err)
	}
	if _, err := CheckTLSSecret(sec, "llm.ain.test", now.Add(400*24*time.Hour)); err == nil || !strings.Contains(err.Error(), "expires") {
		t.Fatalf("expired: %v", err)
	}
	opaque := sec.DeepCopy()
	opaque.Type = corev1.SecretTypeOpaque
	if _, err := CheckTLSSecret(opaque, "", now); err == nil || !strings.Contains(err.Error(), "kubernetes.io/tls") {
		t.Fatalf("opaque: %v", err)
	}
	cert, err := tls.X509KeyPair(sec.Data["tls.crt"], sec.Data["tls.key"])
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewUnstartedServer(vllmsim.NewServer(vllmsim.Options{}))
	ts.TLS = &tls.Config{Certificates: []tls.Certificate{cert}}
	ts.Config.ErrorLog = log.New(io.Discard, "", 0)
	ts.StartTLS()
	defer ts.Close()
	addr := strings.TrimPrefix(ts.URL, "https://")
	_, port, _ := net.SplitHostPort(addr)
	c := clienttest.NewClient(t, openaiclient.Options{Endpoint: "https://llm.ain.test:" + port, ConnectTo: addr, CAPEM: sec.Data["ca.crt"], CAName: "the ca.crt of Secret qwen-tls"})
	if _, err := c.Models(context.Background()); err != nil {
		t.Fatalf("self-signed via connect-to: %v", err)
	}
	// Without the CA: an unknown authority, explained with the CAs that were trusted.
	c = clienttest.NewClient(t, openaiclient.Options{Endpoint: "https://llm.ain.test:" + port, ConnectTo: addr})
	if _, err := c.Models(context.Background()); !strings.Contains(fmt.Sprint(err), "not signed by a CA trusted here") || !strings.Contains(fmt.Sprint(err), "--connect-to") {
		t.Fatalf("no CA: %v", err)
	}
}
