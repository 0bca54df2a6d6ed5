package vllm

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/ain-hpc/ain/pkg/recipe"
)

// The entry's TLS Secret: the Ingress's, or the one the HTTPS listener of the Gateway ain
// creates names. An Ingress naming a Secret that is missing, of the wrong type or with a
// certificate for another host does not fail: ingress-nginx serves its own "Kubernetes Ingress
// Controller Fake Certificate" instead, and clients then report an unknown CA (a Gateway's
// listener is reported not programmed, ResolvedRefs False, which clients never see). ain
// checks the Secret before it applies the entry so that the mistake is named where it is made.

// TLSProblem says what is wrong with an Ingress's TLS Secret.
type TLSProblem struct {
	Secret string
	Reason string
}

func (e *TLSProblem) Error() string {
	return fmt.Sprintf("TLS Secret %s: %s", e.Secret, e.Reason)
}

// CheckTLSSecret checks that s can serve HTTPS for host at time now: type kubernetes.io/tls,
// tls.crt and tls.key present, a parseable leaf certificate that is valid now (and for the
// next day) and covers host (when host is set). It returns the leaf certificate.
func CheckTLSSecret(s *corev1.Secret, host string, now time.Time) (*x509.Certificate, error) {
	bad := func(format string, args ...any) error {
		return &TLSProblem{Secret: s.Name, Reason: fmt.Sprintf(format, args...)}
	}
	if s.Type != corev1.SecretTypeTLS {
		return nil, bad("type %q, want %s (kubectl create secret tls %s --cert=... --key=...)", s.Type, corev1.SecretTypeTLS, s.Name)
	}
	crt, key := s.Data[corev1.TLSCertKey], s.Data[corev1.TLSPrivateKeyKey]
	if len(crt) == 0 || len(key) == 0 {
		return nil, bad("tls.crt or tls.key is empty")
	}
	block, _ := pem.Decode(crt)
	if block == nil || block.Type != "CERTIFICATE" {
		return nil, bad("tls.crt holds no PEM certificate")
	}
	leaf, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		return nil, bad("tls.crt: %v", err)
	}
	if now.Before(leaf.NotBefore) {
		return nil, bad("the certificate is valid only from %s", leaf.NotBefore.UTC().Format(time.RFC3339))
	}
	if !now.Add(24 * time.Hour).Before(leaf.NotAfter) {
		return nil, bad("the certificate expires %s: renew it", leaf.NotAfter.UTC().Format(time.RFC3339))
	}
	if host != "" {
		if err := leaf.VerifyHostname(host); err != nil {
			return nil, bad("the certificate does not cover host %s (%v)", host, err)
		}
	}
	return leaf, nil
}

// SelfSignedTLS makes a private CA and a serving certificate for host (a DNS name, or an IP
// address: the ingress controller's, for a rule without a host) signed by it, valid a year
// from now. The name is the certificate's subjectAltName: clients (Go's crypto/x509 among
// them) ignore the common name, so a certificate without one verifies for nothing. It returns a kubernetes.io/tls Secret holding tls.crt, tls.key and the CA's
// certificate as ca.crt (clients trust it with --ca-file; ain reads it from the Secret). The
// CA's private key is not kept: nothing else can be signed with it.
func SelfSignedTLS(name, namespace, host string, labels map[string]string, now time.Time) (*corev1.Secret, error) {
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	serial := func() *big.Int {
		n, _ := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 120))
		return n
	}
	notBefore, notAfter := now.Add(-time.Hour), now.Add(365*24*time.Hour)
	caTmpl := &x509.Certificate{
		SerialNumber:          serial(),
		Subject:               pkix.Name{CommonName: "ain self-signed CA for " + namespace + "/" + name, Organization: []string{"ain"}},
		NotBefore:             notBefore,
		NotAfter:              notAfter,
		IsCA:                  true,
		BasicConstraintsValid: true,
		MaxPathLenZero:        true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return nil, err
	}
	ca, _ := x509.ParseCertificate(caDER)
	leafKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	cn := host
	if cn == "" {
		cn = name + "." + namespace
	}
	leafTmpl := &x509.Certificate{
		SerialNumber: serial(),
		Subject:      pkix.Name{CommonName: cn, Organization: []string{"ain"}},
		NotBefore:    notBefore,
		NotAfter:     notAfter,
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	if ip := net.ParseIP(host); ip != nil {
		leafTmpl.IPAddresses = []net.IP{ip}
	} else if host != "" {
		leafTmpl.DNSNames = []string{host}
	}
	leafDER, err := x509.CreateCertificate(rand.Reader, leafTmpl, ca, &leafKey.PublicKey, caKey)
	if err != nil {
		return nil, err
	}
	keyDER, err := x509.MarshalECPrivateKey(leafKey)
	if err != nil {
		return nil, err
	}
	return &corev1.Secret{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace, Labels: labels},
		Type:       corev1.SecretTypeTLS,
		Data: map[string][]byte{
			corev1.TLSCertKey:              pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: leafDER}),
			corev1.TLSPrivateKeyKey:        pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}),
			corev1.ServiceAccountRootCAKey: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}),
		},
	}, nil
}

// TLSOutcome is what EnsureTLS found or did.
type TLSOutcome struct {
	Secret string
	// Created is set when ain created a self-signed certificate.
	Created bool
	// For is the name or address the created certificate is for ("" when none was known: a
	// rule without a host before the controller published an address; no client can verify it).
	For string
	// Issuer is set when cert-manager issues the certificate (the Secret is its business).
	Issuer string
	// CA is the PEM CA certificate from the Secret's ca.crt, when it has one.
	CA []byte
}

// EnsureTLS checks the TLS Secret of the Ingress of deployment name, or creates a self-signed
// one when it is missing (labels mark it as ain's, so `ain serve delete` removes it). Only the
// default name NAME-tls is created: a spec.ingress.tlsSecret that does not exist (a typo, a
// Secret in another namespace) is a *TLSProblem, not silently replaced. The certificate is for
// the host; without one, for the address the controller published for the Ingress when it did
// (a re-run after deleting the Secret), else for nothing (For is empty). With a cert-manager
// issuer it only reports: cert-manager creates and renews the Secret. dryRun checks without
// creating.
func (c *Cluster) EnsureTLS(ctx context.Context, in *recipe.ServingIngress, name string, labels map[string]string, now time.Time, dryRun bool) (*TLSOutcome, error) {
	return c.ensureTLS(ctx, tlsEntry{secret: TLSSecretName(in, name), host: in.Host, issuer: in.ClusterIssuer, field: "spec.ingress.tlsSecret",
		address: func(ctx context.Context) string { return c.ingressAddress(ctx, name) }}, name, labels, now, dryRun)
}

// EnsureGatewayTLS is EnsureTLS for the Gateway ain creates for deployment name
// (spec.gateway.className): the Secret its HTTPS listener names, for the host; without one,
// for the address the Gateway published, if any.
func (c *Cluster) EnsureGatewayTLS(ctx context.Context, g *recipe.ServingGateway, name string, labels map[string]string, now time.Time, dryRun bool) (*TLSOutcome, error) {
	return c.ensureTLS(ctx, tlsEntry{secret: GatewayTLSSecretName(g, name), host: g.Host, issuer: g.ClusterIssuer, field: "spec.gateway.tlsSecret",
		address: func(ctx context.Context) string { return c.gatewayAddress(ctx, name) }}, name, labels, now, dryRun)
}

// tlsEntry is what an entry's certificate is for.
type tlsEntry struct {
	secret, host, issuer string
	field                string // the recipe field that names the Secret, for messages
	// address is the entry's published address, for a certificate without a host.
	address func(context.Context) string
}

func (c *Cluster) ensureTLS(ctx context.Context, e tlsEntry, name string, labels map[string]string, now time.Time, dryRun bool) (*TLSOutcome, error) {
	secret, host, issuer := e.secret, e.host, e.issuer
	out := &TLSOutcome{Secret: secret, Issuer: issuer}
	s, err := c.Kube.CoreV1().Secrets(c.Namespace).Get(ctx, secret, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err) && issuer != "":
		return out, nil
	case apierrors.IsNotFound(err) && secret != name+"-tls":
		return nil, &TLSProblem{Secret: secret, Reason: fmt.Sprintf("named by %s, it does not exist in namespace %s (only the default %s-tls is created, self-signed)", e.field, c.Namespace, name)}
	case apierrors.IsNotFound(err):
		if host == "" {
			host = e.address(ctx)
		}
		out.For = host
		if dryRun {
			out.Created = true
			return out, nil
		}
		ns, err := SelfSignedTLS(secret, c.Namespace, host, labels, now)
		if err != nil {
			return nil, fmt.Errorf("making a self-signed certificate: %w", err)
		}
		if _, err := c.Kube.CoreV1().Secrets(c.Namespace).Create(ctx, ns, metav1.CreateOptions{FieldManager: "ain"}); err != nil {
			return nil, fmt.Errorf("creating TLS Secret %s: %w", secret, err)
		}
		out.Created, out.CA = true, ns.Data[corev1.ServiceAccountRootCAKey]
		return out, nil
	case err != nil:
		return nil, fmt.Errorf("reading TLS Secret %s: %w", secret, err)
	}
	if _, err := CheckTLSSecret(s, host, now); err != nil {
		var tp *TLSProblem
		if issuer != "" && errors.As(err, &tp) {
			// cert-manager may be about to renew or reissue it: report, do not refuse.
			return out, nil
		}
		return nil, err
	}
	out.CA = s.Data[corev1.ServiceAccountRootCAKey]
	return out, nil
}

// ingressAddress is the address (IP or hostname, without a port) the controller published for
// the Ingress name, "" when it has none yet or the Ingress cannot be read.
func (c *Cluster) ingressAddress(ctx context.Context, name string) string {
	in, err := c.Kube.NetworkingV1().Ingresses(c.Namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return ""
	}
	for _, lb := range in.Status.LoadBalancer.Ingress {
		if lb.Hostname != "" {
			return lb.Hostname
		}
		if lb.IP != "" {
			return lb.IP
		}
	}
	return ""
}

// gatewayAddress is the first address the Gateway name published (IP or hostname), "" when
// it has none yet or cannot be read.
func (c *Cluster) gatewayAddress(ctx context.Context, name string) string {
	if c.Dynamic == nil {
		return ""
	}
	gw, err := c.getGateway(ctx, c.Namespace, name)
	if err != nil {
		return ""
	}
	for _, a := range gw.Status.Addresses {
		if a.Value != "" && (a.Type == nil || *a.Type == gatewayv1.IPAddressType || *a.Type == gatewayv1.HostnameAddressType) {
			return a.Value
		}
	}
	return ""
}

// IngressCA returns the PEM CA a client should trust for the ingress of deployment name:
// the ca.crt of its TLS Secret, when that Secret was created by ain (a private CA nothing
// else knows). Nil when there is none or it cannot be read (no RBAC on Secrets).
func (c *Cluster) IngressCA(ctx context.Context, secret string) []byte {
	s, err := c.Kube.CoreV1().Secrets(c.Namespace).Get(ctx, secret, metav1.GetOptions{})
	if err != nil {
		return nil
	}
	return s.Data[corev1.ServiceAccountRootCAKey]
}
