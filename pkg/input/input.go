// Package input reads what a user hands ain as a FILE argument or on standard input, with a size
// bound that errors name, and without outliving an interrupt: a Read blocked on a terminal or on
// a pipe that never closes returns once the command's context is done.
package input

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
)

// Reader returns r made to give up once ctx is done: its Read then returns ctx.Err(). A regular
// file's reads never wait for a writer, so for one ctx is checked before each Read. Anything else
// (standard input on a terminal or a pipe, a FIFO, an in-memory pipe) may block in Read until
// data comes, which no interrupt ends: such a Read runs in a goroutine of its own while Read waits
// for it or for ctx. A Read left behind by an interrupt fills a buffer of the reader's, never the
// caller's, and ends with the process (or when data comes).
func Reader(ctx context.Context, r io.Reader) io.Reader {
	if f, ok := r.(*os.File); ok {
		if st, err := f.Stat(); err == nil && st.Mode().IsRegular() {
			return &checkedReader{ctx: ctx, f: f}
		}
	}
	return &waitingReader{ctx: ctx, r: r}
}

type checkedReader struct {
	ctx context.Context
	f   *os.File
}

// File is the regular file read: a parser may map it instead of reading it (nccl's log
// analyser), calling Err where it would call Read.
func (c *checkedReader) File() *os.File { return c.f }

// Err is what Read returns before reading: ctx's error once it is done, else nil.
func (c *checkedReader) Err() error { return c.ctx.Err() }

func (c *checkedReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.f.Read(p)
}

// maxWaitingRead bounds one background Read: a pipe gives at most its buffer (64 KiB) per read,
// and callers reading in larger blocks call again.
const maxWaitingRead = 1 << 20

type waitingReader struct {
	ctx     context.Context
	r       io.Reader
	buf     []byte          // the background Read's buffer; free whenever pending is nil
	pending chan readResult // the Read in flight, nil when none
}

type readResult struct {
	n   int
	err error
}

func (w *waitingReader) Read(p []byte) (int, error) {
	if err := w.ctx.Err(); err != nil {
		return 0, err
	}
	if len(p) == 0 {
		return 0, nil
	}
	if w.pending == nil {
		size := min(len(p), maxWaitingRead)
		if cap(w.buf) < size {
			w.buf = make([]byte, size)
		}
		buf := w.buf[:size]
		ch := make(chan readResult, 1)
		go func() {
			n, err := w.r.Read(buf)
			ch <- readResult{n, err}
		}()
		w.pending = ch
	}
	select {
	case res := <-w.pending:
		w.pending = nil
		// size <= len(p) when the Read started: it all fits.
		return copy(p, w.buf[:res.n]), res.err
	case <-w.ctx.Done():
		return 0, w.ctx.Err()
	}
}

// ErrShrank is a file that got shorter while it was read: truncated under the reader
// (logrotate's copytruncate does it to a live log), so what was read is not one state of it.
var ErrShrank = errors.New("the file got shorter while it was read (truncated, by log rotation say)")

// TooLargeError is an input refused for its size: Name (a path, "stdin") holds more than Limit
// bytes, more than any input of its kind.
type TooLargeError struct {
	Name  string
	Limit int64
}

func (e *TooLargeError) Error() string {
	return fmt.Sprintf("%s is larger than %s", e.Name, Size(e.Limit))
}

// ReadAll reads r (named name in errors) whole, but no more than limit bytes: a larger input is
// a *TooLargeError, found after reading limit+1 bytes, however long the input (/dev/zero). It
// reads into chunks and joins them at the end, so that refusing an input holds about limit
// bytes, not the twice as much of a doubling buffer.
func ReadAll(r io.Reader, name string, limit int64) ([]byte, error) {
	var chunks [][]byte
	var total int64
	size := 64 << 10
	for {
		c := make([]byte, 0, size)
		n, err := io.ReadFull(r, c[:size])
		c = c[:n]
		if n > 0 {
			chunks = append(chunks, c)
			total += int64(n)
		}
		if total > limit {
			return nil, &TooLargeError{Name: name, Limit: limit}
		}
		if err == io.EOF || err == io.ErrUnexpectedEOF {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", name, err)
		}
		size = min(size*2, 8<<20)
	}
	switch len(chunks) {
	case 0:
		return []byte{}, nil // as io.ReadAll
	case 1:
		return chunks[0], nil
	}
	b := make([]byte, 0, total)
	for _, c := range chunks {
		b = append(b, c...)
	}
	return b, nil
}

// ReadFile is os.ReadFile bounded as ReadAll is. Its errors are those of os.ReadFile (a
// *fs.PathError for a file that cannot be opened) or a *TooLargeError; a regular file is refused
// for its size before it is read.
func ReadFile(name string, limit int64) ([]byte, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if st, err := f.Stat(); err == nil && st.Mode().IsRegular() && st.Size() > limit {
		return nil, &TooLargeError{Name: name, Limit: limit}
	}
	return ReadAll(f, name, limit)
}

// Size says a byte count in the largest binary unit that divides it (64 MiB, 1 KiB, 100 bytes).
func Size(n int64) string {
	switch {
	case n >= 1<<30 && n%(1<<30) == 0:
		return fmt.Sprintf("%d GiB", n>>30)
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d bytes", n)
}
