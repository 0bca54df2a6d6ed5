// The line splitter: a reader goroutine that cuts the input into lines and hashes them, so that
// the analyser (in the caller's goroutine, lines in order) only looks lines up and parses misses.

package nccl

import (
	"bytes"
	"errors"
	"fmt"
	"hash/maphash"
	"io"
)

const (
	splitBlock  = 5 << 18 // 1.25 MiB per block; > maxLineBytes so a kept line always fits
	splitBlocks = 2       // blocks in flight (one filled, one analysed): 2.5 MiB at most
	firstBlock  = 64 << 10
	noHash      = 0 // a line that must not be looked up (cut long line)
)

// lineBlock is a run of whole lines: buf[starts[i]:ends[i]] is line i ('\n' included when present).
type lineBlock struct {
	buf          []byte
	starts, ends []int32
	hashes       []uint64
	err          error // set on the last block: io.EOF or the read error
}

// splitLines reads r and sends blocks of lines to out, in order, reusing blocks that come back on
// free. A line longer than maxLineBytes keeps its first maxLineBytes and is marked noHash.
func splitLines(r io.Reader, seed maphash.Seed, out chan<- *lineBlock, free <-chan *lineBlock, have int, stop <-chan struct{}) {
	defer close(out)
	var carry []byte   // the unfinished last line of the previous block
	allocated := have  // blocks already in free (kept from an earlier input)
	skipping := false  // inside a cut long line: drop input up to its '\n'
	size := firstBlock // small inputs (a pod's log, a pasted excerpt) never need a full block
	for {
		var b *lineBlock
		select {
		case b = <-free:
		default:
			if allocated < splitBlocks { // a small input never needs the second block
				allocated++
				b = &lineBlock{buf: make([]byte, 0, size)}
				break
			}
			select {
			case b = <-free:
			case <-stop:
				return
			}
		}
		if cap(b.buf) < size {
			b.buf = make([]byte, 0, size) // a first small block, outgrown
		}
		b.buf, b.starts, b.ends, b.hashes, b.err = append(b.buf[:0], carry...), b.starts[:0], b.ends[:0], b.hashes[:0], nil
		carry = carry[:0]
		n, err := io.ReadFull(r, b.buf[len(b.buf):cap(b.buf)])
		b.buf = b.buf[:len(b.buf)+n]
		if err == nil {
			size = splitBlock // the input fills blocks: use full ones (they also hold the longest kept line)
		}
		if errors.Is(err, io.ErrUnexpectedEOF) {
			err = io.EOF
		}
		data := b.buf
		pos := 0
		if skipping {
			i := indexNL(data)
			if i < 0 {
				pos = len(data)
			} else {
				pos, skipping = i+1, false
			}
		}
		for pos < len(data) {
			i := indexNL(data[pos:])
			if i < 0 {
				break
			}
			end := pos + i + 1
			b.add(seed, data, pos, end)
			pos = end
		}
		rest := data[pos:]
		switch {
		case err != nil && len(rest) > 0:
			b.add(seed, data, pos, len(data)) // the last line, without '\n'
		case len(rest) >= maxLineBytes:
			// A line longer than maxLineBytes: keep its start, drop the rest up to its '\n'.
			b.starts = append(b.starts, int32(pos))
			b.ends = append(b.ends, int32(pos+maxLineBytes))
			b.hashes = append(b.hashes, noHash)
			skipping = true
		default:
			carry = append(carry, rest...)
		}
		b.err = err
		select {
		case out <- b:
		case <-stop:
			return
		}
		if err != nil {
			return
		}
	}
}

func (b *lineBlock) add(seed maphash.Seed, data []byte, start, end int) {
	h := uint64(noHash)
	if end-start > maxLineBytes {
		end = start + maxLineBytes // a cut long line, as the analyser has always read them
	} else if end-start <= maxRepeatLine {
		h = maphash.Bytes(seed, data[start:end]) | 1 // never noHash
	}
	b.starts = append(b.starts, int32(start))
	b.ends = append(b.ends, int32(end))
	b.hashes = append(b.hashes, h)
}

func indexNL(b []byte) int { return bytes.IndexByte(b, '\n') }

// feedSplit is Feed's loop over the splitter's blocks.
func (a *LogAnalyzer) feedSplit(name string, r io.Reader) error {
	out := make(chan *lineBlock, splitBlocks-1)
	free := make(chan *lineBlock, splitBlocks)
	stop := make(chan struct{})
	for _, b := range a.blocks { // reuse the blocks of the previous input (one log per rank: many Feeds)
		free <- b
	}
	go splitLines(r, a.rc.seed, out, free, len(a.blocks), stop)
	defer func() {
		close(stop)
		for range out { // let the splitter finish before the reader is closed by the caller
		}
		a.blocks = a.blocks[:0]
		for len(free) > 0 {
			a.blocks = append(a.blocks, <-free)
		}
	}()
	lineNo := 0
	for b := range out {
		for i := range b.starts {
			line := b.buf[b.starts[i]:b.ends[i]]
			if len(line) == 0 {
				continue
			}
			lineNo++
			a.lines++
			if lineNo == growAfter {
				a.rc.grow()
			}
			if lineNo <= 16 && !a.binarySeen && bytes.IndexByte(line, 0) >= 0 {
				a.binary, a.binarySeen = "the "+displayName(name), true
				if name != "" {
					a.binary = name
				}
			}
			h := b.hashes[i]
			if h == noHash || a.rc.off {
				a.line(lineNo, line)
				continue
			}
			e, done := a.repeatHashed(h, line)
			if done {
				continue
			}
			a.rc.offer = repeatOffer{}
			a.line(lineNo, line)
			a.remember(e, line)
		}
		err := b.err
		free <- b
		if err != nil && err != io.EOF {
			return fmt.Errorf("reading %s: %w", displayName(name), err)
		}
	}
	return nil
}
