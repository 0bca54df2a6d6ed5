package cli

import (
	"encoding/json"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/ain-hpc/ain/internal/ainerr"
)

// TestDoctorHang: Flight Recorder dumps and RAS output give the verdict with the JSON keys
// and exit 5; a file of another kind is a usage error naming it.
func TestDoctorHang(t *testing.T) {
	code, out, _ := runDoctorCLI(t, "", "doctor", "hang",
		testdataPath("hang", "fr/tutorial-crash/trace_0"), testdataPath("hang", "fr/tutorial-crash/trace_1"), "-o", "json")
	if code != int(ainerr.CheckFailed) {
		t.Errorf("exit %d, want %d", code, ainerr.CheckFailed)
	}
	var r map[string]any
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	keys := make([]string, 0, len(r))
	for k := range r {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	if want := []string{"aheadRanks", "collective", "evidence", "missingRanks", "nranks", "status", "stuckRanks"}; !slices.Equal(keys, want) {
		t.Errorf("JSON keys %v, want exactly %v", keys, want)
	}
	if r["status"] != "MISMATCH" || r["collective"] != "nccl:all_reduce #5 in process group 0:default_pg" || r["nranks"] != float64(2) {
		t.Errorf("JSON %v", r)
	}
	// A directory of dumps, as torchfrtrace takes it.
	code, out, _ = runDoctorCLI(t, "", "doctor", "hang", testdataPath("hang", "fr/straggler-json"))
	if code != int(ainerr.CheckFailed) || !strings.Contains(out, "collective: nccl:all_reduce #142 in process group 0:default_pg") ||
		!strings.Contains(out, "stuck (did not enter it): 5 ") {
		t.Errorf("directory: exit %d output:\n%s", code, out)
	}
	// RAS text from stdin, text output: verdict, ranks, evidence with line numbers, fix.
	b, err := os.ReadFile(testdataPath("hang", "ras/ras-doc-mismatch-counts.txt"))
	if err != nil {
		t.Fatal(err)
	}
	code, out, _ = runDoctorCLI(t, string(b), "doctor", "hang", "-")
	if code != int(ainerr.CheckFailed) || !strings.HasPrefix(out, "PROBLEM: MISMATCH (ncclras, 32 ranks)") ||
		!strings.Contains(out, "stuck (did not enter it): 0,2,3,4,5,7") || !strings.Contains(out, "-:10: 26 ranks have launched up to operation 6650") ||
		!strings.Contains(out, "fix: ") {
		t.Errorf("exit %d output:\n%s", code, out)
	}
	// Healthy: exit 0.
	code, out, _ = runDoctorCLI(t, "", "doctor", "hang", testdataPath("hang", "ras/ras-doc-healthy.txt"))
	if code != 0 || !strings.HasPrefix(out, "OK: OK") {
		t.Errorf("exit %d output:\n%s", code, out)
	}
	// Not a hang input: exit 2, the file named.
	code, _, errOut := runDoctorCLI(t, "", "doctor", "hang", testdataPath("nccl", "logs/socket-no-device.log"))
	if code != int(ainerr.Usage) || !strings.Contains(errOut, "socket-no-device.log is neither ncclras output") {
		t.Errorf("exit %d stderr %s", code, errOut)
	}
}

// TestDoctorNCCLLogNoNCCLLines: empty input and binary junk are a problem (exit 5), not "OK,
// transport unknown".
func TestDoctorNCCLLogNoNCCLLines(t *testing.T) {
	for name, in := range map[string]string{"empty": "", "binary": "\x00\x01\x02junk\x00\n\xff\xfe"} {
		code, out, _ := runDoctorCLI(t, in, "doctor", "nccl-log", "-")
		if code != int(ainerr.CheckFailed) || !strings.HasPrefix(out, "PROBLEM: not an NCCL log") || !strings.Contains(out, "[no-nccl-lines]") {
			t.Errorf("%s: exit %d output:\n%s", name, code, out)
		}
	}
}
