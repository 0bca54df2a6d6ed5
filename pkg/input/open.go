package input

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// Stdin is the FILE argument that names standard input.
const Stdin = "-"

// Name is how an error names the input a FILE argument gives: its path, or "stdin" for -.
func Name(arg string) string {
	if arg == Stdin {
		return "stdin"
	}
	return arg
}

// ErrStdinTwice is FILE arguments naming standard input more than once.
var ErrStdinTwice = errors.New("standard input (-) can be read only once")

// CheckArgs is ErrStdinTwice when args, FILE arguments, name standard input more than once.
func CheckArgs(args []string) error {
	n := 0
	for _, a := range args {
		if a == Stdin {
			n++
		}
	}
	if n > 1 {
		return ErrStdinTwice
	}
	return nil
}

// DirError is a FILE argument naming a directory: opening one succeeds, reading it fails with a
// bare "is a directory".
type DirError struct{ Name string }

func (e *DirError) Error() string { return e.Name + " is a directory: give the file(s) in it" }

// InterruptedError is a read of input Name that ctx ended: what was read is part of the input, and
// a verdict on it would be wrong.
type InterruptedError struct{ Name string }

func (e *InterruptedError) Error() string {
	return "interrupted while reading " + e.Name + ": no verdict"
}

// Open opens FILE argument arg; - is stdin. Its reads end with ctx (Reader), even one waiting on a
// terminal or on a pipe whose writer never closes it. Errors: os.Open's (a *fs.PathError, which
// names the path), or a *DirError.
func Open(ctx context.Context, arg string, stdin io.Reader) (io.ReadCloser, error) {
	if arg == Stdin {
		return io.NopCloser(Reader(ctx, stdin)), nil
	}
	f, err := os.Open(arg)
	if err != nil {
		return nil, err
	}
	if st, err := f.Stat(); err == nil && st.IsDir() {
		f.Close()
		return nil, &DirError{Name: arg}
	}
	rd := Reader(ctx, f)
	if c, ok := rd.(*checkedReader); ok {
		return checkedFile{c}, nil // File and Err stay visible to a parser that maps files
	}
	return struct {
		io.Reader
		io.Closer
	}{rd, f}, nil
}

// checkedFile is a regular file opened by Open: its checkedReader, closing the file.
type checkedFile struct{ *checkedReader }

func (c checkedFile) Close() error { return c.f.Close() }

// Interrupted is the *InterruptedError of input arg when ctx is done, else nil: checked after every
// read whatever the reader returned (a parser may stop at a read error without returning it).
func Interrupted(ctx context.Context, arg string) error {
	if ctx.Err() == nil {
		return nil
	}
	return &InterruptedError{Name: Name(arg)}
}

// Named is err, the error of reading input arg (its parser's or the reader's), as a caller shows
// it: an *InterruptedError when ctx is done; a *TooLargeError named as arg; else err prefixed
// with the input's name unless it starts with it already.
func Named(ctx context.Context, arg string, err error) error {
	if ierr := Interrupted(ctx, arg); ierr != nil {
		return ierr
	}
	var large *TooLargeError
	switch {
	case errors.As(err, &large):
		large.Name = Name(arg) // the parser's name for it may be "input"
	case !strings.HasPrefix(err.Error(), Name(arg)):
		err = fmt.Errorf("%s: %w", Name(arg), err)
	}
	return err
}

// Advice says what to do about err when it is an input of another kind than its reader reads (a
// *LineTooLongError, a *TooLargeError); "" for any other error.
func Advice(err error) string {
	var long *LineTooLongError
	var large *TooLargeError
	switch {
	case errors.As(err, &long):
		return "this is not the text this command reads (binary data, or another file), or its lines were joined (newlines lost)"
	case errors.As(err, &large):
		return "this is not the text this command reads, or cut the part it needs out of the file"
	case errors.Is(err, ErrShrank):
		return "read it again when nothing truncates it, or read a copy of it"
	}
	return ""
}

// Parse opens input arg (Open), gives it to parse and closes it. Its errors are Open's, or the
// parse error as Named gives it, or an *InterruptedError when ctx ended the read.
func Parse[T any](ctx context.Context, arg string, stdin io.Reader, parse func(io.Reader) (T, error)) (T, error) {
	var zero T
	rc, err := Open(ctx, arg, stdin)
	if err != nil {
		return zero, err
	}
	defer rc.Close()
	v, err := parse(rc)
	if err != nil {
		return zero, Named(ctx, arg, err)
	}
	if err := Interrupted(ctx, arg); err != nil {
		return zero, err
	}
	return v, nil
}

// EmptyDirError is a directory argument with no file in it.
type EmptyDirError struct{ Dir string }

func (e *EmptyDirError) Error() string { return "directory " + e.Dir + " holds no files" }

// ExpandDirs replaces each directory among args by the regular files in it (hidden ones left
// out), sorted; other arguments (-, files, missing paths, which Open reports) stay as given. A
// directory with no file is an *EmptyDirError.
func ExpandDirs(args []string) ([]string, error) {
	var out []string
	for _, a := range args {
		st, err := os.Stat(a)
		if a == Stdin || err != nil || !st.IsDir() {
			out = append(out, a)
			continue
		}
		ents, err := os.ReadDir(a)
		if err != nil {
			return nil, fmt.Errorf("read directory %s: %w", a, err)
		}
		n := 0
		for _, e := range ents {
			if e.Type().IsRegular() && !strings.HasPrefix(e.Name(), ".") {
				out = append(out, filepath.Join(a, e.Name()))
				n++
			}
		}
		if n == 0 {
			return nil, &EmptyDirError{Dir: a}
		}
	}
	return out, nil
}
