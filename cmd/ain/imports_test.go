package main

import (
	"os/exec"
	"strings"
	"testing"
)

// TestBinaryLinksNoTypedClientset: the ain binary does not link client-go's clientset, its
// scheme, discovery or informer packages. Go runs every linked package's init in every process,
// and those register every built-in API group (about 290 packages, 1 MB of allocations): the
// start-up of offline commands such as render (issue 16). Cluster code uses pkg/kclient.
func TestBinaryLinksNoTypedClientset(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps: %v\n%s", err, out)
	}
	deps := strings.Fields(string(out))
	if len(deps) < 100 {
		t.Fatalf("go list -deps listed %d packages: %q", len(deps), out)
	}
	for _, p := range deps {
		for _, banned := range []string{"k8s.io/client-go/kubernetes", "k8s.io/client-go/discovery", "k8s.io/client-go/informers", "k8s.io/client-go/dynamic/dynamicinformer"} {
			if p == banned || strings.HasPrefix(p, banned+"/") {
				t.Errorf("the ain binary links %s (go list -deps ./cmd/ain; find who imports it with go list -f '{{.ImportPath}} {{.Imports}}' -deps ./cmd/ain)", p)
			}
		}
	}
}
