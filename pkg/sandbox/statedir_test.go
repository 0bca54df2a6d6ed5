package sandbox

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
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

// TestStartTimeout: a normal sandbox keeps the 3-minute limit; a large one gets the time kwok
// needs to make its nodes Ready (issue 16 measured preflight at 1000 nodes).
func TestStartTimeout(t *testing.T) {
	for _, c := range []struct {
		nodes int
		want  time.Duration
	}{
		{3, 3 * time.Minute},
		{150, 3 * time.Minute},
		{500, 6*time.Minute + 30*time.Second},
		{1000, 11*time.Minute + 30*time.Second},
		{5000, 51*time.Minute + 30*time.Second},
	} {
		if got := startTimeout(c.nodes); got != c.want {
			t.Errorf("startTimeout(%d) = %s, want %s", c.nodes, got, c.want)
		}
		if got := startTimeout(c.nodes); got < nodesReadyTimeout(c.nodes) {
			t.Errorf("startTimeout(%d) = %s is shorter than the Ready wait %s", c.nodes, got, nodesReadyTimeout(c.nodes))
		}
	}
}

// TestStateDirWithComma: kwok's --config is a comma-separated list, so a state folder with a
// comma would start etcd and the API server and then fail in kwok; it is refused before anything
// is created, naming the folder.
func TestStateDirWithComma(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "runs,2026", "sandbox")
	_, _, err := Up(context.Background(), Options{Dir: dir, AgentCommand: []string{"/bin/true"}})
	var sd *StateDirError
	if !errors.As(err, &sd) || !strings.Contains(err.Error(), dir) || !strings.Contains(err.Error(), "comma") {
		t.Fatalf("Up(%s) = %v, want a StateDirError naming the folder", dir, err)
	}
	if _, err := os.Stat(filepath.Dir(dir)); !os.IsNotExist(err) {
		t.Errorf("the refused folder was created: %v", err)
	}
}
