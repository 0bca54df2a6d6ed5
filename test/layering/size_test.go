package layering

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// nonTestLines counts the lines of every non-test Go file under dir, by file.
func nonTestLines(t *testing.T, dir string) map[string]int {
	t.Helper()
	out := map[string]int{}
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
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		out[path] = bytes.Count(b, []byte("\n"))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestCommandLayerStaysGlue bounds the command layer: flags, options, one library call,
// rendering and exit codes fit in 5,000 lines; a flow that grows it belongs in pkg/.
func TestCommandLayerStaysGlue(t *testing.T) {
	const budget = 5000
	total := 0
	for _, n := range nonTestLines(t, filepath.Join(root(t), "internal", "cli")) {
		total += n
	}
	if total > budget {
		t.Errorf("internal/cli has %d non-test lines, over its %d: move the flow or the printer you added into its library under pkg/", total, budget)
	}
}

// TestNoLongFiles keeps every non-test Go file under 800 lines: a file that long holds more
// than one concept.
func TestNoLongFiles(t *testing.T) {
	r := root(t)
	for _, dir := range []string{"cmd", "internal", "pkg", "test", "recipes"} {
		for path, n := range nonTestLines(t, filepath.Join(r, dir)) {
			if n > 800 {
				rel, _ := filepath.Rel(r, path)
				t.Errorf("%s has %d lines (at most 800): split it by concept", rel, n)
			}
		}
	}
}
