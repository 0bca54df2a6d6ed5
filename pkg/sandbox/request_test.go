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
	cache := t.TempDir()
	for _, c := range Components() {
		if err := os.MkdirAll(c.Dir(cache), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(c.Dir(cache), ".complete"), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	comps, err := Build(context.Background(), cache, "legacy", time.Now, nil, func(l string) { t.Errorf("progress %q", l) })
	if err != nil || len(comps) != len(StackLegacy.Components()) {
		t.Fatalf("%d components, %v; want the legacy stack's %d", len(comps), err, len(StackLegacy.Components()))
	}
	if _, err := Build(context.Background(), cache, "nope", time.Now, nil, nil); !errors.As(err, new(*ConfigError)) {
		t.Errorf("unknown stack: %v, want a ConfigError", err)
	}
}
