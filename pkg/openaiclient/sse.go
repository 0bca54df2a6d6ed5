package openaiclient

import (
	"bytes"
	"io"
	"time"
)

// The benchmark reads server-sent events itself rather than through go-openai's stream:
// go-openai runs a regular expression over every line and decodes every chunk into a fresh
// struct (several allocations per token) and hands chunks over only after parsing, so the
// time a benchmark could take is when parsing finished, not when the bytes arrived. With
// thousands of streams on two cores that skews exactly what is measured (ITL, TPOT).
//
// SSEReader timestamps every Read of the response body as it returns, and a chunk is
// stamped with the time of the Read that completed its line. Classifying a chunk scans its
// bytes for the two facts the metrics need (are there choices? is there a usage block?)
// without decoding it; the reader allocates nothing per chunk.

// SSEReader splits a response body into "data:" payloads.
type SSEReader struct {
	r     io.Reader
	buf   []byte
	start int // first unconsumed byte
	end   int // end of data read so far
	at    time.Time
	now   func() time.Time
}

func NewSSEReader(r io.Reader, buf []byte, now func() time.Time) *SSEReader {
	return &SSEReader{r: r, buf: buf[:cap(buf)], now: now}
}

// Next returns the next data payload and when its last byte arrived. The payload is valid
// until the following call. At the end of the body it returns io.EOF.
func (s *SSEReader) Next() ([]byte, time.Time, error) {
	for {
		if i := bytes.IndexByte(s.buf[s.start:s.end], '\n'); i >= 0 {
			line := s.buf[s.start : s.start+i]
			s.start += i + 1
			if n := len(line); n > 0 && line[n-1] == '\r' {
				line = line[:n-1]
			}
			if len(line) < 5 || string(line[:5]) != "data:" { // blank lines, comments, event:, id:
				continue
			}
			line = line[5:]
			if len(line) > 0 && line[0] == ' ' {
				line = line[1:]
			}
			return line, s.at, nil
		}
		// Need more bytes: compact, grow if a single line fills the buffer.
		if s.start > 0 {
			n := copy(s.buf, s.buf[s.start:s.end])
			s.start, s.end = 0, n
		}
		if s.end == len(s.buf) {
			nb := make([]byte, 2*len(s.buf))
			copy(nb, s.buf[:s.end])
			s.buf = nb
		}
		n, err := s.r.Read(s.buf[s.end:])
		if n > 0 {
			s.at = s.now()
			s.end += n
		}
		if err != nil {
			if n > 0 && err == io.EOF {
				continue // process what arrived, EOF again on the next Read
			}
			return nil, s.at, err
		}
	}
}
