package openaiclient

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"sync/atomic"
	"time"
)

// A model server can be alive and answer nothing: /health answers 200 while the engine waits
// on a hung NCCL group, so a request gets its headers (vLLM's StreamingResponse sends them
// before the first token) and then no byte, for ever. Every request ain sends is bounded twice:
// the first byte of the answer must come within Options.FirstByteTimeout of sending it, and in
// a streamed answer no gap between bytes may exceed Options.IdleTimeout. A bound that passes
// ends the request with a *StallError.

// StallError is an answer that stopped coming.
type StallError struct {
	// FirstByte is true when no byte of the answer came at all.
	FirstByte bool
	// Bound is the bound that passed; Flag the command-line flag that sets it.
	Bound time.Duration
	Flag  string
}

func (e *StallError) Error() string {
	if e.FirstByte {
		return fmt.Sprintf("no byte of the answer within %s of sending the request (%s)", e.Bound, e.Flag)
	}
	return fmt.Sprintf("the answer stopped: no byte for %s (%s)", e.Bound, e.Flag)
}

// Flags that set the bounds, for the messages of a *StallError.
const (
	FirstByteTimeoutFlag = "--ttfb-timeout"
	IdleTimeoutFlag      = "--idle-timeout"
)

// watchdog ends a request whose answer stalls.
type watchdog struct {
	r       io.ReadCloser
	timer   *time.Timer
	idle    time.Duration
	started atomic.Bool // a byte of the answer arrived
}

// Watch returns the context to send a request with and a function that wraps the response
// body; done stops the watch and must be called when the request is over. Without bounds the
// context is ctx and the body is left as it is.
func (c *Client) Watch(ctx context.Context) (wctx context.Context, body func(io.ReadCloser) io.ReadCloser, done func()) {
	ttfb, idle := c.opts.FirstByteTimeout, c.opts.IdleTimeout
	if ttfb <= 0 && idle <= 0 {
		return ctx, func(r io.ReadCloser) io.ReadCloser { return r }, func() {}
	}
	wctx, cancel := context.WithCancelCause(ctx)
	w := &watchdog{idle: idle}
	first := ttfb
	if first <= 0 {
		first = math.MaxInt64 // no bound until the first byte
	}
	w.timer = time.AfterFunc(first, func() {
		if w.started.Load() {
			cancel(&StallError{Bound: idle, Flag: IdleTimeoutFlag})
			return
		}
		cancel(&StallError{FirstByte: true, Bound: ttfb, Flag: FirstByteTimeoutFlag})
	})
	body = func(r io.ReadCloser) io.ReadCloser {
		w.r = r
		return w
	}
	return wctx, body, func() {
		w.timer.Stop()
		cancel(nil)
	}
}

// Read passes the body on and rearms the idle bound after every byte that arrives. It
// allocates nothing.
func (w *watchdog) Read(p []byte) (int, error) {
	n, err := w.r.Read(p)
	if n > 0 {
		w.started.Store(true)
		if w.idle > 0 {
			w.timer.Reset(w.idle)
		} else {
			w.timer.Stop()
		}
	}
	return n, err
}

func (w *watchdog) Close() error { return w.r.Close() }

// Stalled returns the *StallError that ended wctx, or err itself.
func Stalled(wctx context.Context, err error) error {
	var se *StallError
	if cause := context.Cause(wctx); errors.As(cause, &se) {
		return se
	}
	return err
}
