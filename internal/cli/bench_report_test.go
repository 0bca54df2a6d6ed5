package cli

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/ain-hpc/ain/pkg/bench"
)

func TestBenchReportTTYAndPlain(t *testing.T) {
	res, err := bench.Load(savedBench(t, "all", "ib", "default", "ring", "tree"))
	if err != nil {
		t.Fatal(err)
	}
	for _, tty := range []bool{true, false} {
		var out bytes.Buffer
		a := &App{Streams: Streams{Out: &out, Err: &out, IsTTY: tty}, Now: time.Now, Getenv: func(string) string { return "" }}
		a.printBenchReport(res, []string{"x/result.json"})
		s := out.String()
		chart := strings.Contains(s, "- line rate 25 GB/s") && strings.Contains(s, "* default   o ring   + tree")
		if chart != tty {
			t.Errorf("tty=%v: terminal chart shown %v", tty, chart)
		}
		for _, want := range []string{"3 ranks, fabric ib, line rate 200Gb = 25 GB/s per NIC, 1 NIC(s) per node: busbw limit 25 GB/s", "peak ring:", "23.49 GB/s at 1 GiB = 94% of line rate",
			"largest deviation from the model (sizes >= 1 MiB)", "measured 1 MiB (tree faster up to 512 KiB); predicted", "verdict: Tree wins below 1 MiB", "saved: x/result.json"} {
			if !strings.Contains(s, want) {
				t.Errorf("tty=%v: report lacks %q", tty, want)
			}
		}
		if tty && !strings.Contains(s, "RING/LL128") {
			t.Errorf("tty: no NCCL choice column")
		}
		if !tty && (!strings.Contains(s, "ring TIME(us)") || !strings.Contains(s, "60941")) {
			t.Errorf("plain: no full table")
		}
		if testing.Verbose() {
			t.Logf("tty=%v\n%s", tty, s)
		}
	}
}
