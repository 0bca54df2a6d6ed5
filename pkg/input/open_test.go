package input

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestOpen(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	file := filepath.Join(dir, "a.log")
	if err := os.WriteFile(file, []byte("from the file"), 0o644); err != nil {
		t.Fatal(err)
	}
	for arg, want := range map[string]string{Stdin: "from stdin", file: "from the file"} {
		rc, err := Open(ctx, arg, strings.NewReader("from stdin"))
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(rc)
		rc.Close()
		if string(b) != want {
			t.Errorf("Open(%s) read %q, want %q", arg, b, want)
		}
	}
	var de *DirError
	if _, err := Open(ctx, dir, nil); !errors.As(err, &de) || err.Error() != dir+" is a directory: give the file(s) in it" {
		t.Errorf("a directory: %v", err)
	}
	var pe *fs.PathError
	if _, err := Open(ctx, filepath.Join(dir, "none"), nil); !errors.As(err, &pe) {
		t.Errorf("a missing file: %v, want os.Open's *fs.PathError", err)
	}
}

// A parse error names its input once; a refused size names it as the user gave it; an interrupt
// wins over whatever the parser said, also after a parse that returned no error.
func TestParseNamesErrors(t *testing.T) {
	ctx := context.Background()
	fail := func(err error) func(io.Reader) (int, error) {
		return func(r io.Reader) (int, error) { _, _ = io.ReadAll(r); return 0, err }
	}
	if _, err := Parse(ctx, Stdin, strings.NewReader("x"), fail(errors.New("line 1: bad"))); err == nil || err.Error() != "stdin: line 1: bad" {
		t.Errorf("parse error: %v", err)
	}
	if _, err := Parse(ctx, Stdin, strings.NewReader("x"), fail(errors.New("stdin: line 1: bad"))); err == nil || err.Error() != "stdin: line 1: bad" {
		t.Errorf("parse error naming its input already: %v", err)
	}
	var large *TooLargeError
	_, err := Parse(ctx, Stdin, strings.NewReader("x"), fail(&TooLargeError{Name: "input", Limit: 1 << 20}))
	if !errors.As(err, &large) || err.Error() != "stdin is larger than 1 MiB" || !strings.Contains(Advice(err), "cut the part it needs") {
		t.Errorf("too large: %v (advice %q)", err, Advice(err))
	}
	if Advice(&LineTooLongError{Line: 3, Limit: 1}) == "" || Advice(errors.New("other")) != "" ||
		!strings.Contains(Advice(fmt.Errorf("reading x.log: %w", ErrShrank)), "a copy of it") {
		t.Error("Advice: a line too long and a file that shrank have some, another error none")
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	var intr *InterruptedError
	if _, err = Parse(cctx, Stdin, strings.NewReader("x"), func(io.Reader) (int, error) { return 1, nil }); !errors.As(err, &intr) || err.Error() != "interrupted while reading stdin: no verdict" {
		t.Errorf("interrupted: %v", err)
	}
}

func TestExpandDirsAndCheckArgs(t *testing.T) {
	dir := t.TempDir()
	for _, n := range []string{"rank1", "rank0", ".hidden"} {
		if err := os.WriteFile(filepath.Join(dir, n), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Mkdir(filepath.Join(dir, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	got, err := ExpandDirs([]string{"-", dir, "missing"})
	want := []string{"-", filepath.Join(dir, "rank0"), filepath.Join(dir, "rank1"), "missing"}
	if err != nil || strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("ExpandDirs = %q, %v; want %q", got, err, want)
	}
	var empty *EmptyDirError
	if _, err := ExpandDirs([]string{filepath.Join(dir, "sub")}); !errors.As(err, &empty) {
		t.Errorf("an empty directory: %v", err)
	}
	if CheckArgs([]string{"a", "-", "b"}) != nil || !errors.Is(CheckArgs([]string{"-", "a", "-"}), ErrStdinTwice) {
		t.Error("CheckArgs: standard input once is fine, twice is not")
	}
}
