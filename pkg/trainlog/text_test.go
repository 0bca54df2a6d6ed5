package trainlog

import (
	"bytes"
	"strings"
	"testing"
)

func TestWriteTextSaysTheVerdict(t *testing.T) {
	run := &Run{Name: "run", Entries: []Entry{{Step: 10}}}
	c := &Comparison{Run: run, Archive: &Run{Name: "arch"}, Axis: "step", Verdict: VerdictDiverged, Reasons: []string{"loss rose"}}
	var b bytes.Buffer
	c.WriteText(&b, false)
	for _, want := range []string{"PROBLEM: diverged: loss rose\n", "last step", "10"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("lacks %q:\n%s", want, b.String())
		}
	}
	if c.Passed() {
		t.Error("a diverged run passed")
	}
}
