package perftest

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/ain-hpc/ain/internal/golden"
)

// FuzzParse: no input may panic; every row has a value for every column of its table, values are
// numbers, and the runs marshal to JSON.
func FuzzParse(f *testing.F) {
	f.Add([]byte(" #bytes #iterations    t_min[usec]    t_max[usec]  t_typical[usec]\n 2 1 1.1.1.1.1 2 3\n"))
	golden.FuzzParser(f, []string{"*.txt"}, Parse, nil, func(t *testing.T, runs []*Run) {
		for _, r := range runs {
			for _, row := range r.Rows {
				b, err := json.Marshal(row)
				if err != nil {
					t.Fatal(err)
				}
				var m map[string]any
				if err := json.Unmarshal(b, &m); err != nil {
					t.Fatalf("row JSON %s: %v", b, err)
				}
				for _, c := range r.Columns {
					if _, ok := m[c]; !ok {
						t.Fatalf("row %s lacks column %s", b, c)
					}
				}
			}
			_ = r.Best()
		}
	})
}

// FuzzFindGIDChoice: no pod log may panic the reader of the in-pod GID choice; a choice it
// returns has an index, and printed again (GIDChoiceLine) it reads back the same.
func FuzzFindGIDChoice(f *testing.F) {
	f.Add([]byte(GIDChoiceLine(GIDChoice{Index: 15, Device: "mlx5_0", Port: 1, Address: "192.168.100.11", Netdev: "net1"}) + "\n----\n"))
	f.Add([]byte("ain-gid: FAIL: no RoCE v2 GID of the pod's address 192.168.100.11\n"))
	f.Add([]byte("ain-gid: index=x device= port=-1\nain-gid: index=3\n"))
	f.Fuzz(func(t *testing.T, log []byte) {
		ch, fail := FindGIDChoice(log)
		if ch == nil {
			return
		}
		if ch.Index < 0 || fail != "" {
			t.Fatalf("choice %+v with failure %q", ch, fail)
		}
		if strings.ContainsAny(ch.Device+ch.Address+ch.Netdev, " \t\n") {
			return // a field with blanks does not survive a line of key=value words
		}
		again, _ := FindGIDChoice([]byte(GIDChoiceLine(*ch)))
		if again == nil || *again != *ch {
			t.Fatalf("%+v reads back as %+v", ch, again)
		}
	})
}
