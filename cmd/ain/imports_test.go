package main

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestOwnPackagesCompileNoExpressionAtInit: no package of ain's own that the binary links
// compiles a regular expression in a package-level variable (regexp.MustCompile runs in the
// package's init, in every process); pkg/lazyre compiles on first use. hcaName's
// {0,63} repetition alone was 860 allocations a start-up (GODEBUG=inittrace=1, pkg/profile).
func TestOwnPackagesCompileNoExpressionAtInit(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "-f", `{{if .Module}}{{if eq .Module.Path "github.com/ain-hpc/ain"}}{{.Dir}}{{range .GoFiles}} {{.}}{{end}}{{"\n"}}{{end}}{{end}}`, ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps: %v\n%s", err, out)
	}
	files := 0
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		for _, name := range f[1:] {
			path := filepath.Join(f[0], name)
			file, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.SkipObjectResolution)
			if err != nil {
				t.Fatal(err)
			}
			files++
			for _, d := range file.Decls {
				gd, ok := d.(*ast.GenDecl)
				if !ok || gd.Tok != token.VAR {
					continue
				}
				ast.Inspect(gd, func(n ast.Node) bool {
					if _, ok := n.(*ast.FuncLit); ok {
						return false // runs when called, not at init
					}
					if sel, ok := n.(*ast.SelectorExpr); ok {
						if id, ok := sel.X.(*ast.Ident); ok && id.Name == "regexp" && strings.HasPrefix(sel.Sel.Name, "MustCompile") {
							t.Errorf("%s: a package-level regexp.%s compiles at init in every ain process; use lazyre.New", path, sel.Sel.Name)
						}
					}
					return true
				})
			}
		}
	}
	if files < 50 {
		t.Fatalf("read only %d of ain's own files: %q", files, out)
	}
}
