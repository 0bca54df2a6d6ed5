package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSecretsCanary plants one canary as the HF token and the API key, through a file, the
// environment and the --api-key flag, runs the offline commands (dry-run renders in YAML and
// JSON, -v, failing paths) and asserts the canary appears in no output. Rendered pods must
// reference the Secrets (secretKeyRef), never carry the value (issue 19).
func TestSecretsCanary(t *testing.T) {
	const canary = "CANARY-hf_9f3b2c7d1e-sk-4a8e"
	file := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(file, []byte(canary+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"AIN_API_KEY": canary, "HF_TOKEN": canary, "HUGGING_FACE_HUB_TOKEN": canary}
	runs := [][]string{
		{"serve", "vllm", "--name", "m", "--dry-run=client", "--api-key-file", file, "--hf-token-file", file},
		{"serve", "vllm", "--name", "m", "--dry-run=client", "-o", "json", "--api-key-file", file, "--hf-token-file", file},
		{"serve", "vllm", "--name", "m", "--dry-run=client", "-o", "yaml", "--api-key-from-env", "--hf-token-from-env"},
		{"-v", "-v", "serve", "vllm", "--name", "m", "--dry-run=client", "--api-key-from-env", "--hf-token-from-env"},
		{"-v", "serve", "vllm", "--name", "m", "--api-key-file", file, "--hf-token-file", file}, // no cluster: fails
		{"serve", "vllm", "--name", "m", "--api-key-file", file, "--api-key-from-env"},          // both: usage error
		{"serve", "vllm", "--name", "m", "--dry-run=client", "--api-key-file", file, "--replicas", "0"},
		{"render", "vllm", "-o", "json"},
		{"-v", "models", "--api-key", canary},                                     // no endpoint
		{"-v", "models", "--endpoint", "http://127.0.0.1:1", "--api-key", canary}, // refused connection
		{"chat", "--endpoint", "http://127.0.0.1:1", "--api-key", canary, "hi"},
		{"train", "qlora", "--dry-run=client", "-o", "yaml", "--set", "nccl.env.NCCL_DEBUG=" + canary[:0] + "INFO"},
	}
	refs, all := 0, ""
	for _, args := range runs {
		code, out, errb := runModelCLI(t, env, "", args...)
		if strings.Contains(out+errb, canary) || strings.Contains(out+errb, "CANARY") {
			t.Errorf("%v (exit %d) printed the secret:\n%s%s", args, code, out, errb)
		}
		refs += strings.Count(out, "secretKeyRef")
		all += out + errb
	}
	// The credentials did reach the renderer (as Secrets named, not printed).
	if !strings.Contains(all, "Secret m-api-key") || !strings.Contains(all, "m-hf-token") {
		t.Error("the dry runs do not mention the Secrets they would create: the canary was not exercised")
	}
	if refs == 0 {
		t.Error("no rendered pod references its Secret by secretKeyRef")
	}
	t.Logf("%d runs, canary in none; %d secretKeyRef references", len(runs), refs)
}
