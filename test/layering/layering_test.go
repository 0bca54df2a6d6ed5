// Package layering keeps the tree's layers apart: the libraries under pkg/ return typed errors
// and never exit codes, and import nothing under internal/; the command layer (internal/cli)
// reaches the cluster only through those libraries, never through a client package of its own.
package layering

import (
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
)

const module = "github.com/ain-hpc/ain/"

func root(t *testing.T) string {
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		t.Fatal("no caller")
	}
	return filepath.Join(filepath.Dir(file), "..", "..")
}

// imports lists the imports of every non-test Go file under dir, by file.
func imports(t *testing.T, dir string) map[string][]string {
	out := map[string][]string{}
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".")) {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		for _, im := range f.Imports {
			p, _ := strconv.Unquote(im.Path.Value)
			out[path] = append(out[path], p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestLibrariesImportNoExitCodesNorInternal(t *testing.T) {
	r := root(t)
	files := imports(t, filepath.Join(r, "pkg"))
	if len(files) < 100 {
		t.Fatalf("read only %d files under pkg/: wrong root %s?", len(files), r)
	}
	for path, ims := range files {
		rel, _ := filepath.Rel(r, path)
		for _, p := range ims {
			switch {
			case p == module+"internal/ainerr":
				t.Errorf("%s imports the exit codes (%s): return a typed error and map it in internal/cli", rel, p)
			case strings.HasPrefix(p, module+"internal/"):
				t.Errorf("%s imports %s: pkg/ imports nothing under internal/", rel, p)
			}
		}
	}
}

func TestCommandsUseNoClientPackage(t *testing.T) {
	r := root(t)
	for path, ims := range imports(t, filepath.Join(r, "internal", "cli")) {
		rel, _ := filepath.Rel(r, path)
		for _, p := range ims {
			if strings.HasPrefix(p, "k8s.io/client-go/") || p == "k8s.io/client-go" {
				t.Errorf("%s imports %s: the command layer reaches the cluster through pkg/ (pkg/kube's clients)", rel, p)
			}
		}
	}
}
