package vllm

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/ain-hpc/ain/pkg/jobs"
	"github.com/ain-hpc/ain/pkg/profile"
	"github.com/ain-hpc/ain/pkg/recipe"
)

// A credential comes from its file (line break dropped) or its variable; an empty one or an
// unreadable file is refused naming it. Its Secret is ain's, named after the server, and the
// recipe's field points at it.
func TestCredentialReadAndSecret(t *testing.T) {
	dir := t.TempDir()
	file, empty := filepath.Join(dir, "key"), filepath.Join(dir, "empty")
	_ = os.WriteFile(file, []byte("k3y\r\n"), 0o600)
	_ = os.WriteFile(empty, []byte("\n"), 0o600)
	env := map[string]string{"HF_TOKEN": "hf_x"}
	getenv := func(k string) string { return env[k] }
	if v, err := APIKeyCredential.Read(file, getenv); err != nil || v != "k3y" {
		t.Fatalf("%q %v", v, err)
	}
	if v, err := HFTokenCredential.Read("", getenv); err != nil || v != "hf_x" {
		t.Fatalf("%q %v", v, err)
	}
	for file, want := range map[string]string{"": "$AIN_API_KEY is empty", empty: empty + " is empty", filepath.Join(dir, "none"): "--api-key-file " + filepath.Join(dir, "none") + ": no such file or directory"} {
		var ce *CredentialError
		if _, err := APIKeyCredential.Read(file, getenv); !errors.As(err, &ce) || err.Error() != want {
			t.Errorf("%q: %v, want %q", file, err, want)
		}
	}
	obj, sets := HFTokenCredential.Secret("qwen", "llm", "hf_x")
	s := obj.(*corev1.Secret)
	if s.Name != "qwen-hf-token" || s.Namespace != "llm" || string(s.Data["token"]) != "hf_x" || s.Labels[jobs.LabelRun] != "qwen" || s.Labels[jobs.LabelManagedBy] != jobs.ManagedByAin {
		t.Errorf("secret %+v", s)
	}
	if strings.Join(sets, " ") != "hfTokenSecret.name=qwen-hf-token hfTokenSecret.key=token" {
		t.Errorf("overrides %q", sets)
	}
}

// The key file is its owner's only, also when it existed readable by others.
func TestWriteKeyFile(t *testing.T) {
	f := filepath.Join(t.TempDir(), "key.txt")
	_ = os.WriteFile(f, []byte("old"), 0o644)
	if err := WriteKeyFile(f, "k"); err != nil {
		t.Fatal(err)
	}
	st, _ := os.Stat(f)
	b, _ := os.ReadFile(f)
	if st.Mode().Perm() != 0o600 || string(b) != "k\n" {
		t.Errorf("mode %v, %q", st.Mode().Perm(), b)
	}
	var kf *KeyFileError
	if err := KeyFile(filepath.Join(f, "sub"))("k"); !errors.As(err, &kf) || kf.Path != filepath.Join(f, "sub") {
		t.Errorf("unwritable: %v", err)
	}
}

// A client dry run prints no credential Secret, says which it leaves out and what is decided
// offline, and refuses a recipe that cannot be built as Deploy does.
func TestClientDryRun(t *testing.T) {
	r, err := recipe.Parse("qwen.yaml", []byte(servingRecipe), nil)
	if err != nil {
		t.Fatal(err)
	}
	secret, _ := APIKeyCredential.Secret("qwen", "llm", "k3y")
	objs, lines, err := ClientDryRun(context.Background(), DeployOptions{Recipe: r, Profile: profile.Default(), Namespace: "llm", ExposeSource: "spec.expose auto", Secrets: []runtime.Object{secret}})
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range objs {
		if _, ok := o.(*corev1.Secret); ok {
			t.Errorf("a Secret is printed: %s", objName(o))
		}
	}
	text := strings.Join(lines, "\n")
	for _, want := range []string{"# auth: ", "# expose: ", "# also Secret qwen-api-key (not printed: it holds a credential)", "# the Ingress's TLS Secret "} {
		if !strings.Contains(text, want) {
			t.Errorf("missing %q in\n%s", want, text)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var ie *InterruptedError
	if _, _, err := ClientDryRun(ctx, DeployOptions{Recipe: r, Profile: profile.Default(), Namespace: "llm", ExposeSource: "x"}); !errors.As(err, &ie) || ie.Stage != InterruptedBuilding {
		t.Errorf("interrupted: %v", err)
	}
}

// Each credential given becomes a Secret named after the server (asked once, only then) and
// two overrides named by the flag; both sources for one credential are refused first.
func TestReadCredentials(t *testing.T) {
	file := filepath.Join(t.TempDir(), "hf")
	_ = os.WriteFile(file, []byte("hf_x\n"), 0o600)
	getenv := func(k string) string { return map[string]string{"AIN_API_KEY": "k3y"}[k] }
	asked := 0
	server := func() (string, error) { asked++; return "qwen", nil }
	var sets []string
	set := func(by, f string) { sets = append(sets, by+" "+f) }
	creds, err := ReadCredentials([]CredentialSource{{Credential: APIKeyCredential, FromEnv: true}, {Credential: HFTokenCredential, File: file}}, server, "llm", getenv, set)
	if err != nil || asked != 1 || creds.APIKey != "k3y" || len(creds.Secrets) != 2 || creds.Server != "qwen" {
		t.Fatalf("%+v %v (asked %d)", creds, err, asked)
	}
	want := "--api-key-from-env apiKeySecret.name=qwen-api-key|--api-key-from-env apiKeySecret.key=api-key|" +
		"--hf-token-file " + file + " hfTokenSecret.name=qwen-hf-token|--hf-token-file " + file + " hfTokenSecret.key=token"
	if strings.Join(sets, "|") != want {
		t.Errorf("overrides %q", sets)
	}
	asked = 0
	if creds, err := ReadCredentials([]CredentialSource{{Credential: APIKeyCredential}}, server, "llm", getenv, set); err != nil || asked != 0 || len(creds.Secrets) != 0 {
		t.Errorf("none given: %+v %v, asked %d", creds, err, asked)
	}
	_, err = ReadCredentials([]CredentialSource{{Credential: APIKeyCredential, FromEnv: true}, {Credential: HFTokenCredential, FromEnv: true, File: file}}, server, "llm", getenv, set)
	var ce *CredentialError
	if !errors.As(err, &ce) || err.Error() != "take a credential either from the environment or from a file, not both" || asked != 0 {
		t.Errorf("both: %v, asked %d", err, asked)
	}
}
