package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ain-hpc/ain/internal/ainerr"
	"github.com/ain-hpc/ain/pkg/sandbox"
	"github.com/ain-hpc/ain/pkg/sandbox/sandboxtest"
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

// TestTrainCompareJobSandbox: `ain train compare JOB ARCHIVE` reads rank 0's log of a PyTorchJob
// through the sandbox's real API server (kwok serves the recorded log) and compares it with an
// archive: one whose losses match (within 10%) and one that ends much lower.
func TestTrainCompareJobSandbox(t *testing.T) {
	sb := sandboxtest.Get(t)
	ns := sb.Namespace(t)
	// The built-in recipes mount the shared NFS claim; the sandbox makes it in "default" only.
	if err := sandbox.EnsureSharedPVC(context.Background(), sb.REST, ns, sandbox.DefaultSharedClaim); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := runBenchCLI(t, "train", "qlora", "--name", "cmp", "--timeout", "3m", "--kubeconfig", sb.Kubeconfig, "-n", ns)
	if code != 0 {
		t.Fatalf("train: exit %d\n%s\n%s", code, out, errOut)
	}
	// Archives in trainer_state.json form at steps 10..80 (logging_steps 10, as the recipe).
	state := func(losses ...float64) string {
		var h []string
		for i, l := range losses {
			h = append(h, fmt.Sprintf(`{"epoch": %.2f, "learning_rate": %g, "loss": %g, "step": %d}`, float64(i+1)/8, 0.0002*(1-float64(i)/8), l, 10*(i+1)))
		}
		return `{"global_step": 80, "log_history": [` + strings.Join(h, ", ") + `]}`
	}
	dir := t.TempDir()
	same := filepath.Join(dir, "same.json")
	lower := filepath.Join(dir, "lower.json")
	_ = os.WriteFile(same, []byte(state(1.80, 1.63, 1.45, 1.34, 1.27, 1.23, 1.18, 1.16)), 0o644)
	_ = os.WriteFile(lower, []byte(state(1.70, 1.40, 1.20, 1.05, 0.95, 0.90, 0.86, 0.84)), 0o644)

	code, out, errOut = runBenchCLI(t, "train", "compare", "cmp", same, "--logging-steps", "10", "--kubeconfig", sb.Kubeconfig, "-n", ns)
	if code != 0 || !strings.HasPrefix(out, "OK: matches:") || !strings.Contains(out, "PyTorchJob cmp (cmp-master-0)") {
		t.Fatalf("matching archive: exit %d\n%s\n%s", code, out, errOut)
	}
	code, out, _ = runBenchCLI(t, "train", "compare", "cmp", lower, "--logging-steps", "10", "--kubeconfig", sb.Kubeconfig, "-n", ns, "-o", "json")
	if code != int(ainerr.CheckFailed) || !strings.Contains(out, `"verdict": "diverged"`) || !strings.Contains(out, `"stepSource": "logging-steps"`) {
		t.Errorf("lower archive: exit %d\n%.800s", code, out)
	}
	code, _, errOut = runBenchCLI(t, "train", "compare", "no-such-job", same, "--kubeconfig", sb.Kubeconfig, "-n", ns)
	if code != int(ainerr.Usage) || !strings.Contains(errOut, "no-such-job") {
		t.Errorf("unknown job: exit %d %s", code, errOut)
	}
}
