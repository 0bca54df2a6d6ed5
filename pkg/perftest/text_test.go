package perftest

import (
	"strings"
	"testing"
)

// A bandwidth run's text gives its settings, the best average in Gb/s and its table; the CSV
// has a row per size with the values as printed.
func TestWriteTextAndCSV(t *testing.T) {
	runs := parseFile(t, "ib_read_bw-roce-qps4-prefixed.txt")
	var b strings.Builder
	if err := WriteText(&b, runs, false); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	if !runs[0].OK() || !strings.HasPrefix(out, "OK: ib_read_bw on ") || !strings.Contains(out, "4 QP(s)") ||
		!strings.Contains(out, "\nbest average: ") || !strings.Contains(out, "\nBYTES  ITERATIONS  BW PEAK[") {
		t.Errorf("text:\n%s", out)
	}
	b.Reset()
	if err := WriteCSV(&b, runs); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	if !strings.HasPrefix(lines[0], "run,test,device,units,bytes,sl,iterations,bwPeak") || len(lines) != 1+len(runs[0].Rows) ||
		!strings.HasPrefix(lines[1], "1,ib_read_bw,") {
		t.Errorf("csv:\n%s", b.String())
	}
}
