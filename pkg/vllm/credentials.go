package vllm

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"

	"k8s.io/apimachinery/pkg/runtime"

	"github.com/ain-hpc/ain/pkg/jobs"
	"github.com/ain-hpc/ain/pkg/recipe"
)

// Credential is a credential `ain serve` stores in a Secret it creates for the model server:
// SERVER-Suffix, labelled as ain's (so that deleting the server deletes it). Its flags are
// --Suffix-from-env (read $Env) and --Suffix-file.
type Credential struct {
	Suffix string
	// Key is the Secret's data key; Field the serving recipe's field that names the Secret.
	Key, Field string
	Env        string
}

// The credentials `ain serve` stores.
var (
	APIKeyCredential  = Credential{Suffix: "api-key", Key: "api-key", Field: "apiKeySecret", Env: "AIN_API_KEY"}
	HFTokenCredential = Credential{Suffix: "hf-token", Key: "token", Field: "hfTokenSecret", Env: "HF_TOKEN"}
)

// CredentialError says a credential could not be read: its File (Err, or empty), or $Env empty.
type CredentialError struct {
	Credential
	File string
	Err  error
}

func (e *CredentialError) Error() string {
	switch {
	case e.Err == errBothSources:
		return e.Err.Error()
	case e.Err != nil:
		return fmt.Sprintf("--%s-file %s: %v", e.Suffix, e.File, e.Err)
	case e.File != "":
		return e.File + " is empty"
	}
	return "$" + e.Env + " is empty"
}

// Read reads the credential from file (its trailing line break dropped), or without one from
// $Env through getenv.
func (c Credential) Read(file string, getenv func(string) string) (string, error) {
	if file == "" {
		if v := getenv(c.Env); v != "" {
			return v, nil
		}
		return "", &CredentialError{Credential: c}
	}
	b, err := os.ReadFile(file)
	if err != nil {
		if u := errors.Unwrap(err); u != nil {
			err = u // the path is in the message already
		}
		return "", &CredentialError{Credential: c, File: file, Err: err}
	}
	v := strings.TrimRight(string(b), "\r\n")
	if v == "" {
		return "", &CredentialError{Credential: c, File: file}
	}
	return v, nil
}

// Secret is the Secret holding v for model server server, and the recipe overrides
// (recipe --set syntax) that point the recipe's field at it. Never print the Secret.
func (c Credential) Secret(server, namespace, v string) (runtime.Object, []string) {
	name := server + "-" + c.Suffix
	s := CredentialSecret(name, namespace, c.Key, []byte(v), map[string]string{jobs.LabelManagedBy: jobs.ManagedByAin, jobs.LabelRun: server})
	return s, []string{c.Field + ".name=" + name, c.Field + ".key=" + c.Key}
}

// CredentialSource is where a credential is read from: FromEnv ($Env), or File.
type CredentialSource struct {
	Credential
	FromEnv bool
	File    string
}

// flag is the flag as typed that names the source.
func (c CredentialSource) flag() string {
	if c.File != "" {
		return "--" + c.Suffix + "-file " + c.File
	}
	return "--" + c.Suffix + "-from-env"
}

// Credentials are the Secrets holding the credentials read, for model server Server.
type Credentials struct {
	Server  string
	Secrets []runtime.Object
	// APIKey is the API key read ("" for none): the key the readiness check sends.
	APIKey string
}

// ReadCredentials reads each source given (FromEnv or File) into a Secret (Credential.Secret)
// and records through set the overrides pointing the recipe at it (by: the flag as typed).
// server gives the model server's name, asked only when a source is given.
func ReadCredentials(sources []CredentialSource, server func() (string, error), namespace string, getenv func(string) string, set func(by, field string)) (*Credentials, error) {
	out := &Credentials{}
	for _, src := range sources {
		if src.FromEnv && src.File != "" {
			return nil, &CredentialError{Credential: src.Credential, File: src.File, Err: errBothSources}
		}
	}
	for _, src := range sources {
		if !src.FromEnv && src.File == "" {
			continue
		}
		if out.Server == "" {
			// The Secret is named after the deployment: resolve the name first.
			name, err := server()
			if err != nil {
				return nil, err
			}
			out.Server = name
		}
		v, err := src.Read(src.File, getenv)
		if err != nil {
			return nil, err
		}
		if src.Credential == APIKeyCredential {
			out.APIKey = v
		}
		secret, fields := src.Secret(out.Server, namespace, v)
		out.Secrets = append(out.Secrets, secret)
		for _, f := range fields {
			set(src.flag(), f)
		}
	}
	return out, nil
}

var errBothSources = errors.New("take a credential either from the environment or from a file, not both")

// KeyFileError says the key file could not be written.
type KeyFileError struct {
	Path string
	Err  error
}

func (e *KeyFileError) Error() string { return e.Err.Error() }
func (e *KeyFileError) Unwrap() error { return e.Err }

// KeyFile is a DeployOptions.WriteKey writing the key to path (WriteKeyFile); its error is a
// KeyFileError.
func KeyFile(path string) func(key string) error {
	return func(key string) error {
		if err := WriteKeyFile(path, key); err != nil {
			return &KeyFileError{Path: path, Err: err}
		}
		return nil
	}
}

// WriteKeyFile writes a credential to path, readable by its owner only (also when the file
// existed with a wider mode).
func WriteKeyFile(path, value string) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	if err := f.Chmod(0o600); err != nil {
		f.Close()
		return err
	}
	if _, err := f.WriteString(value + "\n"); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// OfflineEntry resolves the entry without a cluster (a client dry run, `ain render`) into
// o.Recipe, and returns the lines that say which with the reason (o.ExposeSource), and what
// an Ingress on another class than ingress-nginx may lose: "# " comments and WARNING lines.
func OfflineEntry(r *recipe.Recipe, exposeSource string) []string {
	s := r.Serving
	kind := s.OfflineEntry()
	why := exposeSource
	if s.Expose == recipe.ExposeAuto {
		why += " without asking a cluster: an Ingress unless spec.gateway names a Gateway or GatewayClass; ain serve asks the cluster, where a model server keeps the entry it has and a new one gets the Gateway API if it is served and one GatewayClass is accepted"
	}
	spec, notes := s.WithEntry(kind)
	r.Serving = spec
	lines := []string{fmt.Sprintf("# expose: %s (%s)", ExposeDescription(kind), why)}
	for _, n := range notes {
		lines = append(lines, "# note: "+n)
	}
	if in := spec.Ingress; in != nil {
		if w := IngressClassWarning(in.ClassName, ""); w != "" {
			lines = append(lines, "WARNING: "+w)
		} else if n := IngressNginxNote(in.ClassName, ""); n != "" {
			lines = append(lines, "# note: "+n)
		}
	}
	return lines
}

// ClientDryRun builds what Deploy would apply, without a cluster: the objects (o.Secrets left
// out: they hold credentials) and the lines that say what is decided offline or not shown. The
// lines come also with an error. Errors are Deploy's: BuildError, InterruptedError.
func ClientDryRun(ctx context.Context, o DeployOptions) ([]runtime.Object, []string, error) {
	r := o.Recipe
	auth := DefaultAuth(r.Serving, ServerName(r, o.Name), o.AllowUnauthenticated)
	lines := append([]string{"# " + auth.Describe()}, OfflineEntry(r, o.ExposeSource)...)
	objs, err := BuildObjects(r, o.Profile, ObjectOptions{Name: o.Name, Namespace: o.Namespace})
	if err != nil {
		return nil, lines, &BuildError{Err: err}
	}
	if ctx.Err() != nil {
		// Building thousands of objects is no reason to ignore an interrupt.
		return nil, lines, &InterruptedError{Stage: InterruptedBuilding}
	}
	for _, s := range o.Secrets {
		lines = append(lines, fmt.Sprintf("# also Secret %s (not printed: it holds a credential)", objName(s)))
	}
	if objs.Ingress != nil {
		lines = append(lines, fmt.Sprintf("# the Ingress's TLS Secret %s is checked (or created self-signed) when applied", objs.Ingress.Spec.TLS[0].SecretName))
	}
	if objs.Gateway != nil {
		lines = append(lines, fmt.Sprintf("# the Gateway's TLS Secret %s is checked (or created self-signed) when applied", objs.Gateway.Spec.Listeners[0].TLS.CertificateRefs[0].Name))
	}
	return objs.All(), lines, nil
}
