package bench

import (
	"fmt"
	"strings"

	"github.com/ain-hpc/ain/pkg/next"
)

// InterruptedResultError says the bench was interrupted (Note says when): Dir holds what was
// measured, with no verdict.
type InterruptedResultError struct{ Note, Dir string }

func (e *InterruptedResultError) Error() string {
	return fmt.Sprintf("interrupted %s: %s holds what was measured, with no verdict", e.Note, e.Dir)
}

// InvalidResultError says the bench's result is INVALID (Problems), its first variant's
// launcher log saved as Log.
type InvalidResultError struct {
	Problems []string
	Log      string
}

func (e *InvalidResultError) Error() string {
	return "the bench result is INVALID: " + strings.Join(e.Problems, "; ")
}

// Hint names the command that explains the transport from the launcher's log.
func (e *InvalidResultError) Hint(cmd func(next.Command) string) string {
	return "`" + cmd(next.Command("doctor nccl-log "+e.Log)) + "` explains the transport; fix it and run the bench again"
}

// Verdict is the report's result as an error: nil for a valid result (or none), an
// *InterruptedResultError or an *InvalidResultError.
func (r *Report) Verdict() error {
	switch res := r.Result; {
	case res == nil:
		return nil
	case res.Interrupted:
		return &InterruptedResultError{Note: res.InterruptedNote, Dir: r.Dir}
	case !res.Valid && len(res.Variants) > 0:
		return &InvalidResultError{Problems: res.Problems, Log: r.Dir + "/" + res.Variants[0].Name + ".log"}
	}
	return nil
}
