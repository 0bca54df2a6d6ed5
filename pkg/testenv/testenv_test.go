package testenv

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestMain(m *testing.M) {
	// Plant what a developer's machine has before isolating, to see it gone afterwards.
	os.Setenv("KUBECONFIG", "/planted/kubeconfig")
	os.Setenv("AIN_PROFILE", "/planted/profile.yaml")
	os.Setenv("AIN_API_KEY", "planted-key")
	realCache, _ = SandboxCache(os.Getenv)
	realHome = os.Getenv("HOME")
	Main(m)
}

var realCache, realHome string

// TestIsolated: HOME and the XDG folders are under Root, the user's cluster/profile/key
// variables are gone, and the sandbox binary cache still points at the machine's shared one.
func TestIsolated(t *testing.T) {
	if Root() == "" {
		t.Fatal("Isolate did not run")
	}
	for _, k := range []string{"HOME", "XDG_CONFIG_HOME", "XDG_STATE_HOME", "XDG_CACHE_HOME"} {
		if v := os.Getenv(k); !strings.HasPrefix(v, Root()) {
			t.Errorf("%s=%q, want under %s", k, v, Root())
		}
	}
	if os.Getenv("HOME") == realHome {
		t.Errorf("HOME is still the real home %s", realHome)
	}
	for _, k := range Unset {
		if v, ok := os.LookupEnv(k); ok {
			t.Errorf("%s is still set (%q)", k, v)
		}
	}
	if got := os.Getenv("AIN_SANDBOX_CACHE"); got == "" || got != realCache {
		t.Errorf("AIN_SANDBOX_CACHE=%q, want the shared cache %q", got, realCache)
	}
	for _, k := range []string{"GOCACHE", "GOMODCACHE"} {
		if v := os.Getenv(k); v == "" || strings.HasPrefix(v, Root()) {
			t.Errorf("%s=%q: Go's cache must stay the machine's", k, v)
		}
	}
}

// TestEveryTestPackageIsolated: each package with tests has a TestMain that isolates it
// (testenv.Main, or sandboxtest.Main which calls Isolate), so a new package cannot forget.
func TestEveryTestPackageIsolated(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	pkgs := map[string]bool{} // dir -> isolated
	err = filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata") && p != root {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(p, "_test.go") {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		dir := filepath.Dir(p)
		s := string(b)
		pkgs[dir] = pkgs[dir] || strings.Contains(s, "testenv.Main(m)") || strings.Contains(s, "sandboxtest.Main(m") || strings.Contains(s, "\tMain(m)")
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(pkgs) < 10 {
		t.Fatalf("found only %d test packages under %s", len(pkgs), root)
	}
	for dir, ok := range pkgs {
		if !ok {
			rel, _ := filepath.Rel(root, dir)
			t.Errorf("%s: tests are not isolated from the machine; add func TestMain(m *testing.M) { testenv.Main(m) }", rel)
		}
	}
}
