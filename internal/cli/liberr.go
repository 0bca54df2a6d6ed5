package cli

import (
	"errors"

	"github.com/ain-hpc/ain/internal/ainerr"
	"github.com/ain-hpc/ain/pkg/next"
)

// errCode is the exit code of a library's error type (code[E]).
type errCode struct {
	as   func(error) (error, bool)
	code ainerr.Code
}

func code[E error](c ainerr.Code) errCode {
	return errCode{func(err error) (error, bool) { e, ok := errors.AsType[E](err); return e, ok }, c}
}

// libError gives err the code of the first of codes whose type err's chain holds, with the hint
// that error gives (hintOf); ok is false when none matches.
func libError(err error, codes ...errCode) (_ error, ok bool) {
	for _, c := range codes {
		if e, ok := c.as(err); ok {
			return ainerr.New(c.code, err, hintOf(e)), true
		}
	}
	return err, false
}

// hintOf is what a library's error in err's chain says fixes it (next.Hinter), its commands
// worded as ain's.
func hintOf(err error) string {
	if h, ok := errors.AsType[next.Hinter](err); ok {
		return h.Hint(ainCommand)
	}
	return ""
}
