// Package golden compares a value's JSON with a checked-in golden file, for the parsers' tests:
// one encoder setting (indent, no HTML escaping, as `-o json` prints) and one -update flow.
package golden

import (
	"bytes"
	"encoding/json"
	"flag"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// update is the -update flag of every test binary that imports golden, so the packages do not
// each declare it (two declarations would panic at start).
var update = flag.Bool("update", false, "rewrite the golden files in testdata/golden")

// JSON encodes got as indented JSON and compares it with testdata/golden/NAME.json; with -update
// it rewrites the file instead.
func JSON(t testing.TB, name string, got any) {
	t.Helper()
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(got); err != nil {
		t.Fatal(err)
	}
	File(t, filepath.Join("testdata", "golden", name+".json"), buf.Bytes())
}

// File compares got with the checked-in file at path (relative to the test's package); with
// -update it writes got there instead. A difference names the first line that differs.
func File(t testing.TB, path string, got []byte) {
	t.Helper()
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (go test -update writes it)", err)
	}
	if bytes.Equal(want, got) {
		return
	}
	wl, gl := strings.Split(string(want), "\n"), strings.Split(string(got), "\n")
	i := 0
	for i < len(wl) && i < len(gl) && wl[i] == gl[i] {
		i++
	}
	line := func(l []string) string {
		if i < len(l) {
			return strconv.Quote(l[i])
		}
		return "(end of file)"
	}
	t.Errorf("%s is out of date (go test -update rewrites it; review and commit it): line %d is %s, want %s", path, i+1, line(gl), line(wl))
}

// Seeds adds every testdata file matching the patterns (e.g. "*.txt") to a fuzz target's corpus.
func Seeds(f *testing.F, patterns ...string) {
	for _, p := range patterns {
		files, _ := filepath.Glob(filepath.Join("testdata", p))
		for _, name := range files {
			if b, err := os.ReadFile(name); err == nil {
				f.Add(b)
			}
		}
	}
}

// FuzzParser is every parser's fuzz target: the testdata files matching patterns join f's
// seeds; each input is parsed from a reader; a parse error goes to onErr (nil: the parser may
// refuse input, nothing to check; Strict: it may not); what parse returns must encode as JSON
// (ain prints it with -o json: no NaN or Inf may reach it), then check judges it.
func FuzzParser[T any](f *testing.F, patterns []string, parse func(io.Reader) (T, error), onErr func(t *testing.T, in []byte, err error), check func(t *testing.T, v T)) {
	Seeds(f, patterns...)
	f.Fuzz(func(t *testing.T, in []byte) {
		v, err := parse(bytes.NewReader(in))
		if err != nil {
			if onErr != nil {
				onErr(t, in, err)
			}
			return
		}
		if _, err := json.Marshal(v); err != nil {
			t.Fatalf("parsed value does not encode as JSON: %v", err)
		}
		check(t, v)
	})
}

// Strict is FuzzParser's onErr for a parser that reads any text: an error fails the target.
func Strict(t *testing.T, _ []byte, err error) { t.Fatal(err) }

// Open opens testdata/NAME for a test and closes it when the test ends.
func Open(t testing.TB, name string) *os.File {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

// Parse opens the file at path (as given, not under testdata) and returns what parse makes of
// it, failing the test on an error: the parsers' tests read every sample this way.
func Parse[T any](t testing.TB, path string, parse func(io.Reader) (T, error)) T {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	v, err := parse(f)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return v
}
