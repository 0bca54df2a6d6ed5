package sandbox

import (
	"path/filepath"
	"testing"
)

// TestStateDirUsesGivenEnvironment: a caller's environment decides the state folder, never the
// process's real home folder (a test with its own env map must not find the developer's
// stopped sandbox under ~/.local/state; issue 19).
func TestStateDirUsesGivenEnvironment(t *testing.T) {
	env := func(m map[string]string) func(string) string { return func(k string) string { return m[k] } }
	got, err := StateDir(env(map[string]string{"HOME": "/nonexistent/h"}))
	if want := filepath.FromSlash("/nonexistent/h/.local/state/ain/sandbox"); err != nil || got != want {
		t.Fatalf("StateDir = %q, %v; want %q", got, err, want)
	}
	if got, err := StateDir(env(nil)); err == nil {
		t.Fatalf("StateDir with no HOME = %q, want an error naming AIN_SANDBOX_STATE", got)
	}
	got, _ = StateDir(env(map[string]string{"HOME": "/h", "XDG_STATE_HOME": "/s"}))
	if got != filepath.FromSlash("/s/ain/sandbox") {
		t.Fatalf("StateDir = %q", got)
	}
}
