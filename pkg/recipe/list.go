package recipe

import (
	"bytes"
	"fmt"
	"io"
	"path/filepath"
	"sort"
	"strings"

	"github.com/ain-hpc/ain/pkg/input"
	"github.com/ain-hpc/ain/pkg/textout"
)

// ListEntry is one recipe `recipes list` shows: a file under the local folder or a built-in.
type ListEntry struct {
	Name        string `json:"name"`
	Kind        string `json:"kind"`
	Source      string `json:"source"`
	Description string `json:"description"`
	Error       string `json:"error,omitempty"`
}

// List lists the recipes of dir/*.yaml (sorted), then the built-ins; a built-in that a local
// file shadows says so, and a local file identical to its built-in (ain's own repository) is
// not listed twice. A local recipe that does not parse is listed with its first error.
func List(dir string) []ListEntry {
	var entries []ListEntry
	seen := map[string]bool{}
	local, _ := filepath.Glob(filepath.Join(dir, "*.yaml"))
	sort.Strings(local)
	for _, f := range local {
		name := strings.TrimSuffix(filepath.Base(f), ".yaml")
		data, err := input.ReadFile(f, MaxFileBytes)
		if err != nil {
			continue // a recipe file that cannot be listed is reported when it is used
		}
		if b, ok := Builtin(name); ok && bytes.Equal(b, data) {
			continue // the built-in itself (running inside ain's repository)
		}
		seen[name] = true
		entries = append(entries, describe(name, f, data))
	}
	for _, name := range BuiltinNames() {
		data, _ := Builtin(name)
		e := describe(name, "builtin", data)
		if seen[name] {
			e.Source = "builtin (shadowed by ./" + filepath.ToSlash(filepath.Join(dir, name)) + ".yaml)"
		}
		entries = append(entries, e)
	}
	return entries
}

func describe(name, source string, data []byte) ListEntry {
	e := ListEntry{Name: name, Source: source}
	src := source
	if source == "builtin" {
		src = "builtin:" + name
	}
	r, err := Parse(src, data, nil)
	if err != nil {
		e.Error = strings.SplitN(err.Error(), "\n", 2)[0]
		return e
	}
	e.Kind, e.Description = r.Kind, r.Metadata.Description
	return e
}

// WriteListText writes entries as a table (bordered when tty).
func WriteListText(w io.Writer, entries []ListEntry, tty bool) {
	rows := [][]string{}
	for _, e := range entries {
		desc := e.Description
		if e.Error != "" {
			desc = "INVALID: " + e.Error
		}
		rows = append(rows, []string{e.Name, e.Kind, e.Source, desc})
	}
	textout.Table(w, tty, []string{"NAME", "KIND", "SOURCE", "DESCRIPTION"}, rows)
}

// WriteAnnotated writes the recipe as written, then as YAML comments the defaults ain applies
// to the fields it leaves unset; ref is how the user named it.
func (r *Recipe) WriteAnnotated(w io.Writer, ref string) error {
	if _, err := w.Write(r.Raw); err != nil {
		return err
	}
	if len(r.Raw) > 0 && r.Raw[len(r.Raw)-1] != '\n' {
		fmt.Fprintln(w)
	}
	if len(r.Defaulted) > 0 {
		fmt.Fprintf(w, "#\n# Defaults ain applies to fields this recipe leaves unset (ain recipes show %s --effective):\n", ref)
		for _, d := range r.Defaulted {
			fmt.Fprintf(w, "#   %s: %s\n", d.Path, d.Value)
		}
	}
	return nil
}

// WriteEffective writes the recipe with every default filled in (Effective), under a comment
// naming its source.
func (r *Recipe) WriteEffective(w io.Writer) error {
	b, err := r.Effective()
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "# %s with ain's defaults applied\n", r.Source)
	_, err = w.Write(b)
	return err
}
