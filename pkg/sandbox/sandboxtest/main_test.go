package sandboxtest

import (
	"testing"

	"github.com/ain-hpc/ain/internal/testenv"
)

// TestMain isolates this package's unit tests from the machine (HOME, KUBECONFIG, caches)
// like every other test package; internal/testenv's TestEveryTestPackageIsolated checks it.
func TestMain(m *testing.M) { testenv.Main(m) }
