package sandbox

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// keyPair is a certificate and its key, PEM encoded.
type keyPair struct {
	Cert, Key []byte
	cert      *x509.Certificate
	key       *rsa.PrivateKey
}

const certValidity = 10 * 365 * 24 * time.Hour

func newKey() (*rsa.PrivateKey, error) { return rsa.GenerateKey(rand.Reader, 2048) }

func serial() *big.Int {
	n, _ := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	return n
}

// newCA makes a self-signed CA whose key is PKCS#1 (the training-operator's cert rotator
// cannot parse PKCS#8) and which carries its own name as a DNS SAN, as the rotator expects.
func newCA(cn string) (*keyPair, error) {
	return issue(nil, &x509.Certificate{
		Subject:               pkix.Name{CommonName: cn, Organization: []string{"ain-sandbox"}},
		DNSNames:              []string{cn},
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		BasicConstraintsValid: true,
		IsCA:                  true,
	})
}

// newServing signs a serving (and client) certificate for the given names with ca.
func newServing(ca *keyPair, cn string, dns []string, ips []net.IP, org []string) (*keyPair, error) {
	return issue(ca, &x509.Certificate{
		Subject:     pkix.Name{CommonName: cn, Organization: org},
		DNSNames:    dns,
		IPAddresses: ips,
		KeyUsage:    x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
	})
}

// issue makes a new key and the certificate tmpl describes for it, signed by ca (nil: by the
// key itself), with a random serial, valid from an hour ago (clock skew) for certValidity.
func issue(ca *keyPair, tmpl *x509.Certificate) (*keyPair, error) {
	key, err := newKey()
	if err != nil {
		return nil, err
	}
	tmpl.SerialNumber = serial()
	tmpl.NotBefore = time.Now().Add(-time.Hour)
	tmpl.NotAfter = tmpl.NotBefore.Add(certValidity)
	parent, signer := tmpl, key
	if ca != nil {
		parent, signer = ca.cert, ca.key
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, &key.PublicKey, signer)
	if err != nil {
		return nil, err
	}
	cert, _ := x509.ParseCertificate(der)
	return &keyPair{Cert: pemCert(der), Key: pemKey(key), cert: cert, key: key}, nil
}

func pemCert(der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

func pemKey(k *rsa.PrivateKey) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(k)})
}

func loadKeyPair(certPath, keyPath string) (*keyPair, error) {
	c, err := os.ReadFile(certPath)
	if err != nil {
		return nil, err
	}
	k, err := os.ReadFile(keyPath)
	if err != nil {
		return nil, err
	}
	cb, _ := pem.Decode(c)
	kb, _ := pem.Decode(k)
	if cb == nil || kb == nil {
		return nil, fmt.Errorf("%s/%s: not PEM", certPath, keyPath)
	}
	cert, err := x509.ParseCertificate(cb.Bytes)
	if err != nil {
		return nil, err
	}
	key, err := x509.ParsePKCS1PrivateKey(kb.Bytes)
	if err != nil {
		return nil, err
	}
	return &keyPair{Cert: c, Key: k, cert: cert, key: key}, nil
}

func (kp *keyPair) write(dir, name string) error {
	if err := os.WriteFile(filepath.Join(dir, name+".crt"), kp.Cert, 0o644); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, name+".key"), kp.Key, 0o600)
}

// pki is the sandbox's own certificate authority and what it signed.
type pki struct {
	dir       string
	ca        *keyPair
	apiserver *keyPair
	kwok      *keyPair
	// webhook serves the current stack's admission webhooks on 127.0.0.1 (see prepareCurrent).
	webhook *keyPair
}

func (p pki) path(name string) string { return filepath.Join(p.dir, name) }

// ensurePKI loads or creates the sandbox CA, the API server and kwok serving certs and the
// service-account signing key in dir.
func ensurePKI(dir string) (*pki, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	p := &pki{dir: dir}
	ca, err := loadKeyPair(p.path("ca.crt"), p.path("ca.key"))
	if errors.Is(err, os.ErrNotExist) {
		if ca, err = newCA("ain-sandbox-ca"); err != nil {
			return nil, err
		}
		if err := ca.write(dir, "ca"); err != nil {
			return nil, err
		}
	} else if err != nil {
		return nil, fmt.Errorf("sandbox CA: %w", err)
	}
	p.ca = ca
	loopback := []net.IP{net.ParseIP("127.0.0.1")}
	for _, s := range []struct {
		name string
		dst  **keyPair
		dns  []string
	}{
		{"apiserver", &p.apiserver, []string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc", "kubernetes.default.svc.cluster.local"}},
		{"kwok", &p.kwok, []string{"localhost"}},
		{"webhook", &p.webhook, []string{"localhost"}},
	} {
		kp, err := loadKeyPair(p.path(s.name+".crt"), p.path(s.name+".key"))
		if err != nil {
			if kp, err = newServing(ca, s.name, s.dns, loopback, nil); err != nil {
				return nil, err
			}
			if err := kp.write(dir, s.name); err != nil {
				return nil, err
			}
		}
		*s.dst = kp
	}
	if _, err := os.Stat(p.path("sa.key")); errors.Is(err, os.ErrNotExist) {
		key, err := newKey()
		if err != nil {
			return nil, err
		}
		pub, err := x509.MarshalPKIXPublicKey(&key.PublicKey)
		if err != nil {
			return nil, err
		}
		if err := os.WriteFile(p.path("sa.key"), pemKey(key), 0o600); err != nil {
			return nil, err
		}
		if err := os.WriteFile(p.path("sa.pub"), pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pub}), 0o644); err != nil {
			return nil, err
		}
	}
	return p, nil
}
