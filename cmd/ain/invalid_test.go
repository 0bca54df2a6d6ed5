package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ain-hpc/ain/internal/cli"
	"github.com/ain-hpc/ain/internal/golden"
)

const invalidDir = "../../testdata/invalid"

// run calls the command tree in-process, as main does, and returns its output and exit code.
func run(t *testing.T, env map[string]string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var out, errb bytes.Buffer
	a := &cli.App{
		Streams: cli.Streams{In: strings.NewReader(""), Out: &out, Err: &errb},
		Getenv:  func(k string) string { return env[k] },
		Now:     time.Now,
	}
	code = a.Run(context.Background(), append([]string{"ain"}, args...))
	return out.String(), errb.String(), code
}

// TestInvalidCorpus renders every bad recipe and profile under testdata/invalid and checks the
// exact message (file:line: field: what is wrong) and the usage exit code.
func TestInvalidCorpus(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(invalidDir, "*.yaml"))
	if err != nil || len(files) < 20 {
		t.Fatalf("want at least 20 invalid cases in %s, found %d (%v)", invalidDir, len(files), err)
	}
	env := map[string]string{"HOME": t.TempDir()}
	for _, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), ".yaml")
		t.Run(name, func(t *testing.T) {
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			args := []string{"render", f}
			if strings.HasPrefix(name, "profile-") {
				args = []string{"render", "qlora", "--profile", f}
			}
			if first, _, _ := strings.Cut(string(data), "\n"); strings.HasPrefix(first, "# args: ") {
				args = append(args, strings.Fields(strings.TrimPrefix(first, "# args: "))...)
			}
			stdout, stderr, code := run(t, env, args...)
			if code != 2 {
				t.Errorf("exit code %d, want 2 (usage)\nstderr:\n%s", code, stderr)
			}
			if stdout != "" {
				t.Errorf("nothing may be printed to stdout on error, got:\n%s", stdout)
			}
			got := strings.ReplaceAll(stderr, invalidDir+"/", "testdata/invalid/")
			errFile := strings.TrimSuffix(f, ".yaml") + ".err"
			golden.File(t, errFile, []byte(got))
			if !strings.Contains(got, "testdata/invalid/"+name+".yaml") && !strings.Contains(got, "--set ") {
				t.Errorf("the message must name the file: %s", got)
			}
		})
	}
}

// TestRenderServing: a serving recipe renders the objects `ain serve` applies.
func TestRenderServing(t *testing.T) {
	out, errOut, code := run(t, map[string]string{"HOME": t.TempDir()}, "render", "vllm", "-o", "yaml")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, want := range []string{"kind: Deployment", "kind: Service", "- serve", "nvidia.com/gpu"} {
		if !strings.Contains(out, want) {
			t.Errorf("render vllm lacks %q", want)
		}
	}
}

// TestUsageErrors: a bad flag is one line with a pointer to the command's help, not a help page;
// a flag missing its value is named rather than swallowing the next argument.
func TestUsageErrors(t *testing.T) {
	env := map[string]string{"HOME": t.TempDir()}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"render", "qlora", "--bogus"}, "error: flag provided but not defined: -bogus\nhint: see `ain render --help`\n"},
		{[]string{"train", "merge", "--nope"}, "hint: see `ain train merge --help`"},
		{[]string{"render", "qlora", "--set"}, "error: flag --set needs a value (e.g. --set=VALUE)\n"},
		{[]string{"--kubeconfig"}, "error: flag --kubeconfig needs a value"},
	} {
		out, errOut, code := run(t, env, c.args...)
		if code != 2 || !strings.Contains(errOut, c.want) || out != "" || strings.Contains(errOut, "USAGE:") {
			t.Errorf("ain %s: exit %d\nstdout: %q\nstderr: %q\nwant stderr containing %q", strings.Join(c.args, " "), code, out, errOut, c.want)
		}
	}
}
