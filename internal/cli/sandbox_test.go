package cli

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func runSandboxCLI(t *testing.T, env map[string]string, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	a := &App{Streams: Streams{In: strings.NewReader(""), Out: &out, Err: &errb}, Now: time.Now,
		Getenv: func(k string) string { return env[k] }}
	code := a.Run(context.Background(), append([]string{"ain"}, args...))
	return code, out.String(), errb.String()
}

func TestSandboxCommandsWithoutSandbox(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state")
	env := map[string]string{"AIN_SANDBOX_STATE": dir}
	for _, args := range [][]string{{"sandbox", "kubeconfig"}, {"sandbox", "env"}, {"sandbox", "status"}} {
		code, _, errOut := runSandboxCLI(t, env, args...)
		if code == 0 || !strings.Contains(errOut, "no sandbox is running") || !strings.Contains(errOut, "ain sandbox up") {
			t.Errorf("%v: exit %d, stderr %q", args, code, errOut)
		}
	}
	code, out, _ := runSandboxCLI(t, env, "sandbox", "down")
	if code != 0 || !strings.Contains(out, "No sandbox") {
		t.Errorf("down without a sandbox: %d %q", code, out)
	}
	code, _, errOut := runSandboxCLI(t, env, "sandbox", "up", "--scenario", "nope")
	if code != 2 || !strings.Contains(errOut, "healthy") {
		t.Errorf("bad scenario: exit %d %q", code, errOut)
	}
	code, _, errOut = runSandboxCLI(t, env, "sandbox", "up", "--fabric", "eth", "--forward", "8000")
	if code != 2 || !strings.Contains(errOut, "--forward") {
		t.Errorf("bad forward: exit %d %q", code, errOut)
	}
	for _, args := range [][]string{{"sandbox", "up", "--stack", "v1"}, {"sandbox", "build", "--stack", "v1"}} {
		code, _, errOut = runSandboxCLI(t, env, args...)
		if code != 2 || !strings.Contains(errOut, "--stack") || !strings.Contains(errOut, "current, legacy") {
			t.Errorf("%v: exit %d %q", args, code, errOut)
		}
	}
}

func TestSandboxEnvAndKubeconfig(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "my state")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	kc := filepath.Join(dir, "kubeconfig")
	if err := os.WriteFile(filepath.Join(dir, "state.json"), []byte(`{"dir":"`+dir+`","kubeconfig":"`+kc+`"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, _ := runSandboxCLI(t, nil, "sandbox", "env", "--state-dir", dir)
	if code != 0 || out != "export KUBECONFIG='"+kc+"'\n" {
		t.Errorf("env: %d %q", code, out)
	}
	code, out, _ = runSandboxCLI(t, nil, "sandbox", "kubeconfig", "--state-dir", dir)
	if code != 0 || out != kc+"\n" {
		t.Errorf("kubeconfig: %d %q", code, out)
	}
}

// TestSandboxUpOtherStack: --stack naming another stack than the sandbox in the state folder is a
// usage error that says how to switch; nothing is started.
func TestSandboxUpOtherStack(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	state := `{"config": {"nodes": 1, "stack": "legacy"}, "dir": "` + dir + `"}`
	if err := os.WriteFile(filepath.Join(dir, "state.json"), []byte(state), 0o600); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"AIN_SANDBOX_STATE": dir, "AIN_SANDBOX_CACHE": t.TempDir()}
	code, _, errOut := runSandboxCLI(t, env, "sandbox", "up", "--stack", "current")
	if code != 2 || !strings.Contains(errOut, "legacy stack") || !strings.Contains(errOut, "ain sandbox down --purge") {
		t.Errorf("up --stack current over a legacy sandbox: exit %d %q", code, errOut)
	}
}
