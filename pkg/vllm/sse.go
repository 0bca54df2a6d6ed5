package vllm

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
// sseReader timestamps every Read of the response body as it returns, and a chunk is
// stamped with the time of the Read that completed its line. Classifying a chunk scans its
// bytes for the two facts the metrics need (are there choices? is there a usage block?)
// without decoding it; the reader allocates nothing per chunk.

// sseReader splits a response body into "data:" payloads.
type sseReader struct {
	r     io.Reader
	buf   []byte
	start int // first unconsumed byte
	end   int // end of data read so far
	at    time.Time
	now   func() time.Time
}

func newSSEReader(r io.Reader, buf []byte, now func() time.Time) *sseReader {
	return &sseReader{r: r, buf: buf[:cap(buf)], now: now}
}

// next returns the next data payload and when its last byte arrived. The payload is valid
// until the following call. At the end of the body it returns io.EOF.
func (s *sseReader) next() ([]byte, time.Time, error) {
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

// chunkInfo is what the metrics need from one chat completion chunk.
type chunkInfo struct {
	choices bool // a non-empty "choices" list
	text    bool // the delta carries non-empty content
	usage   int  // usage.completion_tokens, -1 when absent or null
	prompt  int  // usage.prompt_tokens, -1 when absent or null
	isError bool // an error object instead of a chunk
}

var (
	keyChoices    = []byte(`"choices"`)
	keyUsage      = []byte(`"usage"`)
	keyCompletion = []byte(`"completion_tokens"`)
	keyPrompt     = []byte(`"prompt_tokens"`)
	keyContent    = []byte(`"content"`)
	keyText       = []byte(`"text"`)
	keyReasoning  = []byte(`"reasoning"`)
	keyReasonOld  = []byte(`"reasoning_content"`)
	// textKeys carry a chunk's text: the answer (chat content, completions text) or a
	// reasoning model's thinking (reasoning since vLLM PR #27752; reasoning_content before,
	// removed by PR #33402).
	textKeys    = [][]byte{keyContent, keyText, keyReasoning, keyReasonOld}
	keyError    = []byte(`"error"`)
	keyObjError = []byte(`"object":"error"`)
)

// classify scans a chunk's JSON. A key such as "choices" cannot occur inside a JSON string
// value unescaped, so finding it finds the key.
func classify(p []byte) chunkInfo {
	ci := chunkInfo{usage: -1, prompt: -1}
	if v, ok := valueAfter(p, keyChoices); ok {
		if len(v) > 0 && v[0] == '[' {
			v = skipSpace(v[1:])
			ci.choices = len(v) > 0 && v[0] != ']'
		}
		if ci.choices {
			for _, k := range textKeys {
				c, ok := valueAfter(v, k)
				if ok && len(c) > 1 && c[0] == '"' && c[1] != '"' {
					ci.text = true
					break
				}
			}
		}
	} else if bytes.Contains(p, keyError) || bytes.Contains(p, keyObjError) {
		ci.isError = true
		return ci
	}
	if v, ok := valueAfter(p, keyUsage); ok && len(v) > 0 && v[0] == '{' {
		if n, ok := valueAfter(v, keyCompletion); ok {
			ci.usage = atoi(n)
		}
		if n, ok := valueAfter(v, keyPrompt); ok {
			ci.prompt = atoi(n)
		}
	}
	return ci
}

// valueAfter returns the bytes from the value of key on.
func valueAfter(p, key []byte) ([]byte, bool) {
	i := bytes.Index(p, key)
	if i < 0 {
		return nil, false
	}
	v := skipSpace(p[i+len(key):])
	if len(v) == 0 || v[0] != ':' {
		return nil, false
	}
	return skipSpace(v[1:]), true
}

func skipSpace(p []byte) []byte {
	for len(p) > 0 && (p[0] == ' ' || p[0] == '\t' || p[0] == '\n' || p[0] == '\r') {
		p = p[1:]
	}
	return p
}

func atoi(p []byte) int {
	n, any := 0, false
	for _, c := range p {
		if c < '0' || c > '9' {
			break
		}
		n, any = n*10+int(c-'0'), true
	}
	if !any {
		return -1
	}
	return n
}
