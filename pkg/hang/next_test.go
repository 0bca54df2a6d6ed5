package hang

import (
	"slices"
	"testing"

	"github.com/ain-hpc/ain/pkg/next"
)

// A hang inside NCCL points at the NCCL log and the ports as commands, not in its text.
func TestInCollectiveSuggestsNCCLLogAndPorts(t *testing.T) {
	fix, cmds := frFix(&Report{Status: StatusInCollective})
	if fix == "" || !slices.Equal(cmds, []next.Command{"doctor nccl-log", "doctor ib-ports"}) {
		t.Errorf("frFix = %q, %v", fix, cmds)
	}
	if _, cmds := rasFix(&Report{Status: StatusError}); !slices.Equal(cmds, []next.Command{"doctor nccl-log"}) {
		t.Errorf("rasFix(ERROR) suggests %v", cmds)
	}
	if _, cmds := frFix(&Report{Status: StatusMismatch}); cmds != nil {
		t.Errorf("a mismatch suggests %v", cmds)
	}
}
