// Package testenv isolates a test binary from the machine it runs on. A developer's stopped
// sandbox in the default state folder, their fabric profile, kubeconfig, endpoint or keys must
// never change a test's result (issue 19: TestModelsCommand failed after `ain sandbox up; ain
// sandbox down` because the test still resolved the real home folder). Every test package's
// TestMain calls Main (or sandboxtest.Main, which calls Isolate), so each test binary runs with
// its own HOME, XDG config/state/cache/data folders and none of the variables through which a
// user's cluster or secrets reach ain.
//
// Two things stay shared on purpose, pinned by their variables before HOME moves: the sandbox
// binary cache (~/.cache/ain/sandbox-bin, ~750 MB of etcd/kube-apiserver/... that take long to
// build and change no result) and Go's own caches (GOCACHE, GOMODCACHE, GOPATH, GOENV), which
// the sandbox build runs `go` against.
package testenv

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/ain-hpc/ain/pkg/sandbox/bincache"
)

// Unset are the variables a user's machine sets that would reach ain in a test: the cluster
// (KUBECONFIG), the profile, the sandbox's state folder, the model endpoint and keys.
var Unset = []string{
	"KUBECONFIG", "AIN_PROFILE", "AIN_SANDBOX_STATE", "AIN_ENDPOINT", "AIN_API_KEY",
	"AIN_USER_AGENT", "AIN_PROBE_IMAGE", "HF_TOKEN", "HUGGING_FACE_HUB_TOKEN", "HF_HOME", "HF_HUB_CACHE",
}

var root string

// Root is the temporary folder Isolate made (HOME is Root()/home); empty before Isolate.
func Root() string { return root }

// SandboxCache is where the shared sandbox binary cache is, resolved from the machine's
// environment by sandbox.CacheDir's rule (bincache.Dir; testenv cannot import pkg/sandbox:
// pkg/kube's own tests use testenv and pkg/sandbox imports pkg/kube).
func SandboxCache(getenv func(string) string) (string, error) { return bincache.Dir(getenv) }

// pinned returns the values to keep for the shared caches, computed from the real environment.
func pinned() (map[string]string, error) {
	keep := map[string]string{}
	cache, err := SandboxCache(os.Getenv)
	if err != nil {
		return nil, err
	}
	keep["AIN_SANDBOX_CACHE"] = cache
	// Go's defaults (cmd/go: GOCACHE is os.UserCacheDir()/go-build, GOPATH $HOME/go, GOMODCACHE
	// the first GOPATH entry's pkg/mod, GOENV os.UserConfigDir()/go/env), fixed before HOME and
	// XDG_* move so that a `go build` under the test reuses the machine's caches.
	ucache, errC := os.UserCacheDir()
	uconf, errF := os.UserConfigDir()
	home := os.Getenv("HOME")
	def := map[string]string{}
	if errC == nil {
		def["GOCACHE"] = filepath.Join(ucache, "go-build")
	}
	if errF == nil {
		def["GOENV"] = filepath.Join(uconf, "go", "env")
	}
	gopath := os.Getenv("GOPATH")
	if gopath == "" && home != "" {
		gopath = filepath.Join(home, "go")
	}
	if gopath != "" {
		def["GOPATH"] = gopath
		def["GOMODCACHE"] = filepath.Join(filepath.SplitList(gopath)[0], "pkg", "mod")
	}
	for k, v := range def {
		if cur := os.Getenv(k); cur != "" {
			v = cur
		}
		keep[k] = v
	}
	return keep, nil
}

// Isolate gives this process a fresh HOME and XDG folders under one temporary folder, unsets
// Unset, and pins the shared caches. cleanup removes the folder.
func Isolate() (cleanup func(), err error) {
	keep, err := pinned()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "ain-test-home-")
	if err != nil {
		return nil, err
	}
	set := map[string]string{
		"HOME":            filepath.Join(dir, "home"),
		"XDG_CONFIG_HOME": filepath.Join(dir, "config"),
		"XDG_STATE_HOME":  filepath.Join(dir, "state"),
		"XDG_CACHE_HOME":  filepath.Join(dir, "cache"),
		"XDG_DATA_HOME":   filepath.Join(dir, "data"),
	}
	for k, v := range set {
		if err := os.MkdirAll(v, 0o700); err != nil {
			os.RemoveAll(dir)
			return nil, err
		}
		keep[k] = v
	}
	for _, k := range Unset {
		os.Unsetenv(k)
	}
	for k, v := range keep {
		os.Setenv(k, v)
	}
	root = dir
	return func() { os.RemoveAll(dir) }, nil
}

// Main runs a package's tests isolated (see Isolate).
func Main(m *testing.M) {
	cleanup, err := Isolate()
	if err != nil {
		fmt.Fprintln(os.Stderr, "testenv:", err)
		os.Exit(1)
	}
	code := m.Run()
	cleanup()
	os.Exit(code)
}

// Programs returns the paths of real programs a test runs (sshd, mpirun, ...), installed from
// Debian packages by scripts/debian-packages.sh, which the README's test command runs first.
// A missing one fails the test with that script named; under -short, where a developer may not
// have installed them, it skips with the same message.
func Programs(t testing.TB, names ...string) map[string]string {
	t.Helper()
	out := map[string]string{}
	var missing []string
	for _, n := range names {
		p, err := exec.LookPath(n)
		if err != nil {
			// sshd is in /usr/sbin, which a non-root PATH may lack.
			if q := filepath.Join("/usr/sbin", n); isExecutable(q) {
				p, err = q, nil
			}
		}
		if err != nil {
			missing = append(missing, n)
			continue
		}
		out[n] = p
	}
	if len(missing) > 0 {
		msg := fmt.Sprintf("real programs missing: %v; install them with scripts/debian-packages.sh (as root)", missing)
		if testing.Short() {
			t.Skip(msg)
		}
		t.Fatal(msg)
	}
	return out
}

func isExecutable(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0
}

// FreePort is a TCP port free on 127.0.0.1 a moment ago, for a real server a test starts.
func FreePort(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
}

// WaitListening waits up to 10 s until something accepts on addr; log says what the server
// printed when it does not.
func WaitListening(t testing.TB, addr string, log func() string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
			c.Close()
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("nothing listens on %s after 10 s; the server said:\n%s", addr, log())
}
