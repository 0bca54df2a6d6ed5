package completion

import (
	"testing"

	"github.com/ain-hpc/ain/pkg/testenv"
)

// TestMain runs the tests isolated from the machine (own HOME and XDG folders; see testenv).
func TestMain(m *testing.M) { testenv.Main(m) }
