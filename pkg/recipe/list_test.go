package recipe

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A local recipe shadows the built-in of its name, and a broken one is listed with its error.
func TestListShadowsAndReportsBrokenFiles(t *testing.T) {
	dir := t.TempDir()
	name := BuiltinNames()[0]
	if err := os.WriteFile(filepath.Join(dir, name+".yaml"), []byte("kind: Nope\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	entries := List(dir)
	if len(entries) != len(BuiltinNames())+1 {
		t.Fatalf("%d entries, want %d", len(entries), len(BuiltinNames())+1)
	}
	if entries[0].Name != name || entries[0].Error == "" {
		t.Errorf("the broken local file: %+v", entries[0])
	}
	if s := entries[1].Source; !strings.HasPrefix(s, "builtin (shadowed by ./") {
		t.Errorf("the shadowed built-in's source: %q", s)
	}
	var b bytes.Buffer
	WriteListText(&b, entries, false)
	if !strings.Contains(b.String(), "INVALID: ") {
		t.Errorf("table lacks the invalid file:\n%s", b.String())
	}
}
