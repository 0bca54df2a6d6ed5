package mpilauncher

import (
	"strings"
	"testing"
)

// TestGateReport: the gate's own lines are the evidence, with their line numbers.
func TestGateReport(t *testing.T) {
	log := "waiting\nain-worker-gate: worker qlora-worker-1 not Ready after 300s\nbye\n"
	r := GateReport(strings.NewReader(log), "ain-worker-gate:", "fix it")
	if r.Verdict != VerdictLauncherBeforeWorkers || r.Lines != 3 || len(r.Evidence) != 1 || r.Evidence[0].Line != 2 || r.Fix != "fix it" {
		t.Fatalf("%+v", r)
	}
}
