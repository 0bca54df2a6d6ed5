package kube

import (
	"strings"
	"testing"

	"k8s.io/client-go/rest"
)

// TestIdentity: two users of one cluster get different identities, the same user the same one,
// and the identity never holds the credential.
func TestIdentity(t *testing.T) {
	admin := Identity(&rest.Config{Host: "https://c", BearerToken: "admin-token-CANARY"})
	student := Identity(&rest.Config{Host: "https://c", BearerToken: "student-token"})
	cert := Identity(&rest.Config{Host: "https://c", TLSClientConfig: rest.TLSClientConfig{CertData: []byte("pem")}})
	if admin == student || admin == cert || student == cert || admin == "" {
		t.Fatalf("identities not distinct: %q %q %q", admin, student, cert)
	}
	if admin != Identity(&rest.Config{Host: "https://other", BearerToken: "admin-token-CANARY"}) {
		t.Error("identity depends on more than the credentials")
	}
	if strings.Contains(admin, "CANARY") {
		t.Error("identity holds the token")
	}
}
