package sandbox

import (
	"crypto/tls"
	"crypto/x509"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Two sandboxes share the operator's fixed webhook cert folder; a folder made by another
// program is detected and reported, never overwritten; the last sandbox down removes it.
func TestWebhookCertSharing(t *testing.T) {
	tempWebhookBase(t)

	// Sandbox b "runs" an operator: this test process stands in for it.
	bDir := t.TempDir()
	exe, _ := os.Executable()
	if err := saveState(&State{Dir: bDir, Procs: []Proc{{Name: "training-operator", PID: os.Getpid(), Binary: exe}}}); err != nil {
		t.Fatal(err)
	}
	a, reason := claimWebhookCerts("/state/a")
	if a == nil {
		t.Fatalf("first claim: %s", reason)
	}
	b, reason := claimWebhookCerts(bDir)
	if b == nil || string(b.TLSCert) != string(a.TLSCert) || string(b.CAKey) != string(a.CAKey) {
		t.Fatalf("second claim should share the certificate: %s", reason)
	}
	// What the rotator checks: a PKCS#1 CA key valid for training-operator-ca, a serving cert for
	// the service name and 127.0.0.1 signed by it.
	if !strings.Contains(string(a.CAKey), "BEGIN RSA PRIVATE KEY") {
		t.Error("CA key is not PKCS#1")
	}
	kp, err := tls.X509KeyPair(a.TLSCert, a.TLSKey)
	if err != nil {
		t.Fatal(err)
	}
	leaf, _ := x509.ParseCertificate(kp.Certificate[0])
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(a.CACert)
	for _, name := range []string{webhookDNS, "127.0.0.1"} {
		if _, err := leaf.Verify(x509.VerifyOptions{Roots: pool, DNSName: name}); err != nil {
			t.Errorf("serving cert for %s: %v", name, err)
		}
	}
	releaseWebhookCerts("/state/a")
	if _, err := os.Stat(filepath.Join(webhookCertDir(), "tls.crt")); err != nil {
		t.Fatalf("removed while sandbox b still serves with it: %v", err)
	}
	releaseWebhookCerts(bDir)
	if _, err := os.Stat(webhookBaseDir); !os.IsNotExist(err) {
		t.Errorf("folder left after the last sandbox: %v", err)
	}
}

func TestWebhookCertLastReleaseRemoves(t *testing.T) {
	tempWebhookBase(t)
	if wc, reason := claimWebhookCerts("/state/a"); wc == nil {
		t.Fatal(reason)
	}
	releaseWebhookCerts("/state/a")
	if _, err := os.Stat(webhookBaseDir); !os.IsNotExist(err) {
		t.Errorf("folder left after the last sandbox: %v", err)
	}
}

func TestWebhookCertForeignFolder(t *testing.T) {
	tempWebhookBase(t)
	if err := os.MkdirAll(webhookCertDir(), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(webhookCertDir(), "tls.crt"), []byte("someone else's"), 0o600); err != nil {
		t.Fatal(err)
	}
	wc, reason := claimWebhookCerts("/state/a")
	if wc != nil || !strings.Contains(reason, "another program") {
		t.Fatalf("want the foreign folder reported, got %v %q", wc, reason)
	}
	releaseWebhookCerts("/state/a")
	if data, _ := os.ReadFile(filepath.Join(webhookCertDir(), "tls.crt")); string(data) != "someone else's" {
		t.Error("a foreign certificate was touched")
	}
}

// tempWebhookBase points the shared webhook folder at a temporary one for the test.
func tempWebhookBase(t *testing.T) {
	old := webhookBaseDir
	webhookBaseDir = filepath.Join(t.TempDir(), "k8s-webhook-server")
	t.Cleanup(func() { webhookBaseDir = old })
}
