package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestReportCommand: the sandbox's saved results give the side-by-side table (exit 0) and its
// JSON; no argument and a file that is no result are refused, naming what was expected.
func TestReportCommand(t *testing.T) {
	dir := testdataPath("report", "sandbox")
	code, out, errOut := runDoctorCLI(t, "", "report", dir)
	if code != 0 || !strings.Contains(out, "97% of what ib_write_bw measured") || !strings.Contains(out, "missing serving: no result; run `ain bench serve") {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
	plot := filepath.Join(t.TempDir(), "paths.svg")
	code, out, errOut = runDoctorCLI(t, "", "report", "-o", "json", "--plot", plot, dir)
	if b, err := os.ReadFile(plot); err != nil || !strings.Contains(string(b), "<svg") {
		t.Errorf("plot: %v\n%s", err, errOut)
	}
	var r struct {
		Rows []struct{ Path string } `json:"rows"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &r) != nil || len(r.Rows) < 3 {
		t.Fatalf("json: exit %d\n%s", code, out)
	}
	if code, _, errOut := runDoctorCLI(t, "", "report"); code != 2 || !strings.Contains(errOut, "give the result files or folders") {
		t.Errorf("no args: exit %d %s", code, errOut)
	}
	other := testdataPath("iperf", "tcp-8streams.json")
	if code, _, errOut := runDoctorCLI(t, "", "report", other); code != 1 || !strings.Contains(errOut, "tcp-8streams.json: not a result of bench allreduce") {
		t.Errorf("not a result: exit %d %s", code, errOut)
	}
}
