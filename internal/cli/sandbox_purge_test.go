package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ain-hpc/ain/pkg/preflight"
	"github.com/ain-hpc/ain/pkg/sandbox"
)

// TestSandboxDownPurgeRemovesPreflightCache: `sandbox down --purge` of a (stopped) sandbox
// removes the cached preflight results recorded for its API server and keeps other clusters'.
func TestSandboxDownPurgeRemovesPreflightCache(t *testing.T) {
	stateDir, cacheHome := t.TempDir(), t.TempDir()
	const server = "https://127.0.0.1:46443"
	st, _ := json.Marshal(sandbox.State{Dir: stateDir, Server: server})
	if err := os.WriteFile(sandbox.Layout{Dir: stateDir}.State(), st, 0o600); err != nil {
		t.Fatal(err)
	}
	cache := preflight.Cache{Dir: filepath.Join(cacheHome, "ain", "preflight")}
	if err := cache.Save("mine", &preflight.Result{Cluster: server}); err != nil {
		t.Fatal(err)
	}
	if err := cache.Save("other", &preflight.Result{Cluster: "https://gpu-cluster.example:6443"}); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"AIN_SANDBOX_STATE": stateDir, "XDG_CACHE_HOME": cacheHome}
	code, out, errb := runSandboxCLI(t, env, "sandbox", "down", "--purge")
	if code != 0 || !strings.Contains(out, "Removed 1 cached preflight result") {
		t.Fatalf("exit %d\n%s%s", code, out, errb)
	}
	if _, err := os.Stat(filepath.Join(cache.Dir, "mine.json")); !os.IsNotExist(err) {
		t.Errorf("the sandbox's cached preflight result is still there (%v)", err)
	}
	if _, err := os.Stat(filepath.Join(cache.Dir, "other.json")); err != nil {
		t.Errorf("another cluster's cached result was removed: %v", err)
	}
}
