package cli

import (
	"testing"

	"github.com/ain-hpc/ain/pkg/sandbox"
	"github.com/ain-hpc/ain/pkg/sandbox/sandboxtest"
)

// TestMain gives this package's integration tests one shared 3-node sandbox (started on the
// first sandboxtest.Get, stopped at the end, every process by pid).
func TestMain(m *testing.M) {
	sandboxtest.Main(m, sandbox.Config{Nodes: 3, Stack: sandbox.StackLegacy})
}
