package input

import (
	"bufio"
	"errors"
	"fmt"
)

// LineTooLongError is a line longer than the longest one its reader accepts: input of another
// kind (binary data, /dev/zero), or lines joined (a log whose newlines were lost).
type LineTooLongError struct {
	Line  int // 1-based
	Limit int
}

func (e *LineTooLongError) Error() string {
	return fmt.Sprintf("line %d is longer than %s, the most a line of this input may hold", e.Line, Size(int64(e.Limit)))
}

// ScanError is a bufio.Scanner's non-nil Err with the line it stopped at (1-based: the line it
// could not read) and its buffer bound: bufio.ErrTooLong becomes a *LineTooLongError, another
// error (the reader's) says "line N: err".
func ScanError(err error, line, limit int) error {
	if errors.Is(err, bufio.ErrTooLong) {
		return &LineTooLongError{Line: line, Limit: limit}
	}
	return fmt.Errorf("line %d: %w", line, err)
}
