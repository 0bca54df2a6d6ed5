package cli

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/ain-hpc/ain/internal/ainerr"
)

// TestDoctorCounters: the JSON keys the issue fixes ({"ports": {"mlx5_1:1": {"port_xmit_data": N}}}
// for one snapshot, plus "deltas" for two), --expect-bytes, exit codes.
func TestDoctorCounters(t *testing.T) {
	before, after := testdataPath("counters", "roce-allreduce-before.txt"), testdataPath("counters", "roce-allreduce-after.txt")
	code, out, errOut := runDoctorCLI(t, "", "doctor", "counters", before, "-o", "json")
	if code != 0 {
		t.Fatalf("one snapshot: exit %d %s", code, errOut)
	}
	var one struct {
		Ports  map[string]map[string]uint64 `json:"ports"`
		Deltas map[string]any               `json:"deltas"`
	}
	if err := json.Unmarshal([]byte(out), &one); err != nil {
		t.Fatal(err)
	}
	if one.Ports["mlx5_1:1"]["port_xmit_data"] != 81234569890 || one.Deltas != nil {
		t.Errorf("one snapshot: %v", one.Ports["mlx5_1:1"])
	}

	code, out, _ = runDoctorCLI(t, "", "doctor", "counters", before, after, "--expect-bytes", "96G", "-o", "json")
	var two struct {
		Deltas map[string][]struct {
			Counter string
			Delta   *uint64
		} `json:"deltas"`
		Bytes map[string]struct{ XmitBytes uint64 } `json:"bytes"`
	}
	if err := json.Unmarshal([]byte(out), &two); err != nil || code != 0 {
		t.Fatalf("exit %d, %v\n%s", code, err, out)
	}
	found := false
	for _, d := range two.Deltas["mlx5_0:1"] {
		if d.Counter == "port_xmit_data" && d.Delta != nil && *d.Delta == 48<<30/4 {
			found = true
		}
	}
	if !found || two.Bytes["mlx5_0:1"].XmitBytes != 48<<30 {
		t.Errorf("deltas %v bytes %v", two.Deltas["mlx5_0:1"], two.Bytes)
	}

	code, out, _ = runDoctorCLI(t, "", "doctor", "counters", before, after, "--expect-bytes", "200G")
	if code != int(ainerr.CheckFailed) || !strings.Contains(out, "problem [rdma-bytes-short]") {
		t.Errorf("short: exit %d\n%s", code, out)
	}
	code, _, errOut = runDoctorCLI(t, "", "doctor", "counters", before, "--expect-bytes", "1G")
	if code != int(ainerr.Usage) || !strings.Contains(errOut, "--expect-bytes needs two snapshots") {
		t.Errorf("one file with --expect-bytes: exit %d %s", code, errOut)
	}
	code, _, errOut = runDoctorCLI(t, "nothing here\n", "doctor", "counters", "-")
	if code != int(ainerr.Failure) || !strings.Contains(errOut, "no counters in 1 line(s); expected grep -H") {
		t.Errorf("empty: exit %d %s", code, errOut)
	}
}
