package ibport

import (
	"testing"

	"github.com/ain-hpc/ain/internal/golden"
)

// FuzzParse: no input may panic; every port has a reason exactly when it is not ready, and the
// report marshals to JSON.
func FuzzParse(f *testing.F) {
	f.Add([]byte("/sys/class/infiniband/x/ports/99999999999999999999/state:4\nGID[ x]: ::ffff:1.2.3.4, RoCE v2\nPort :\n"))
	golden.FuzzParser(f, []string{"*.txt"}, Parse, golden.Strict, func(t *testing.T, r *Report) {
		for _, p := range r.Ports {
			if p.Ready != (p.Reason == "") {
				t.Fatalf("port %+v: ready %v with reason %q", p, p.Ready, p.Reason)
			}
		}
		if r.Ready && len(r.Ports) == 0 {
			t.Fatal("ready without ports")
		}
		_ = r.Summary()
	})
}
