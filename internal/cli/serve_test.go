package cli

import (
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/ain-hpc/ain/pkg/ainerr"
)

func TestServeDryRunClient(t *testing.T) {
	env := map[string]string{"AIN_API_KEY": "never-print-me"}
	code, out, errs := runModelCLI(t, env, "", "serve", "vllm", "--model", "/shared/models/Qwen2.5-7B-Instruct", "--replicas", "2",
		"--host", "llm.example.com", "--api-key-from-env", "--dry-run=client", "-o", "yaml")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	for _, want := range []string{"name: vllm-0", "name: vllm-1", "kind: Service", "kind: Ingress", "proxy-buffering: \"off\"",
		"host: llm.example.com", "--served-model-name", "Qwen2.5-7B-Instruct", "name: vllm-api-key", "secretKeyRef"} {
		if !strings.Contains(out, want) {
			t.Errorf("no %q in the rendered objects", want)
		}
	}
	if strings.Contains(out+errs, "never-print-me") || strings.Contains(out, "kind: Secret") {
		t.Fatalf("the API key or its Secret is printed:\n%s\n%s", out, errs)
	}
	if !strings.Contains(errs, "Secret vllm-api-key (not printed") {
		t.Errorf("stderr: %s", errs)
	}
	// Flags are validated like recipe fields, and a problem names the flag the user typed
	// (not a --set they never gave), for ain serve and ain render alike.
	code, _, errs = runModelCLI(t, nil, "", "serve", "vllm", "--topology", "per-pod", "--dry-run=client")
	if code != int(ainerr.Usage) || !strings.Contains(errs, `--topology per-pod: spec.topology: "per-pod" is not one of independent, deployment`) {
		t.Fatalf("exit %d: %s", code, errs)
	}
	for _, cmd := range [][]string{{"serve", "vllm", "--dry-run=client"}, {"render", "vllm"}} {
		code, _, errs = runModelCLI(t, nil, "", append(cmd, "--host", "bad_host!")...)
		if code != int(ainerr.Usage) || !strings.Contains(errs, `--host bad_host!: spec.ingress.host: "bad_host!" is not a DNS name`) || strings.Contains(errs, "--set") {
			t.Fatalf("%v: exit %d: %s", cmd, code, errs)
		}
	}
	code, _, errs = runModelCLI(t, nil, "", "serve", "qlora", "--dry-run=client")
	if code != int(ainerr.Usage) || !strings.Contains(errs, "ain train qlora") {
		t.Fatalf("exit %d: %s", code, errs)
	}
}

func TestServeSecretFromFile(t *testing.T) {
	file := t.TempDir() + "/token"
	_ = os.WriteFile(file, []byte("hf_secret_token\n"), 0o600)
	code, out, errs := runModelCLI(t, nil, "", "serve", "vllm", "--hf-token-file", file, "--name", "qwen", "--dry-run=client")
	if code != 0 || !strings.Contains(out, "name: qwen-hf-token") || !strings.Contains(errs, "Secret qwen-hf-token (not printed") || strings.Contains(out+errs, "hf_secret_token") {
		t.Fatalf("exit %d\n%s\n%s", code, out, errs)
	}
	code, _, errs = runModelCLI(t, nil, "", "serve", "vllm", "--api-key-from-env", "--dry-run=client")
	if code != int(ainerr.Usage) || !strings.Contains(errs, "$AIN_API_KEY is empty") {
		t.Fatalf("exit %d: %s", code, errs)
	}
}

// The course command's rendering: the Ingress exists without any flag, and its only backend
// paths are the API (/v1, Prefix) and the health check (/health, Exact); the TLS Secret is
// named after --name. --host and --set ingress.host render the same; --host on a training recipe
// is a usage error naming the flag.
func TestRenderServingIngressPaths(t *testing.T) {
	for _, hostArgs := range [][]string{{"--set", "ingress.host=llm.example.com"}, {"--host", "llm.example.com"}} {
		t.Run(hostArgs[0], func(t *testing.T) { checkRenderedIngress(t, hostArgs) })
	}
	code, out, errs := runModelCLI(t, nil, "", "render", "qlora", "--host", "llm.example.com")
	if code != int(ainerr.Usage) || !strings.Contains(errs, "--host llm.example.com: only serving recipes") || out != "" {
		t.Fatalf("exit %d\n%s\n%s", code, out, errs)
	}
}

func checkRenderedIngress(t *testing.T, hostArgs []string) {
	code, out, errs := runModelCLI(t, nil, "", append([]string{"render", "vllm", "--name", "qwen", "-o", "json"}, hostArgs...)...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var list struct {
		Items []struct {
			Kind string
			Spec struct {
				TLS []struct {
					SecretName string
				}
				Rules []struct {
					Host string
					HTTP struct {
						Paths []struct {
							Path, PathType string
						}
					}
				}
			}
		}
	}
	if err := json.Unmarshal([]byte(out), &list); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	found := false
	for _, it := range list.Items {
		if it.Kind != "Ingress" {
			continue
		}
		found = true
		var paths []string
		for _, p := range it.Spec.Rules[0].HTTP.Paths {
			paths = append(paths, p.Path+" "+p.PathType)
		}
		if strings.Join(paths, ", ") != "/v1 Prefix, /health Exact" || it.Spec.TLS[0].SecretName != "qwen-tls" || it.Spec.Rules[0].Host != "llm.example.com" {
			t.Fatalf("ingress paths %v tls %+v", paths, it.Spec.TLS)
		}
	}
	if !found {
		t.Fatalf("no Ingress rendered:\n%s", out)
	}
}

// Without a key flag the rendered server requires the key ain keeps or generates (Secret
// NAME-api-key), and render and the dry run say so; no key takes --allow-unauthenticated,
// which cannot be combined with a key.
func TestServeAuthByDefault(t *testing.T) {
	for _, cmd := range [][]string{{"serve", "vllm", "--dry-run=client", "-o", "yaml"}, {"render", "vllm"}} {
		code, out, errs := runModelCLI(t, nil, "", cmd...)
		if code != 0 || !strings.Contains(errs, "# auth: vLLM requires an API key from Secret vllm-api-key (key api-key), generated when the server is applied") ||
			!strings.Contains(out, "name: VLLM_API_KEY") || !strings.Contains(out, "name: vllm-api-key") {
			t.Errorf("%v: exit %d\n%s\n%s", cmd, code, out, errs)
		}
		code, out, errs = runModelCLI(t, nil, "", append(cmd, "--allow-unauthenticated")...)
		if code != 0 || !strings.Contains(errs, "# auth: NONE (--allow-unauthenticated)") || strings.Contains(out, "VLLM_API_KEY") {
			t.Errorf("%v --allow-unauthenticated: exit %d\n%s\n%s", cmd, code, out, errs)
		}
	}
	env := map[string]string{"AIN_API_KEY": "k-123456"}
	code, _, errs := runModelCLI(t, env, "", "serve", "vllm", "--dry-run=client", "--api-key-from-env", "--allow-unauthenticated")
	if code != int(ainerr.Usage) || !strings.Contains(errs, "--allow-unauthenticated with an API key (Secret vllm-api-key") {
		t.Errorf("exit %d: %s", code, errs)
	}
}

// ain serve warns when the image's vLLM is older than the newest advisory fix, notes a tag that
// tells no version, and is quiet for the course recipe's pin.
func TestServeWarnsOldVLLM(t *testing.T) {
	code, _, errs := runModelCLI(t, nil, "", "serve", "vllm", "--dry-run=client", "--set", "image=vllm/vllm-openai:v0.11.0")
	if code != 0 || !strings.Contains(errs, "WARNING: image vllm/vllm-openai:v0.11.0 is vLLM 0.11.0, older than") || !strings.Contains(errs, "CVE-2026-22778") {
		t.Fatalf("exit %d: %s", code, errs)
	}
	code, _, errs = runModelCLI(t, nil, "", "serve", "vllm", "--dry-run=client", "--set", "image=vllm/vllm-openai:latest")
	if code != 0 || !strings.Contains(errs, "note: image vllm/vllm-openai:latest: its tag is no vLLM version, so ain cannot tell") {
		t.Fatalf("exit %d: %s", code, errs)
	}
	code, _, errs = runModelCLI(t, nil, "", "serve", "vllm", "--dry-run=client")
	if code != 0 || strings.Contains(errs, "image vllm/vllm-openai") {
		t.Fatalf("exit %d: %s", code, errs)
	}
}

// A credential file that cannot be read is named with its flag.
func TestServeCredentialFileNamed(t *testing.T) {
	for _, flag := range []string{"--api-key-file", "--hf-token-file"} {
		code, _, errs := runModelCLI(t, nil, "", "serve", "vllm", "--dry-run=client", flag, "/nonexistent/key")
		if code != int(ainerr.Usage) || !strings.Contains(errs, flag+" /nonexistent/key: no such file or directory") {
			t.Errorf("%s: exit %d: %s", flag, code, errs)
		}
	}
}
