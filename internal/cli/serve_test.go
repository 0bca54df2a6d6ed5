package cli

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/ain-hpc/ain/internal/ainerr"
	"github.com/ain-hpc/ain/pkg/kube"
	"github.com/ain-hpc/ain/pkg/vllm"
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

// renderedItems decodes `-o json` output (a v1 List) into kinds and the fields the entry tests
// read.
type renderedItem struct {
	Kind     string
	Metadata struct{ Name string }
	Spec     struct {
		GatewayClassName string
		Hostnames        []string
		ParentRefs       []struct{ Name, Namespace, SectionName string }
		Listeners        []struct {
			Name, Protocol, Hostname string
			Port                     int
			TLS                      struct {
				Mode            string
				CertificateRefs []struct{ Name string }
			}
		}
		Rules []struct {
			Matches []struct {
				Path struct{ Type, Value string }
			}
			BackendRefs []struct {
				Name string
				Port int
			}
			Timeouts struct{ Request, BackendRequest string }
		}
	}
}

func renderedItems(t *testing.T, out string) map[string]renderedItem {
	t.Helper()
	var list struct{ Items []renderedItem }
	if err := json.Unmarshal([]byte(out), &list); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	m := map[string]renderedItem{}
	for _, it := range list.Items {
		m[it.Kind] = it
	}
	return m
}

// --expose gateway --gateway-class renders an HTTPRoute (PathPrefix /v1 and Exact /health only,
// no timeouts) on a Gateway ain creates (HTTPS, the deployment's TLS Secret), no Ingress; --host
// becomes the route's hostname and the listener's; stderr says which entry and why.
func TestServeGatewayRendering(t *testing.T) {
	for _, cmd := range [][]string{{"serve", "vllm", "--dry-run=client", "-o", "json"}, {"render", "vllm", "-o", "json"}} {
		code, out, errs := runModelCLI(t, nil, "", append(cmd, "--expose", "gateway", "--gateway-class", "eg", "--host", "llm.example.com", "--name", "qwen")...)
		if code != 0 {
			t.Fatalf("%v: exit %d: %s", cmd, code, errs)
		}
		items := renderedItems(t, out)
		if _, ok := items["Ingress"]; ok {
			t.Errorf("%v: an Ingress beside the HTTPRoute", cmd)
		}
		rt, gw := items["HTTPRoute"], items["Gateway"]
		if len(rt.Spec.Rules) != 1 {
			t.Fatalf("%v: rules %+v", cmd, rt.Spec.Rules)
		}
		var matches []string
		for _, m := range rt.Spec.Rules[0].Matches {
			matches = append(matches, m.Path.Type+" "+m.Path.Value)
		}
		r := rt.Spec.Rules[0]
		if strings.Join(matches, ", ") != "PathPrefix /v1, Exact /health" || len(r.BackendRefs) != 1 || r.BackendRefs[0].Name != "qwen" || r.BackendRefs[0].Port != 8000 ||
			r.Timeouts.Request != "0s" || r.Timeouts.BackendRequest != "0s" || strings.Join(rt.Spec.Hostnames, ",") != "llm.example.com" {
			t.Errorf("%v: route %+v", cmd, rt.Spec)
		}
		if p := rt.Spec.ParentRefs; len(p) != 1 || p[0].Name != "qwen" || p[0].SectionName != "https" {
			t.Errorf("%v: parentRefs %+v", cmd, p)
		}
		if l := gw.Spec.Listeners; gw.Spec.GatewayClassName != "eg" || len(l) != 1 || l[0].Protocol != "HTTPS" || l[0].Port != 443 || l[0].Hostname != "llm.example.com" ||
			l[0].TLS.Mode != "Terminate" || l[0].TLS.CertificateRefs[0].Name != "qwen-tls" {
			t.Errorf("%v: gateway %+v", cmd, gw.Spec)
		}
		if !strings.Contains(errs, "# expose: gateway (--expose gateway)") || strings.Contains(errs, "spec.ingress.host") {
			t.Errorf("%v: stderr %s", cmd, errs)
		}
	}
	// An existing Gateway: the route names it, ain renders no Gateway; --gateway alone means
	// the Gateway API.
	code, out, errs := runModelCLI(t, nil, "", "render", "vllm", "-o", "json", "--gateway", "infra/public:web", "--host", "llm.example.com")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	items := renderedItems(t, out)
	if _, ok := items["Gateway"]; ok {
		t.Error("a Gateway rendered for a route on an existing one")
	}
	if p := items["HTTPRoute"].Spec.ParentRefs; len(p) != 1 || p[0].Name != "public" || p[0].Namespace != "infra" || p[0].SectionName != "web" {
		t.Errorf("parentRefs %+v", p)
	}
	// The default, without a cluster to ask: an Ingress, and why.
	code, out, errs = runModelCLI(t, nil, "", "render", "vllm", "-o", "json")
	if items := renderedItems(t, out); code != 0 || items["Ingress"].Kind == "" || items["HTTPRoute"].Kind != "" ||
		!strings.Contains(errs, "# expose: ingress (spec.expose auto without asking a cluster") {
		t.Errorf("exit %d: %s", code, errs)
	}
	code, out, errs = runModelCLI(t, nil, "", "render", "vllm", "-o", "json", "--expose", "none")
	if items := renderedItems(t, out); code != 0 || items["Ingress"].Kind != "" || items["HTTPRoute"].Kind != "" || items["Service"].Kind == "" {
		t.Errorf("--expose none: exit %d: %s", code, errs)
	}
}

// The entry flags are checked like fields (a bad value names its flag), cannot contradict each
// other, and are refused by name on a training recipe.
func TestServeEntryFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--expose", "route"}, `--expose route: spec.expose: "route" is not one of auto, ingress, gateway, none`},
		{[]string{"--gateway", "a", "--gateway-class", "b"}, "--gateway a and --gateway-class b: choose one"},
		{[]string{"--expose", "ingress", "--gateway-class", "eg"}, "--gateway-class eg with --expose ingress"},
		{[]string{"--gateway", "infra/"}, "--gateway infra/: no Gateway name"},
		{[]string{"--gateway", "a/b/c"}, "--gateway a/b/c: write [NAMESPACE/]NAME[:LISTENER]"},
		{[]string{"--gateway", "public:"}, "--gateway public:: no listener after ':'"},
		{[]string{"--gateway-class", "Envoy_GW"}, `--gateway-class Envoy_GW: spec.gateway.className: "Envoy_GW" is not a valid GatewayClass name`},
		{[]string{"--expose", "gateway", "--host", "10.1.2.3", "--gateway-class", "eg"}, `--host 10.1.2.3: spec.gateway.host: "10.1.2.3" is not a DNS name`},
		{[]string{"--expose", "gateway"}, "spec.gateway names no Gateway: set spec.gateway.className"},
		{[]string{"--expose", "gateway", "--gateway-class", "eg", "--set", "gateway.timeouts.request=2d"}, `--set gateway.timeouts.request=2d: spec.gateway.timeouts.request: "2d" is not a Gateway API duration`},
	} {
		code, _, errs := runModelCLI(t, nil, "", append([]string{"serve", "vllm", "--dry-run=client"}, tc.args...)...)
		if code != int(ainerr.Usage) || !strings.Contains(errs, tc.want) {
			t.Errorf("%v: exit %d: %s", tc.args, code, errs)
		}
	}
	code, _, errs := runModelCLI(t, nil, "", "render", "qlora", "--expose", "gateway")
	if code != int(ainerr.Usage) || !strings.Contains(errs, "--expose gateway: only serving recipes") {
		t.Errorf("training recipe: exit %d: %s", code, errs)
	}
}

// An Ingress on another class than ingress-nginx's is a WARNING naming the annotations it may
// ignore and what breaks; ingress-nginx's own class is not.
func TestServeWarnsNonNginxClass(t *testing.T) {
	code, _, errs := runModelCLI(t, nil, "", "serve", "vllm", "--dry-run=client", "--expose", "ingress", "--set", "ingress.className=traefik")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	for _, want := range []string{"WARNING: IngressClass traefik is not ingress-nginx", "proxy-buffering", "proxy-read-timeout", "proxy-body-size", "cut at the controller's default", "--expose gateway"} {
		if !strings.Contains(errs, want) {
			t.Errorf("no %q in: %s", want, errs)
		}
	}
	if _, _, errs = runModelCLI(t, nil, "", "serve", "vllm", "--dry-run=client", "--expose", "ingress"); strings.Contains(errs, "WARNING: IngressClass") {
		t.Errorf("nginx warned about: %s", errs)
	}
}

// vllm.Deployer's typed errors as the user reads them: the flag or field to fix, and the
// commands that follow or remove what an interrupt left.
func TestServeDeployErrors(t *testing.T) {
	tlsProblem := &vllm.TLSProblem{Secret: "vllm-tls", Reason: "tls.crt is empty"}
	for _, tc := range []struct {
		err        error
		code       ainerr.Code
		msg, hint  string
		stderrWant string
	}{
		{&vllm.KeyUnreadableError{Auth: vllm.Auth{Source: vllm.AuthNone}}, ainerr.Usage, "--api-key-out key.txt: ", "", ""},
		{&vllm.EntryTLSError{Field: "gateway", Err: tlsProblem}, ainerr.Usage, "TLS Secret vllm-tls: tls.crt is empty", "--set gateway.tlsSecret=NAME", ""},
		{&vllm.BuildError{Err: errors.New("bad spec")}, ainerr.Usage, "bad spec", "", ""},
		{&vllm.InterruptedError{Stage: vllm.InterruptedBeforeApply, Name: "m", TLSSecret: "m-tls"}, ainerr.Cancelled,
			"only the TLS Secret m-tls was created (ain serve delete m -n llm removes it)", "", ""},
		{&vllm.InterruptedError{Stage: vllm.InterruptedRolling, Name: "m", Deployed: 1, Total: 2}, ainerr.Cancelled, "interrupted", "",
			"1 of 2 replica(s) have the new spec, the others keep the previous one and keep serving. `ain serve` again finishes the update.\nFollow it: ain serve status m -n llm\nEnd it: ain serve delete m -n llm\n"},
	} {
		var errb bytes.Buffer
		a := &App{Streams: Streams{Out: &bytes.Buffer{}, Err: &errb}, Now: time.Now, Getenv: func(string) string { return "" }}
		err := a.deployError(&kube.Clients{Namespace: "llm"}, tc.err, &serveOptions{APIKeyOut: "key.txt"}, "m")
		if ainerr.CodeOf(err) != tc.code || !strings.Contains(err.Error(), tc.msg) || !strings.Contains(ainerr.HintOf(err), tc.hint) || !strings.Contains(errb.String(), tc.stderrWant) {
			t.Errorf("%T: code %d, %q, hint %q, stderr %q", tc.err, ainerr.CodeOf(err), err, ainerr.HintOf(err), errb.String())
		}
	}
}
