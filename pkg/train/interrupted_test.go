package train

import (
	"errors"
	"strings"
	"testing"

	"github.com/ain-hpc/ain/pkg/next"
)

func TestInterruptedErrorWriteText(t *testing.T) {
	cmd := func(c next.Command) string { return "ain " + string(c) }
	base := InterruptedError{Stage: StageWatching, Kind: "TrainJob", Namespace: "team", Name: "j", Phase: "Running"}
	for _, tc := range []struct {
		name string
		edit func(*InterruptedError)
		want string
	}{
		{"before apply", func(e *InterruptedError) { e.Stage = StageBeforeApply }, ""},
		{"keeps running", func(*InterruptedError) {},
			"\ninterrupted while watching TrainJob team/j (Running)\nTrainJob team/j keeps running. Follow it: ain status j -n team   ain logs j -n team -f\nEnd it: ain delete j -n team\n"},
		{"applying", func(e *InterruptedError) { e.Stage = StageApplying; e.DeleteAsked = true; e.Gone = true },
			"\ninterrupted while applying: the apply was finished rather than left half-done (TrainJob team/j and its objects exist)\n--delete-on-interrupt: TrainJob team/j is already gone\n"},
		{"deleted", func(e *InterruptedError) { e.DeleteAsked = true; e.Deleted = []string{"TrainJob/j", "Secret/j-ssh"} },
			"\ninterrupted while watching TrainJob team/j (Running)\n--delete-on-interrupt: deleted TrainJob/j, Secret/j-ssh\n"},
		{"delete failed", func(e *InterruptedError) { e.DeleteAsked = true; e.DeleteErr = errors.New("forbidden") },
			"\ninterrupted while watching TrainJob team/j (Running)\n--delete-on-interrupt: could not delete TrainJob team/j (forbidden): it may still be running. End it: ain delete j -n team\n"},
	} {
		e := base
		tc.edit(&e)
		var b strings.Builder
		e.WriteText(&b, cmd)
		if b.String() != tc.want {
			t.Errorf("%s: got\n%q\nwant\n%q", tc.name, b.String(), tc.want)
		}
	}
}
