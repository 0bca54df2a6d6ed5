package main

import (
	"os/exec"
	"strings"
	"testing"
)

// TestBinaryLinksNoTypedClientset: the ain binary does not link client-go's clientset, its
// scheme, discovery or informer packages, nor the other packages whose init issue 16 measured
// as heavy. Go runs every linked package's init in every process: the typed clientset's
// register every built-in API group (about 290 packages, 1 MB of allocations), gentype links
// client-go's fake-client machinery (200 KB), distribution/reference compiles its expressions
// (0.5 MB), all paid by offline commands such as render. Cluster code uses pkg/kclient, recipes
// checkImageRef. tablewriter stays, pinned at v1.0.9 (go.mod says why).
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
		for _, banned := range []string{"k8s.io/client-go/kubernetes", "k8s.io/client-go/discovery", "k8s.io/client-go/informers", "k8s.io/client-go/dynamic/dynamicinformer",
			"k8s.io/client-go/gentype", "github.com/distribution/reference"} {
			if p == banned || strings.HasPrefix(p, banned+"/") {
				t.Errorf("the ain binary links %s (go list -deps ./cmd/ain; find who imports it with go list -f '{{.ImportPath}} {{.Imports}}' -deps ./cmd/ain)", p)
			}
		}
	}
}
