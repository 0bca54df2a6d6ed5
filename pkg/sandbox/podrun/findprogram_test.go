package podrun

import (
	"os"
	"path/filepath"
	"testing"
)

// A program in a mapped folder of the image is found as the runtime would find it in the pod: the
// training image's python, under its /opt/conda/bin, which this machine does not have.
func TestFindProgramInMappedFolder(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "bin")
	if err := os.MkdirAll(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(bin, "python"), []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(bin, "notes.txt"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	img := Image{Files: map[string]string{"/opt/conda/bin": bin}}
	env := []string{"PATH=/opt/conda/bin:/nonexistent"}
	for name, want := range map[string]string{
		"python":                "",
		"/opt/conda/bin/python": "",
		"notes.txt":             `exec: "notes.txt": executable file not found in $PATH`,
		"no-such-program-ain":   `exec: "no-such-program-ain": executable file not found in $PATH`,
	} {
		if got := findProgram(name, env, img, nil); got != want {
			t.Errorf("%s: %q, want %q", name, got, want)
		}
	}
}
