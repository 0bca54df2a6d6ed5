package bench

import (
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/ain-hpc/ain/pkg/next"
)

// ParseOutput tells perftest from nccl-tests, names the input in its errors and says when
// neither table is there.
func TestParseOutput(t *testing.T) {
	perf, err := os.ReadFile("../perftest/testdata/ib_write_bw-ib-ndr-all-gbits.txt")
	if err != nil {
		t.Fatal(err)
	}
	out, err := ParseOutput(perf, "bw.txt")
	if err != nil || len(out.Perftest) != 1 || out.NCCL != nil || !out.OK() || out.JSON() != out.Perftest[0] {
		t.Fatalf("perftest: %+v %v", out, err)
	}
	var sb strings.Builder
	if err := out.WriteCSV(&sb); err != nil || !strings.Contains(sb.String(), "8388608") {
		t.Errorf("csv: %v\n%s", err, sb.String())
	}
	wrong, err := os.ReadFile("../nccl/testdata/perf/all_reduce-wrong-failed.txt")
	if err != nil {
		t.Fatal(err)
	}
	if out, err := ParseOutput(wrong, "ar.txt"); err != nil || len(out.NCCL) == 0 || out.Perftest != nil || out.OK() {
		t.Fatalf("nccl-tests with wrong values: %+v %v", out, err)
	}
	_, err = ParseOutput([]byte("nothing here\n"), "stdin")
	var nr *NoRunsError
	if !errors.As(err, &nr) || nr.Perftest || err.Error() != "no nccl-tests or perftest results in stdin" ||
		!strings.Contains(nr.Hint(func(c next.Command) string { return string(c) }), "nccl-tests *_perf") {
		t.Fatalf("no table: %v", err)
	}
}
