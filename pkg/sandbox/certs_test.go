package sandbox

import (
	"crypto/x509"
	"net"
	"testing"
	"time"
)

// The sandbox's CA signs itself and the serving certificates it issues verify against it for
// their names and addresses, as a server and as a client, valid from before now for years.
func TestIssueChain(t *testing.T) {
	ca, err := newCA("ain-sandbox-ca")
	if err != nil {
		t.Fatal(err)
	}
	if !ca.cert.IsCA || ca.cert.CheckSignatureFrom(ca.cert) != nil || ca.cert.DNSNames[0] != "ain-sandbox-ca" {
		t.Fatalf("CA: isCA %v, self-signed %v, names %v", ca.cert.IsCA, ca.cert.CheckSignatureFrom(ca.cert), ca.cert.DNSNames)
	}
	srv, err := newServing(ca, "kube-apiserver", []string{"localhost", "kubernetes.default.svc"}, []net.IP{net.ParseIP("127.0.0.1")}, []string{"system:masters"})
	if err != nil {
		t.Fatal(err)
	}
	if srv.cert.IsCA || srv.cert.SerialNumber.Cmp(ca.cert.SerialNumber) == 0 {
		t.Errorf("serving cert: isCA %v, serial %v like the CA's", srv.cert.IsCA, srv.cert.SerialNumber)
	}
	roots := x509.NewCertPool()
	roots.AddCert(ca.cert)
	for _, usage := range []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth} {
		for _, name := range []string{"localhost", "kubernetes.default.svc", "127.0.0.1"} {
			if _, err := srv.cert.Verify(x509.VerifyOptions{DNSName: name, Roots: roots, KeyUsages: []x509.ExtKeyUsage{usage}}); err != nil {
				t.Errorf("%s for usage %v: %v", name, usage, err)
			}
		}
	}
	if _, err := srv.cert.Verify(x509.VerifyOptions{DNSName: "elsewhere", Roots: roots}); err == nil {
		t.Error("verified for a name it does not hold")
	}
	now := time.Now()
	if !srv.cert.NotBefore.Before(now) || srv.cert.NotAfter.Sub(now) < 9*365*24*time.Hour {
		t.Errorf("validity %s .. %s", srv.cert.NotBefore, srv.cert.NotAfter)
	}
}
