package nccl

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

// TestMixedPluginsDeterministic: two processes on different net plugins (which rank alike) give
// the same report every time; the transports came from a map, in any order, so the run's
// transport and the problem's wording changed from one run to the next (found by
// FuzzKnownLinesExact).
func TestMixedPluginsDeterministic(t *testing.T) {
	log := "h1:11:12 [0] NCCL INFO NET/IBext : Using [0]mlx5_0:1/IB ; OOB eth0:10.0.0.1<0>\n" +
		"h2:21:22 [0] NCCL INFO NET/AWS Libfabric : Using [0]efa_0\n" +
		"h1:11:12 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[0] [send] via NET/IBext/0/GDRDMA\n" +
		"h2:21:22 [0] NCCL INFO Channel 00/0 : 1[0] -> 0[0] [send] via NET/AWS Libfabric/0\n"
	var first []byte
	for i := range 40 {
		r, err := AnalyzeLog(strings.NewReader(log))
		if err != nil {
			t.Fatal(err)
		}
		b, _ := json.Marshal(r)
		if i == 0 {
			first = b
			if !strings.HasPrefix(r.Transport, pluginPrefix) || len(r.Problems) == 0 || r.Problems[0].Code != CodeMixedTransport {
				t.Fatalf("transport %s, problems %v: want two plugins, mixed", r.Transport, r.Problems)
			}
			continue
		}
		if !bytes.Equal(b, first) {
			t.Fatalf("run %d differs:\n%s\nvs\n%s", i, b, first)
		}
	}
}
