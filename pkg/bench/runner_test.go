package bench

import (
	"errors"
	"testing"
)

func TestEventString(t *testing.T) {
	e := Event{Index: 2, Total: 3, Variant: "tree", Kind: EventFailed, Message: "MPIJob x FAILED; the launcher's last lines:", Lines: LastLines([]byte("a\nb\nc\n"), 2)}
	if got, want := e.String(), "[2/3] tree: MPIJob x FAILED; the launcher's last lines:\n  | b\n  | c"; got != want {
		t.Errorf("got %q\nwant %q", got, want)
	}
}

func TestRunnerErrors(t *testing.T) {
	inner := errors.New("connection refused")
	for _, err := range []error{&BuildError{Err: inner}, &ApplyError{Err: inner}, &ClusterError{Doing: "watching the job", Err: inner}} {
		if !errors.Is(err, inner) {
			t.Errorf("%T does not unwrap to its cause", err)
		}
	}
	if got := (&VariantFailedError{Variant: "ring", Kind: "MPIJob", Job: "j"}).Error(); got != "variant ring: MPIJob j failed; the remaining variants were not run" {
		t.Errorf("got %q", got)
	}
	if !SameSet([]string{"b", "a"}, []string{"a", "b"}) || SameSet([]string{"a", "a"}, []string{"a", "b"}) {
		t.Error("SameSet")
	}
}
