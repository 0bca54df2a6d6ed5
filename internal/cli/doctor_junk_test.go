package cli

import (
	"math/rand"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestDoctorLauncherJunk: empty input, random bytes and a 5 MB line are not a healthy launcher
// (issue 19: all three said "OK: healthy", exit 0); the too-long line's error names the file.
func TestDoctorLauncherJunk(t *testing.T) {
	dir := t.TempDir()
	junk := make([]byte, 256<<10)
	rand.New(rand.NewSource(1)).Read(junk)
	files := map[string][]byte{
		"empty.log":  nil,
		"blank.log":  []byte("\n\n   \n"),
		"random.bin": junk,
		"long.log":   []byte(strings.Repeat("x", 5<<20) + "\n"),
	}
	for name, b := range files {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	for name, want := range map[string]string{"empty.log": "PROBLEM: empty", "blank.log": "PROBLEM: empty", "random.bin": "PROBLEM: not-text"} {
		code, out, errb := runDoctorCLI(t, "", "doctor", "launcher", filepath.Join(dir, name))
		if code == 0 || !strings.Contains(out, want) || strings.Contains(out, "healthy") {
			t.Errorf("%s: exit %d, want non-zero and %q:\n%s%s", name, code, want, out, errb)
		}
	}
	p := filepath.Join(dir, "long.log")
	code, out, errb := runDoctorCLI(t, "", "doctor", "launcher", p)
	if code == 0 || !strings.Contains(errb, p) || !strings.Contains(errb, "line 1 is longer than 1 MiB") {
		t.Errorf("long line: exit %d\n%s%s", code, out, errb)
	}
	code, _, errb = runDoctorCLI(t, strings.Repeat("y", 2<<20), "doctor", "launcher", "-")
	if code == 0 || !strings.Contains(errb, "stdin: line 1") {
		t.Errorf("long line on stdin: exit %d: %s", code, errb)
	}
}

// TestDoctorWrongInputNotOK: text that is no launcher log (the README) and an NCCL log that does
// not say its transport are not verdicts of health (before: "OK: healthy" and "OK: transport
// unknown", exit 0): each says what the input is not, with exit 5.
func TestDoctorWrongInputNotOK(t *testing.T) {
	code, out, errb := runDoctorCLI(t, "", "doctor", "launcher", filepath.Join("..", "..", "README.md"))
	if code != 5 || !strings.HasPrefix(out, "PROBLEM: not-launcher-log") || strings.Contains(out, "healthy") || !strings.Contains(out, "not an MPI launcher's log") {
		t.Errorf("doctor launcher README.md: exit %d, want 5 and not-launcher-log\n%s%s", code, out, errb)
	}
	nccl := "h:1:1 [0] NCCL INFO Bootstrap : Using eth0:10.0.0.1<0>\nh:1:1 [0] NCCL INFO cudaDriverVersion 12040\n"
	code, out, errb = runDoctorCLI(t, nccl, "doctor", "nccl-log", "-")
	if code != 5 || !strings.HasPrefix(out, "PROBLEM: transport unknown") || !strings.Contains(out, "none of its 2 NCCL line(s)") {
		t.Errorf("doctor nccl-log without a transport line: exit %d, want 5\n%s%s", code, out, errb)
	}
}
