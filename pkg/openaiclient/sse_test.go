package openaiclient_test

import (
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/ain-hpc/ain/pkg/openaiclient"
)

// slowReader returns its input a few bytes at a time, splitting lines across Reads.
type slowReader struct {
	s string
	n int
}

func (r *slowReader) Read(p []byte) (int, error) {
	if r.s == "" {
		return 0, io.EOF
	}
	k := min(r.n, len(p), len(r.s))
	copy(p, r.s[:k])
	r.s = r.s[k:]
	return k, nil
}

func TestSSEReader(t *testing.T) {
	stream := ": ping\n\ndata: {\"a\":1}\r\n\r\nevent: x\ndata:{\"b\":2}\n\n" + "data: " + strings.Repeat("x", 100) + "\n\ndata: [DONE]\n\n"
	tick := 0
	now := func() time.Time { tick++; return time.Unix(0, int64(tick)) }
	r := openaiclient.NewSSEReader(&slowReader{s: stream, n: 7}, make([]byte, 0, 16), now)
	var got []string
	for {
		p, _, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, string(p))
	}
	want := []string{`{"a":1}`, `{"b":2}`, strings.Repeat("x", 100), "[DONE]"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("got %q", got)
	}
}
