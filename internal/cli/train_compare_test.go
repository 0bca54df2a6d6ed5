package cli

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ain-hpc/ain/pkg/ainerr"
)

// TestTrainCompare: verdicts and exit codes, a folder with checkpoint-N/ as ARCHIVE, the plot file.
func TestTrainCompare(t *testing.T) {
	dir := t.TempDir()
	arch, err := os.ReadFile(testdataPath("trainlog", "archive-full-trainer_state.json"))
	if err != nil {
		t.Fatal(err)
	}
	for _, cp := range []string{"checkpoint-50", "checkpoint-125"} {
		if err := os.MkdirAll(filepath.Join(dir, cp), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// checkpoint-50 holds a truncated state; the highest checkpoint must be the one read.
	_ = os.WriteFile(filepath.Join(dir, "checkpoint-50", "trainer_state.json"), []byte(`{"global_step": 50, "log_history": []}`), 0o644)
	_ = os.WriteFile(filepath.Join(dir, "checkpoint-125", "trainer_state.json"), arch, 0o644)
	png := filepath.Join(dir, "loss.png")

	code, out, errOut := runDoctorCLI(t, "", "train", "compare", testdataPath("trainlog", "run-qlora-console.log"), dir, "--plot", png)
	if code != 0 || !strings.HasPrefix(out, "OK: matches:") || !strings.Contains(errOut, "wrote "+png) {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
	if b, err := os.ReadFile(png); err != nil || !bytes.HasPrefix(b, []byte("\x89PNG")) {
		t.Errorf("plot: %v", err)
	}

	code, out, _ = runDoctorCLI(t, "", "train", "compare", testdataPath("trainlog", "run-diverged-lr10x.jsonl"), dir, "-o", "json")
	var c struct {
		Verdict string
		Points  []map[string]any
	}
	if err := json.Unmarshal([]byte(out), &c); err != nil || code != int(ainerr.CheckFailed) || c.Verdict != "diverged" || len(c.Points) != 12 {
		t.Errorf("diverged: exit %d %v %+v", code, err, c.Verdict)
	}

	code, _, errOut = runDoctorCLI(t, "", "train", "compare", "a.log", "b.log", "--plot", "x.jpg")
	if code != int(ainerr.Usage) || !strings.Contains(errOut, "must end in .png or .svg") {
		t.Errorf("bad plot name: exit %d %s", code, errOut)
	}
	code, _, errOut = runDoctorCLI(t, "no loss here\n", "train", "compare", "-", dir)
	if code != int(ainerr.Failure) || !strings.Contains(errOut, "no training loss found") {
		t.Errorf("empty run: exit %d %s", code, errOut)
	}
}
