package nccl

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"hash/maphash"
	"io"
	"math/rand"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/ain-hpc/ain/pkg/input"
)

// refLines is the analyser's historical line reader (bufio.ReadSlice, long lines cut to
// maxLineBytes): the splitter must give exactly these lines.
func refLines(data []byte) [][]byte {
	br := bufio.NewReaderSize(bytes.NewReader(data), 256<<10)
	var out [][]byte
	for {
		chunk, err := br.ReadSlice('\n')
		line := append([]byte(nil), chunk...)
		for err == bufio.ErrBufferFull {
			chunk, err = br.ReadSlice('\n')
			if len(line) < maxLineBytes {
				line = append(line, chunk[:min(len(chunk), maxLineBytes-len(line))]...)
			}
		}
		if len(line) > maxLineBytes {
			line = line[:maxLineBytes]
		}
		if len(line) > 0 {
			out = append(out, line)
		}
		if err != nil {
			return out
		}
	}
}

// splitBlock is the most a block holds: a carried line start and a read.
const splitBlock = maxLineBytes + splitRead

func splitAll(t *testing.T, r io.Reader, src *mapSource, read int) ([][]byte, error) {
	t.Helper()
	var known atomic.Pointer[knownLines]
	s := startSplit(r, src, maphash.MakeSeed(), &known, nil, read)
	defer s.close()
	var lines [][]byte
	for {
		b := s.next()
		for i, kind := range b.kinds {
			l := b.buf[b.starts[i]:b.ends[i]] // no known repeats: every line is kept
			if len(l) > 0 {
				lines = append(lines, append([]byte(nil), l...))
			}
			if (kind == kindSkip) == bytes.Contains(l, bNCCL) || kind != kindSkip && kind != kindParse {
				t.Errorf("line %q: kind %d", l, kind)
			}
		}
		err := b.err
		s.release(b)
		if err == io.EOF {
			return lines, nil
		}
		if err != nil {
			return lines, err
		}
	}
}

// TestSplitLines: the splitter gives the same lines as the historical reader on inputs whose lines
// cross blocks, exceed maxLineBytes (cut) or the block size, lack a final newline or are empty.
func TestSplitLines(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	var big bytes.Buffer
	for big.Len() < 3*splitBlock {
		n := rng.Intn(300)
		switch rng.Intn(50) {
		case 0:
			n = maxLineBytes + rng.Intn(splitBlock) // longer than a kept line, maybe than a block
		case 1:
			n = maxLineBytes - 1 + rng.Intn(3)
		case 2:
			n = 0
		}
		if rng.Intn(2) == 0 && n < maxRepeatLine {
			// NCCL lines, few distinct, so that blocks number copies of a line with one id.
			big.WriteString("h:1:1 [0] NCCL INFO ")
			n = rng.Intn(8)
		}
		big.WriteString(strings.Repeat(string(rune('a'+rng.Intn(26))), n))
		big.WriteByte('\n')
	}
	cases := map[string][]byte{
		"random":          big.Bytes(),
		"no final \\n":    []byte("a\nbb\nccc"),
		"empty":           nil,
		"only newlines":   []byte("\n\n\n"),
		"crlf":            []byte("x\r\ny\r\n"),
		"one long":        bytes.Repeat([]byte("z"), 3*splitBlock+7),
		"long then short": append(bytes.Repeat([]byte("q"), maxLineBytes+10), []byte("\nshort\n")...),
	}
	for name, data := range cases {
		path := filepath.Join(t.TempDir(), "log")
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		for _, c := range []struct {
			read   int
			mapped bool
		}{{0, false}, {64 << 10, false}, {0, true}, {64 << 10, true}, {5000, true}} { // 64 KiB: lines also carried across many blocks; 5000: windows not page-aligned
			t.Run(fmt.Sprintf("%s/read=%d/mapped=%v", name, c.read, c.mapped), func(t *testing.T) {
				r, src := iotestOneByteOrHalf(data), (*mapSource)(nil)
				if c.mapped {
					f, err := os.Open(path)
					if err != nil {
						t.Fatal(err)
					}
					defer f.Close()
					if r, src = f, mappable(f, 0); src == nil && runtime.GOOS == "linux" {
						t.Fatal("a regular file not mapped")
					}
				}
				got, err := splitAll(t, r, src, c.read)
				if err != nil {
					t.Fatal(err)
				}
				want := refLines(data)
				if len(got) != len(want) {
					t.Fatalf("%d lines, want %d", len(got), len(want))
				}
				for i := range got {
					if !bytes.Equal(got[i], want[i]) {
						t.Fatalf("line %d: %d bytes %q..., want %d bytes %q...", i, len(got[i]), got[i][:min(len(got[i]), 20)], len(want[i]), want[i][:min(len(want[i]), 20)])
					}
				}
			})
		}
	}
}

// iotestOneByteOrHalf returns short reads, as pipes and sockets do.
func iotestOneByteOrHalf(b []byte) io.Reader { return &shortReader{b: b} }

type shortReader struct {
	b []byte
	n int
}

func (r *shortReader) Read(p []byte) (int, error) {
	if len(r.b) == 0 {
		return 0, io.EOF
	}
	r.n++
	k := min(len(p), len(r.b), 1+r.n%70000)
	copy(p, r.b[:k])
	r.b = r.b[k:]
	return k, nil
}

// TestFeedReadError: a read error is returned with the input's name, and the lines read before it
// are analysed.
func TestFeedReadError(t *testing.T) {
	a := NewLogAnalyzer()
	r := io.MultiReader(strings.NewReader("h:1:1 [0] NCCL INFO Using network IB\n"), errReader{})
	err := a.Feed("rank3.log", r)
	if err == nil || !strings.Contains(err.Error(), "reading rank3.log: disk on fire") {
		t.Fatalf("err %v", err)
	}
	if a.Report().Transport != TransportIB {
		t.Errorf("lines before the error were not analysed")
	}
}

type errReader struct{}

func (errReader) Read([]byte) (int, error) { return 0, errors.New("disk on fire") }

// zeroReader is an endless input without a newline, like /dev/zero.
type zeroReader struct{ n int64 }

func (z *zeroReader) Read(p []byte) (int, error) { clear(p); z.n += int64(len(p)); return len(p), nil }

// TestFeedEndlessLine: a line with no end (/dev/zero) is an *input.LineTooLongError naming its
// line and the bound once past maxLongLine, instead of being skipped for as long as the input
// lasts (doctor nccl-log /dev/zero spun at full CPU for minutes); a long line under the bound is
// still read cut, with the lines after it.
func TestFeedEndlessLine(t *testing.T) {
	z := &zeroReader{}
	a := NewLogAnalyzer()
	err := a.Feed("", io.MultiReader(strings.NewReader("NCCL INFO a\n"), z))
	var long *input.LineTooLongError
	if !errors.As(err, &long) || long.Line != 2 || long.Limit != maxLongLine {
		t.Fatalf("Feed: %v (%#v)", err, long)
	}
	if z.n > maxLongLine+8*(maxLineBytes+splitRead) {
		t.Errorf("read %d bytes of an endless line, bound %d", z.n, maxLongLine)
	}
	in := "x NCCL INFO " + strings.Repeat("y", 3*maxLineBytes) + "\nh:1:1 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/IB ; OOB eth0:10.0.0.1<0>\n"
	a = NewLogAnalyzer()
	if err := a.Feed("", strings.NewReader(in)); err != nil {
		t.Fatal(err)
	}
	if r := a.Report(); r.Lines != 2 {
		t.Errorf("a 3 MiB line and one after it: %d lines read", r.Lines)
	}
}
