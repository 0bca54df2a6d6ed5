package cli

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/ain-hpc/ain/internal/ainerr"
)

// TestBenchParsePerftest: bench parse tells perftest from nccl-tests and prints the keys the issue
// fixes, with values exactly as printed; a run that failed to connect exits 5.
func TestBenchParsePerftest(t *testing.T) {
	code, out, errOut := runDoctorCLI(t, "", "bench", "parse", testdataPath("perftest", "ib_write_bw-roce-server-duration.txt"), "-o", "json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var r struct {
		Tool, Test, Units string
		Rows              []map[string]json.RawMessage
	}
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if r.Tool != "perftest" || r.Test != "ib_write_bw" || r.Units != "MB/sec" || len(r.Rows) != 1 {
		t.Fatalf("got %+v", r)
	}
	row := r.Rows[0]
	for k, want := range map[string]string{"bytes": "65536", "iterations": "1774012", "bwPeak": "0.00", "bwAverage": "11087.52", "msgRate": "0.177400"} {
		if string(row[k]) != want {
			t.Errorf("%s = %s, want %s (as printed)", k, row[k], want)
		}
	}

	code, out, _ = runDoctorCLI(t, "", "bench", "parse", testdataPath("perftest", "ib_write_lat-ib-all-percentiles.txt"), "-o", "json")
	if code != 0 || !strings.Contains(out, `"tTypical": 0.98`) || !strings.Contains(out, `"p999": 5.42`) || !strings.Contains(out, `"units": "usec"`) {
		t.Errorf("latency: exit %d\n%.600s", code, out)
	}

	code, out, _ = runDoctorCLI(t, "", "bench", "parse", testdataPath("perftest", "ib_send_bw-ib-failed-then-cpu-util.txt"))
	if code != int(ainerr.CheckFailed) || !strings.Contains(out, "problem: line 2: Couldn't connect to 10.0.3.7:18515") {
		t.Errorf("failed client: exit %d\n%s", code, out)
	}
}
