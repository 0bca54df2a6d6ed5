package main

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/ain-hpc/ain/internal/cli"
	"github.com/ain-hpc/ain/internal/golden"
	"github.com/ain-hpc/ain/pkg/recipe"
)

// checkGenerated compares a generated document with its checked-in copy (-update rewrites it),
// so docs/ never drifts from the flags and the schema.
func checkGenerated(t *testing.T, path string, got []byte) {
	t.Helper()
	golden.File(t, path, got)
}

func TestCLIReference(t *testing.T) {
	a := &cli.App{Getenv: func(string) string { return "" }}
	md, err := a.Markdown()
	if err != nil {
		t.Fatal(err)
	}
	doc := "<!-- Generated from the command tree by `go test ./cmd/ain -run TestCLIReference -update`; do not edit. -->\n\n" + md
	checkGenerated(t, "../../docs/cli.md", []byte(doc))
}

// TestRecipeReference generates docs/recipes.md from the recipe types and their doc comments.
func TestRecipeReference(t *testing.T) {
	comments := fieldComments(t, "../../pkg/recipe")
	var b strings.Builder
	b.WriteString("<!-- Generated from pkg/recipe by `go test ./cmd/ain -run TestRecipeReference -update`; do not edit. -->\n\n")
	b.WriteString("# Recipe reference\n\n")
	b.WriteString("Every recipe starts with `apiVersion: " + recipe.APIVersion + "`, a `kind` (" + strings.Join(recipe.Kinds, ", ") +
		"), `metadata` (name, description, labels) and a `spec` whose fields depend on the kind. Unknown fields are errors; " +
		"`ain recipes show NAME --effective` prints a recipe with every default filled in.\n\n")
	for _, k := range []struct {
		kind string
		typ  reflect.Type
	}{
		{recipe.KindTraining, reflect.TypeOf(recipe.TrainingSpec{})},
		{recipe.KindMPI, reflect.TypeOf(recipe.MPISpec{})},
		{recipe.KindServing, reflect.TypeOf(recipe.ServingSpec{})},
	} {
		b.WriteString("## kind: " + k.kind + "\n\n| field | type | description |\n|---|---|---|\n")
		writeFields(&b, k.typ, "spec", comments, map[reflect.Type]bool{})
		b.WriteString("\n")
	}
	checkGenerated(t, "../../docs/recipes.md", []byte(b.String()))
}

func writeFields(b *strings.Builder, t reflect.Type, prefix string, comments map[string]string, seen map[reflect.Type]bool) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if seen[t] {
		return
	}
	seen[t] = true
	defer delete(seen, t)
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		tag := f.Tag.Get("yaml")
		name, opts, _ := strings.Cut(tag, ",")
		if name == "-" || !f.IsExported() {
			continue
		}
		if strings.Contains(opts, "inline") {
			writeFields(b, f.Type, prefix, comments, seen)
			continue
		}
		path := prefix + "." + name
		doc := strings.ReplaceAll(comments[t.Name()+"."+f.Name], "|", "\\|")
		b.WriteString("| `" + path + "` | " + typeName(f.Type) + " | " + doc + " |\n")
		ft := f.Type
		for ft.Kind() == reflect.Pointer || ft.Kind() == reflect.Slice {
			ft = ft.Elem()
		}
		if ft.Kind() == reflect.Struct {
			sub := path
			if f.Type.Kind() == reflect.Slice {
				sub += "[]"
			}
			writeFields(b, ft, sub, comments, seen)
		}
	}
}

func typeName(t reflect.Type) string {
	switch t.Kind() {
	case reflect.Pointer:
		return typeName(t.Elem())
	case reflect.Slice:
		return "list of " + typeName(t.Elem())
	case reflect.Map:
		return "map of " + typeName(t.Elem())
	case reflect.Struct:
		return "object"
	case reflect.Int, reflect.Int32, reflect.Int64:
		return "integer"
	}
	return t.Kind().String()
}

// fieldComments reads the doc comments of struct fields in a package: "Type.Field" -> text.
func fieldComments(t *testing.T, dir string) map[string]string {
	fset := token.NewFileSet()
	// One file at a time (parser.ParseDir is deprecated): the package's non-test files, in
	// name order.
	paths, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(paths)
	out := map[string]string{}
	for _, path := range paths {
		if strings.HasSuffix(path, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, path, nil, parser.ParseComments)
		if err != nil {
			t.Fatal(err)
		}
		{
			ast.Inspect(f, func(n ast.Node) bool {
				ts, ok := n.(*ast.TypeSpec)
				if !ok {
					return true
				}
				st, ok := ts.Type.(*ast.StructType)
				if !ok {
					return true
				}
				for _, fld := range st.Fields.List {
					text := strings.Join(strings.Fields(fld.Doc.Text()), " ")
					if text == "" && fld.Comment != nil {
						text = strings.Join(strings.Fields(fld.Comment.Text()), " ")
					}
					for _, id := range fld.Names {
						out[ts.Name.Name+"."+id.Name] = text
					}
				}
				return true
			})
		}
	}
	return out
}
