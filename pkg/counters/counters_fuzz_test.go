package counters

import (
	"encoding/json"
	"testing"

	"github.com/ain-hpc/ain/internal/golden"
)

// FuzzCompare: no input may panic; comparing a snapshot with itself moves nothing and finds no
// problem; the bytes of a port are 4 x its word counters; reports marshal to JSON.
func FuzzCompare(f *testing.F) {
	f.Add([]byte("mlx5_0:1\nport_xmit_data 18446744073709551615\n"))
	golden.FuzzParser(f, []string{"*.txt"}, Parse, nil, func(t *testing.T, s *Snapshot) {
		r := Compare(s, s, Options{})
		if !r.OK || len(r.Deltas) != 0 {
			t.Fatalf("a snapshot against itself: ok %v deltas %v", r.OK, r.Deltas)
		}
		for p, tr := range Single(s).Bytes {
			if tr.XmitBytes != 4*s.Ports[p]["port_xmit_data"] {
				t.Fatalf("%s: %d bytes from %d words", p, tr.XmitBytes, s.Ports[p]["port_xmit_data"])
			}
		}
		if _, err := json.Marshal(r); err != nil {
			t.Fatal(err)
		}
	})
}
