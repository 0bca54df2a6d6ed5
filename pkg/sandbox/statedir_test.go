package sandbox

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ain-hpc/ain/pkg/next"
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

// Resolve defaults what was not asked, keeps the stack of a sandbox already in the folder unless
// one is asked for, and refuses a bad forward or value as a ConfigError naming it.
func TestRequestResolve(t *testing.T) {
	dir := t.TempDir()
	cfg, err := Request{Forwards: []string{"8000=127.0.0.1:18000"}}.Resolve(dir)
	if err != nil || cfg.Nodes != DefaultNodes || cfg.Stack != DefaultStack || len(cfg.PortForwards) != 1 || cfg.PortForwards[0].PodPort != 8000 {
		t.Fatalf("defaults: %+v, %v", cfg, err)
	}
	st := &State{Dir: dir, Config: Config{Stack: StackLegacy}}
	if err := saveState(st); err != nil {
		t.Fatal(err)
	}
	if cfg, err := (Request{}).Resolve(dir); err != nil || cfg.Stack != StackLegacy {
		t.Errorf("without a stack asked: %v, %v; want the folder's legacy", cfg.Stack, err)
	}
	if cfg, err := (Request{StackName: "current", StackSet: true}).Resolve(dir); err != nil || cfg.Stack != StackCurrent {
		t.Errorf("with --stack current: %v, %v", cfg.Stack, err)
	}
	for req, want := range map[*Request]string{
		{Forwards: []string{"nope"}}:         "--forward: ",
		{StackName: "old"}:                   "--stack must be one of",
		{Config: Config{Fabric: "ethernet"}}: "--fabric must be ib or roce",
	} {
		_, err := req.Resolve(t.TempDir())
		var ce *ConfigError
		if !errors.As(err, &ce) || !strings.Contains(err.Error(), want) {
			t.Errorf("%+v: %v, want a ConfigError with %q", *req, err, want)
		}
	}
}

// A path a shell would split or expand is quoted; a plain one is not.
func TestExportLine(t *testing.T) {
	for path, want := range map[string]string{
		"/home/a/.local/state/ain/sandbox/kubeconfig": "export KUBECONFIG=/home/a/.local/state/ain/sandbox/kubeconfig",
		"/tmp/my dir/it's":                            `export KUBECONFIG='/tmp/my dir/it'\''s'`,
	} {
		if got := (&State{Kubeconfig: path}).ExportLine(); got != want {
			t.Errorf("%q: %s, want %s", path, got, want)
		}
	}
}

// An interrupt of Start is an InterruptedError that says how to start again; a state folder
// it cannot use stays that error, interrupt or not.
func TestStartInterrupted(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, _, err := Start(ctx, Options{Dir: t.TempDir(), Cache: t.TempDir(), AgentCommand: []string{"/bin/true"}})
	var ie *InterruptedError
	if !errors.As(err, &ie) || !strings.Contains(err.Error(), "was not started") {
		t.Fatalf("Start with an ended context: %v, want an InterruptedError", err)
	}
	if h := ie.Hint(func(c next.Command) string { return "ain " + string(c) }); !strings.Contains(h, "`ain sandbox up`") {
		t.Errorf("hint %q", h)
	}
	_, _, err = Start(ctx, Options{Dir: filepath.Join(t.TempDir(), "a,b"), AgentCommand: []string{"/bin/true"}})
	if !errors.As(err, new(*StateDirError)) {
		t.Errorf("comma folder, interrupted: %v, want the StateDirError", err)
	}
}

// Build of a cache where everything is built builds nothing, says no progress, and lists the
// stack's components.
func TestBuildNothingMissing(t *testing.T) {
	cache := completeCache(t)
	comps, err := Build(context.Background(), cache, "legacy", time.Now, nil, func(l string) { t.Errorf("progress %q", l) })
	if err != nil || len(comps) != len(StackLegacy.Components()) {
		t.Fatalf("%d components, %v; want the legacy stack's %d", len(comps), err, len(StackLegacy.Components()))
	}
	if _, err := Build(context.Background(), cache, "nope", time.Now, nil, nil); !errors.As(err, new(*ConfigError)) {
		t.Errorf("unknown stack: %v, want a ConfigError", err)
	}
}
