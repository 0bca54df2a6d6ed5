package nccl

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ain-hpc/ain/internal/golden"
)

// FuzzAnalyzeLog: no input may panic, the verdict is always one of the documented values and the
// report always marshals to JSON.
func FuzzAnalyzeLog(f *testing.F) {
	golden.Seeds(f, "logs/*.log", "logs/old/*.log")
	f.Add([]byte("h:1:1 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/RoCE [1"))
	f.Add([]byte("[1,0]<stdout>:h:1:1 [0] NCCL INFO AllReduce: 99999999999999999999 Bytes -> Algo 9 proto 9"))
	f.Add([]byte("NCCL WARN network  not found\n: NCCL INFO  via NET/"))
	f.Fuzz(func(t *testing.T, in []byte) {
		a := NewLogAnalyzer()
		if err := a.Feed("a", strings.NewReader(string(in))); err != nil {
			t.Fatal(err)
		}
		if err := a.Feed("b", strings.NewReader(string(in))); err != nil {
			t.Fatal(err)
		}
		r := a.Report()
		switch {
		case r.Transport == TransportIB, r.Transport == TransportRoCE, r.Transport == TransportSocket,
			r.Transport == TransportNone, r.Transport == TransportUnknown, strings.HasPrefix(r.Transport, pluginPrefix):
		default:
			t.Fatalf("transport %q", r.Transport)
		}
		if _, err := json.Marshal(r); err != nil {
			t.Fatal(err)
		}
		if len(r.Evidence) > maxEvidence || len(r.Devices) > maxDevices || len(r.Env) > maxEnv || len(r.Tuning) > maxTuning {
			t.Fatalf("unbounded report: %d evidence, %d devices", len(r.Evidence), len(r.Devices))
		}
		_ = r.Verdict()
	})
}

// FuzzKnownLinesExact: the splitter's known-lines table and the repeat cache change nothing in a
// report. Each input is read three times over (so its lines repeat) in blocks of 64 bytes, with
// the known table made after 4 lines, so that small inputs take the paths a long log takes
// (lines marked known by workers, blocks split after the analyser saw their lines); the report
// must equal the one of a full parse of every line.
func FuzzKnownLinesExact(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join("testdata", "logs", "*.log"))
	for _, p := range files {
		if b, err := os.ReadFile(p); err == nil && len(b) < 16<<10 {
			f.Add(b)
		}
	}
	f.Add([]byte("h:1:2 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[0] [send] via NET/IB/0/GDRDMA\nh:1:2 [0] NCCL INFO AllReduce: 8 Bytes -> Algo RING proto LL channel{Lo..Hi}={0..1}\n"))
	f.Fuzz(func(t *testing.T, in []byte) {
		data := bytes.Repeat(in, 3)
		report := func(off bool) []byte {
			a := NewLogAnalyzer()
			a.rc.off = off
			if !off {
				a.knownAfter, a.splitRead = 4, 64
			}
			if err := a.Feed("a", bytes.NewReader(data)); err != nil {
				t.Fatal(err)
			}
			b, err := json.Marshal(a.Report())
			if err != nil {
				t.Fatal(err)
			}
			return b
		}
		if on, off := report(false), report(true); !bytes.Equal(on, off) {
			t.Fatalf("known lines and cache change the report:\n%s\nvs a full parse:\n%s", on, off)
		}
	})
}
