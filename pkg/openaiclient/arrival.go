package openaiclient

import (
	"context"
	"net"
	"net/http/httptrace"
	"sync/atomic"
	"time"
)

// When bytes arrived
//
// A timestamp taken when a Read of a response body returns is late by whatever ran between the
// bytes' arrival and that Read returning. The largest part is the first chunk of a server or
// proxy that sends no headers before it: the transport's own goroutine reads headers and chunk
// together, parses the headers and hands the response to the caller's goroutine, which with
// hundreds of streams answering at once waits its turn to run. Every connection a Client dials
// records when its last Read from the network returned bytes (one clock read, no allocation), so
// a benchmark can stamp a chunk with when the bytes that completed it were received. An HTTP/1.1
// connection is read by one goroutine at a time (net/http's persistConn: its read loop waits
// while the caller reads the body), so during a body the last Read is the body's.

// arrivalEpoch anchors arrival times on the monotonic clock.
var arrivalEpoch = time.Now()

// arrivalConn records when its last Read returned bytes.
type arrivalConn struct {
	net.Conn
	last atomic.Int64 // time.Since(arrivalEpoch) of that Read; 0: none yet
}

func (c *arrivalConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if n > 0 {
		c.last.Store(int64(time.Since(arrivalEpoch)))
	}
	return n, err
}

// arrivalOf finds the arrivalConn under conn (a TLS connection wraps it).
func arrivalOf(conn net.Conn) *arrivalConn {
	for conn != nil {
		switch c := conn.(type) {
		case *arrivalConn:
			return c
		case interface{ NetConn() net.Conn }:
			conn = c.NetConn()
		default:
			return nil
		}
	}
	return nil
}

// TrackArrival returns the context to send one request with and a function that says how long
// ago the bytes last read from that request's connection were received: after a Read of the
// response body returns, how late a timestamp taken then is. It is 0 until the request has a
// connection, and for a connection this Client did not dial.
func (c *Client) TrackArrival(ctx context.Context) (context.Context, func() time.Duration) {
	var conn atomic.Pointer[arrivalConn]
	ctx = httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{GotConn: func(info httptrace.GotConnInfo) {
		if ac := arrivalOf(info.Conn); ac != nil {
			conn.Store(ac)
		}
	}})
	return ctx, func() time.Duration {
		ac := conn.Load()
		if ac == nil {
			return 0
		}
		last := ac.last.Load()
		if last == 0 {
			return 0
		}
		return max(0, time.Since(arrivalEpoch)-time.Duration(last))
	}
}
