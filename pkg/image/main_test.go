package image

import (
	"testing"

	"github.com/ain-hpc/ain/pkg/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m) }
