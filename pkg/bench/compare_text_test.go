package bench

import (
	"strings"
	"testing"
)

// The comparison's text has a column per series and its ratio to the baseline, a PEAK row and
// dashes where a size is missing; its CSV keeps every digit.
func TestComparisonWriteTextAndCSV(t *testing.T) {
	f := func(v float64) *float64 { return &v }
	cmp := &Comparison{Baseline: "ring", Series: []Series{{Label: "ring", Fabric: "ib", Valid: true}, {Label: "tree", Fabric: "ib"}},
		Rows: []CompareRow{
			{Size: 1 << 20, Busbw: []*float64{f(10), f(12.5)}, Ratio: []*float64{nil, f(1.25)}},
			{Size: 1 << 30, Busbw: []*float64{f(40), nil}, Ratio: []*float64{nil, nil}},
		},
		Peaks: []float64{40, 12.5}, PeakRatio: []*float64{nil, f(0.3125)}}
	var b strings.Builder
	if err := cmp.WriteText(&b, false); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{"baseline: ring; X/ring = ", "  tree                 -, fabric ib, run   INVALID (see its result.json)\n",
		"\nSIZE   ring  tree  tree/ring\n", "\n1 MiB  10    12.5  1.25\n", "\n1 GiB  40    -     -\n", "\nPEAK   40    12.5  0.31\n", "(busbw in GB/s, out-of-place)\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("text has no %q:\n%s", want, out)
		}
	}
	b.Reset()
	if err := cmp.WriteCSV(&b); err != nil {
		t.Fatal(err)
	}
	if want := "size,ring_busbw,tree_busbw,tree_ratio\n1048576,10,12.5,1.2500\n1073741824,40,,\n"; b.String() != want {
		t.Errorf("csv %q, want %q", b.String(), want)
	}
}
