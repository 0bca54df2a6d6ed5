package sandboxtest

import (
	"testing"

	"github.com/ain-hpc/ain/pkg/testenv"
)

// TestMain isolates this package's unit tests from the machine (HOME, KUBECONFIG, caches)
// like every other test package; pkg/testenv's TestEveryTestPackageIsolated checks it.
func TestMain(m *testing.M) { testenv.Main(m) }
