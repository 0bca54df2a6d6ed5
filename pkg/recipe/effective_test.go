package recipe

import (
	"strings"
	"testing"
)

func TestWriteEffective(t *testing.T) {
	r, err := Load("allreduce", nil)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	if err := r.WriteEffective(&b); err != nil {
		t.Fatal(err)
	}
	want, _ := r.Effective()
	if b.String() != "# "+r.Source+" with ain's defaults applied\n"+string(want) {
		t.Errorf("got\n%s", b.String())
	}
}
