package figure

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"
)

func TestFormatOfAndWriteFile(t *testing.T) {
	for in, want := range map[string]string{"a.png": "png", "b.SVG": "svg", "c.jpg": "", "": "", "png": ""} {
		if got := FormatOf(in); got != want {
			t.Errorf("FormatOf(%q) = %q, want %q", in, got, want)
		}
	}
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.png")
	if err := WriteFile(bad, func(io.Writer) error { return errors.New("no data") }); err == nil {
		t.Fatal("a failed drawing wrote no error")
	}
	if _, err := os.Stat(bad); !os.IsNotExist(err) {
		t.Errorf("a failed drawing left %s: %v", bad, err)
	}
	good := filepath.Join(dir, "good.svg")
	if err := WriteFile(good, func(w io.Writer) error { _, err := io.WriteString(w, "<svg/>"); return err }); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(good); err != nil || string(b) != "<svg/>" {
		t.Errorf("wrote %q, %v", b, err)
	}
}
