package perftest

import (
	"encoding/json"
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
