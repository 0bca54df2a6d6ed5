package preflight

import (
	"testing"

	"github.com/ain-hpc/ain/pkg/profile"
)

// TestCacheKeyPerUser: one cluster, namespace and profile but two users are two cache entries,
// so a student is never shown an administrator's cached PASS (issue 19).
func TestCacheKeyPerUser(t *testing.T) {
	p := &profile.Profile{}
	a := Key(Options{Cluster: "https://c", Namespace: "ns", Profile: p, User: "admin"})
	b := Key(Options{Cluster: "https://c", Namespace: "ns", Profile: p, User: "student"})
	if a == b {
		t.Fatal("the preflight cache key ignores the user")
	}
	if a != Key(Options{Cluster: "https://c", Namespace: "ns", Profile: p, User: "admin"}) {
		t.Fatal("the key is not stable")
	}
}
