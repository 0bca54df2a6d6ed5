// The line splitter: worker goroutines that take turns reading the input in blocks and then, in
// parallel, cut their block into lines, hash them and mark the lines known to repeat (knownLines),
// those without "NCCL " and the COLL lines (log_coll.go), so that the analyser (in the caller's
// goroutine, lines in input order) only counts those and looks up or parses the rest.

package nccl

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/maphash"
	"io"
	"math/bits"
	"runtime"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/ain-hpc/ain/pkg/input"
)

const (
	// A block reads splitRead bytes after the carried start of an unfinished line (< maxLineBytes),
	// into a buffer of maxLineBytes+splitRead bytes whose pages past what is read are never
	// touched (not resident). Each block costs a reading turn and a wake-up: on the 512 MiB benchmark log,
	// 256 KiB reads took ~20% more CPU than 1 MiB ones, and 2 MiB ones saved nothing more but
	// 5 MB of peak RSS.
	splitRead  = 1 << 20
	firstBlock = 64 << 10
	noHash     = 0 // a line that must not be looked up (cut long line, or longer than maxRepeatLine)

	// What a worker found out about a kept line (lineBlock.kinds), and what a line of the known
	// table is (knownLine.kind): kindKnown, or for a TUNING line its tuning choice (>= 0), one
	// call of which each repeat counts.
	kindColl  = -4 // a COLL line (isCollLine): the analyser counts it as an NCCL line, reads nothing else
	kindParse = -3 // the analyser looks the line up and parses it when needed
	kindSkip  = -2 // no "NCCL ": the analyser counts it and reads nothing else (as line does)
	kindKnown = -1 // a known repeat that only counts as an NCCL line
)

// maxSplitWorkers bounds the reading goroutines: more cores than this do not make a log read
// from one file faster, and each worker holds one block in flight.
const maxSplitWorkers = 4

// lineBlock is a run of whole lines. The lines the analyser reads are kept: the j-th of them is
// buf[starts[j]:ends[j]] ('\n' included when present), with hash hashes[j] and kinds[j] what its
// worker found out about it. In a block split before the known table exists every line is kept
// (the j-th is line j of the block), known repeats being found by the analyser. Once the table
// exists, the lines that only count (known repeats, COLL lines, lines without "NCCL ") are
// counted by the worker instead of kept, and at[j] is the kept line's number in the block: on a
// long log the analyser then reads a few lines a block instead of every one.
type lineBlock struct {
	buf          []byte
	mapping      []byte // the file's pages that buf lies in (a mapped input), unmapped by the next fill or close
	mapEnd       int64  // the file offset where buf ends, when mapped
	from, n      int    // the block's lines lie in buf[from:n]; what follows n is the next line's start
	lines        int    // lines in the block
	kinds        []int32
	starts, ends []int32
	hashes       []uint64
	err          error // set on the last block: io.EOF or the read error
	ready        chan struct{}

	counted bool             // lines counted by the worker, only the others kept (at, known, coll, tune, nul)
	at      []int32          // the kept lines' numbers in the block
	known   int64            // known repeats, of which
	tune    [maxTuning]int64 // known TUNING repeats per tuning choice
	coll    int64            // COLL lines
	nul     uint16           // bit i: line i (i < 16) holds a NUL byte (lines 1 to 16 of an input tell binary data)
}

// knownLines is the table of lines whose repeat is known to change nothing but counts: the
// analyser adds a line when a repeat of it was applied from the repeat cache with its evidence
// kind full, a state that never reverts within an input. The workers, which split blocks that
// come later in the input than any line the analyser has seen, may then mark every copy of it as
// counted without a look-up by the analyser. Slots are written once per input (direct-mapped: a
// line whose slot is taken stays with the analyser's cache), read concurrently. A known line
// needs no hash: only lines the analyser looks up are hashed.
type knownLines struct {
	slots   []atomic.Pointer[knownLine]
	longest atomic.Int64 // the length of the longest line added: a longer one is not looked up
}

type knownLine struct {
	line []byte
	kind int32 // kindKnown or a tuning index
}

const (
	knownBits  = 13
	knownSlots = 1 << knownBits // bounded memory: knownSlots x maxRepeatLine at most
)

// knownSlot picks line's slot from its length and 7 of its 8-byte words (the first three, where
// launcher prefixes and host:pid:tid headers differ, two in the middle and the last two), mixed
// by three independent multiplications: a few nanoseconds where a hash of the whole line takes
// several times that, and it is computed for every line. Two known lines alike in those bytes
// only share a slot; the one left out is looked up by the analyser as before (never a wrong
// answer: a slot's line is compared in full). Shorter lines take the slot of their full hash.
func knownSlot(seed maphash.Seed, line []byte) uint64 {
	n := len(line)
	if n < 32 {
		return maphash.Bytes(seed, line) >> (64 - knownBits)
	}
	w := func(i int) uint64 { return binary.LittleEndian.Uint64(line[i:]) }
	a := w(0) ^ bits.RotateLeft64(w(8), 21) ^ uint64(n)
	b := w(16) ^ bits.RotateLeft64(w(n/2-8), 42)
	c := w(n/2) ^ bits.RotateLeft64(w(n-16), 13) ^ bits.RotateLeft64(w(n-8), 34)
	h := a*0x9e3779b97f4a7c15 ^ b*0xc2b2ae3d27d4eb4f ^ c*0x165667b19e3779f9
	return h >> (64 - knownBits)
}

func (t *knownLines) lookup(slot uint64, line []byte) (int32, bool) {
	k := t.slots[slot].Load()
	if k == nil || !bytes.Equal(k.line, line) {
		return 0, false
	}
	return k.kind, true
}

// add records line (copied) unless its slot is taken; only the analyser's goroutine adds.
func (t *knownLines) add(slot uint64, line []byte, tune int) {
	p := &t.slots[slot]
	if p.Load() != nil {
		return
	}
	kind := int32(kindKnown)
	if tune >= 0 {
		kind = int32(tune)
	}
	p.Store(&knownLine{line: append([]byte(nil), line...), kind: kind})
	if int64(len(line)) > t.longest.Load() {
		t.longest.Store(int64(len(line)))
	}
}

// splitter hands out blocks in input order. The workers read in turn (mu), so the input is read
// sequentially and stdin stays a stream; they split in parallel.
type splitter struct {
	r    io.Reader
	src  *mapSource // a regular file read by mapping it (log_map.go), else nil: r is read
	seed maphash.Seed

	mu       sync.Mutex // the reading turn, and what follows
	carry    []byte     // the unfinished last line of the previous block
	carryLen int        // its length, when src maps the file (the line lies right before src.off)
	skipping bool       // inside a cut long line: drop input up to its '\n'
	skipped  int64      // bytes of the cut long line so far, at most maxLongLine
	size     int        // bytes the next block reads: firstBlock (small inputs need no more), then read
	read     int        // splitRead, or less in tests (many blocks from a small input)
	done     bool       // the last block was read

	known *atomic.Pointer[knownLines] // the analyser's, set once it has read knownAfter lines

	nblocks int             // blocks made, at most the capacity of order and free
	order   chan *lineBlock // blocks in input order; sends never wait
	free    chan *lineBlock
	stop    chan struct{}
	wg      sync.WaitGroup
}

// startSplit starts the workers on r; blocks kept from an earlier input are reused. The caller
// takes blocks with next, gives each back with release and calls close at the end.
func startSplit(r io.Reader, src *mapSource, seed maphash.Seed, known *atomic.Pointer[knownLines], blocks []*lineBlock, read int) *splitter {
	workers := min(max(runtime.GOMAXPROCS(0), 1), maxSplitWorkers)
	n := max(workers+1, len(blocks)) // one block to analyse while each worker fills one
	if read <= 0 || read > splitRead {
		read = splitRead
	}
	c := max(workers+2, n) // and a spare (addSpare)
	s := &splitter{r: r, src: src, seed: seed, known: known, size: min(firstBlock, read), read: read, nblocks: n,
		order: make(chan *lineBlock, c), free: make(chan *lineBlock, c), stop: make(chan struct{})}
	for _, b := range blocks {
		s.free <- b
	}
	for range n - len(blocks) {
		s.free <- &lineBlock{ready: make(chan struct{}, 1)} // its buffer is made by fill
	}
	s.wg.Add(workers)
	for range workers {
		go s.work()
	}
	return s
}

// addSpare gives the workers one block more than they fill and the analyser reads, once the
// analyser has made the known table, so that a worker done with its block finds another while
// the analyser reads the oldest (with work's wait for a block outside the reading turn, ~10%
// less wall time on 2 cores, 512 MiB COLL log; a second spare did not help). Not before: the
// blocks split before the table exists keep every line, and a spare would let the workers split
// one more of them (and a short input needs none).
func (s *splitter) addSpare() {
	if s.nblocks < cap(s.free) {
		s.nblocks++
		s.free <- &lineBlock{ready: make(chan struct{}, 1)}
	}
}

// work reads and splits blocks until the input ends or the splitter stops. A worker waits for a
// free block before its reading turn, not during it, so that a worker waiting for the analyser
// to give a block back never holds up one that has a block to fill.
func (s *splitter) work() {
	defer s.wg.Done()
	if s.src != nil {
		debug.SetPanicOnFault(true) // this goroutine's own setting (guard)
	}
	for {
		var b *lineBlock
		select {
		case b = <-s.free:
		case <-s.stop:
			return
		}
		s.mu.Lock()
		if s.done {
			s.mu.Unlock()
			s.free <- b
			return
		}
		if err := guard(b, func() { s.fill(b) }); err != nil {
			b.from, b.n, b.err, s.done = 0, 0, s.src.faultError(b.mapEnd), true
		}
		s.order <- b
		s.mu.Unlock()
		if err := guard(b, func() { b.split(s.seed, s.known.Load()) }); err != nil {
			b.err = s.src.faultError(b.mapEnd) // the lines split before the fault are analysed, then this returned
		}
		b.ready <- struct{}{}
		// The analyser, if it waited for this block, now waits for this P (it was queued to run
		// next on it) until this worker blocks: let it take the block now, so that blocks come
		// back to the free list sooner (~3% less wall time on 2 cores, 512 MiB COLL log).
		runtime.Gosched()
	}
}

// fill reads the next block: the carried line start, then as much input as fits. Whole lines
// stay in the block; an unfinished last line is carried to the next one, unless it is already
// maxLineBytes long: it is then kept (split cuts it) and the rest of it is skipped.
func (s *splitter) fill(b *lineBlock) {
	var err error
	if s.src != nil {
		err = s.fillMapped(b)
	} else {
		err = s.fillRead(b)
	}
	data := b.buf
	b.from, b.n, b.err = 0, len(data), err
	if s.skipping {
		if i := bytes.IndexByte(data, '\n'); i < 0 {
			b.from = len(data)
			if s.skipped += int64(len(data)); s.skipped > maxLongLine && err == nil {
				// No log has such a line: /dev/zero or binary data, which would be read to its end.
				// feedSplit says which line.
				b.err, s.done = &input.LineTooLongError{Limit: maxLongLine}, true
				return
			}
		} else {
			b.from, s.skipping = i+1, false
		}
	}
	if err != nil {
		s.done = true
		return // the last block: its last line needs no '\n'
	}
	tail := data[b.from:]
	tail = tail[bytes.LastIndexByte(tail, '\n')+1:]
	if len(tail) >= maxLineBytes {
		s.skipping, s.skipped = true, int64(len(tail))
		return
	}
	if s.src != nil {
		s.carryLen = len(tail)
	} else {
		s.carry = append(s.carry, tail...)
	}
	b.n -= len(tail)
}

// fillRead reads the carried line start and the next s.size bytes into b.buf.
func (s *splitter) fillRead(b *lineBlock) error {
	if cap(b.buf) < len(s.carry)+s.size { // new, or a first small block outgrown
		c := maxLineBytes + s.read // room for any carried line start
		if s.size < s.read {
			c = s.size // the first block (nothing carried): a small input never needs more
		}
		b.buf = make([]byte, 0, c)
	}
	b.buf = append(b.buf[:0], s.carry...)
	s.carry = s.carry[:0]
	n, err := io.ReadFull(s.r, b.buf[len(b.buf):len(b.buf)+s.size])
	b.buf = b.buf[:len(b.buf)+n]
	if err == nil {
		s.size = s.read // the input fills blocks: full ones from now on
	}
	if errors.Is(err, io.ErrUnexpectedEOF) {
		err = io.EOF
	}
	return err
}

// fillMapped makes b.buf the file's window of the carried line start (the bytes right before
// src.off) and the next s.size bytes: the bytes fillRead would copy, with the same end of input
// (io.EOF once fewer than s.size bytes are left) and the interrupt checked where a Read would.
func (s *splitter) fillMapped(b *lineBlock) error {
	unmap(b.mapping)
	b.buf, b.mapping = nil, nil
	if err := s.src.err(); err != nil {
		return err
	}
	n := min(int64(s.size), s.src.size-s.src.off)
	if n < int64(s.size) {
		// The end as the read began: a live log may have grown since, and a Read would go on
		// to the new end. One that got shorter would read as NUL bytes up to its page's end.
		if err := s.src.restat(); err != nil {
			return err
		}
		n = min(int64(s.size), s.src.size-s.src.off)
	}
	data, mapping, err := s.src.window(s.src.off-int64(s.carryLen), s.src.off+n)
	if err != nil {
		return err
	}
	b.buf, b.mapping, b.mapEnd = data, mapping, s.src.off+n
	s.src.off += n
	s.carryLen = 0
	if n < int64(s.size) {
		return io.EOF
	}
	s.size = s.read
	return nil
}

// split cuts buf[from:n] into lines, hashes them and marks the known repeats (known may be nil),
// the lines without "NCCL " and the COLL lines (log_coll.go); with the known table, it counts
// those instead of keeping them.
func (b *lineBlock) split(seed maphash.Seed, known *knownLines) {
	b.starts, b.ends, b.hashes, b.kinds, b.at = b.starts[:0], b.ends[:0], b.hashes[:0], b.kinds[:0], b.at[:0]
	b.lines, b.counted, b.known, b.coll, b.nul = 0, known != nil, 0, 0, 0
	if b.counted {
		clear(b.tune[:])
	}
	data := b.buf[:b.n]
	longest := 0 // no line of the known table is longer (a line added meanwhile is only missed)
	if known != nil {
		longest = int(known.longest.Load())
	}
	for pos := b.from; pos < len(data); {
		end := len(data) // the input's last line, without '\n', or a line to cut
		if i := bytes.IndexByte(data[pos:], '\n'); i >= 0 {
			end = pos + i + 1
		}
		next := end
		if end-pos > maxLineBytes {
			end = pos + maxLineBytes // a cut long line, as the analyser has always read them
		}
		line, start := data[pos:end], pos
		no := b.lines
		b.lines++
		pos = next
		if b.counted {
			if no < 16 && bytes.IndexByte(line, 0) >= 0 {
				b.nul |= 1 << no
			}
			if len(line) <= longest {
				if k, ok := known.lookup(knownSlot(seed, line), line); ok {
					b.known++
					if k >= 0 {
						b.tune[k]++
					}
					continue
				}
			}
		}
		kind := int32(kindParse)
		h := uint64(noHash)
		if i := indexNCCL(line); i < 0 {
			kind = kindSkip
		} else if isCollLine(line[i:]) {
			kind = kindColl
		} else if len(line) <= maxRepeatLine {
			h = maphash.Bytes(seed, line) | 1 // never noHash
		}
		if b.counted {
			if kind == kindColl {
				b.coll++
			}
			if kind != kindParse {
				continue
			}
			b.at = append(b.at, int32(no))
		}
		b.starts = append(b.starts, int32(start))
		b.ends = append(b.ends, int32(end))
		b.hashes = append(b.hashes, h)
		b.kinds = append(b.kinds, kind)
	}
}

// next returns the next block in input order, once split.
func (s *splitter) next() *lineBlock {
	b := <-s.order
	<-b.ready
	return b
}

func (s *splitter) release(b *lineBlock) { s.free <- b }

// close stops the workers and returns the blocks for reuse by the next input. The workers are
// gone when it returns, so the caller may close the reader.
func (s *splitter) close() []*lineBlock {
	close(s.stop)
	s.wg.Wait()
	var blocks []*lineBlock
	for len(s.order) > 0 { // read but not analysed (an early return)
		b := <-s.order
		<-b.ready
		blocks = append(blocks, b)
	}
	for len(s.free) > 0 {
		blocks = append(blocks, <-s.free)
	}
	if s.src != nil {
		for _, b := range blocks {
			unmap(b.mapping)
			b.buf, b.mapping = nil, nil // a read of the next input makes its own buffer
		}
		s.src.done()
	}
	return blocks
}

// feedSplit is Feed's loop over the splitter's blocks.
// src maps r's file, or is nil (r is read).
func (a *LogAnalyzer) feedSplit(name string, r io.Reader, src *mapSource) error {
	if t := a.known.Load(); t != nil {
		clear(t.slots) // no worker runs between inputs
	}
	s := startSplit(r, src, a.rc.seed, &a.known, a.blocks, a.splitRead)
	defer func() { a.blocks = s.close() }()
	if src != nil {
		// The analyser reads the kept lines in the mapping too.
		defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	}
	lineNo := 0
	for {
		b := s.next()
		if err := guard(b, func() { a.analyseBlock(b, name, &lineNo) }); err != nil {
			err = src.faultError(b.mapEnd)
			s.release(b)
			return fmt.Errorf("reading %s: %w", displayName(name), err)
		}
		if a.known.Load() != nil {
			s.addSpare()
		}
		err := b.err
		s.release(b)
		if err == io.EOF {
			return nil
		}
		var long *input.LineTooLongError
		if errors.As(err, &long) {
			long.Line = lineNo // the cut line is the last one counted
			return long
		}
		if err != nil {
			return fmt.Errorf("reading %s: %w", displayName(name), err)
		}
	}
}

// analyseBlock feeds a block's kept lines to the analyser in order, and adds up what the others
// count.
func (a *LogAnalyzer) analyseBlock(b *lineBlock, name string, lineNo *int) {
	base := *lineNo
	reached := base // the analyser's marks (growAfter, knownAfter) are passed up to this line
	var coll int64
	for j, kind := range b.kinds {
		no := base + 1 + j
		if b.counted {
			no = base + 1 + int(b.at[j])
		}
		a.reach(reached, no)
		reached = no
		line := b.buf[b.starts[j]:b.ends[j]]
		if no <= 16 && bytes.IndexByte(line, 0) >= 0 {
			a.sawBinary(name)
		}
		if a.rc.off {
			a.line(no, line)
			continue
		}
		if kind == kindSkip {
			continue
		}
		if kind == kindColl { // what line does with it; kept above so that the cache off parses it
			coll++
			continue
		}
		h := b.hashes[j]
		if h == noHash {
			a.line(no, line)
			continue
		}
		e, done := a.repeatHashed(h, line)
		if done {
			if t := a.known.Load(); t != nil {
				t.add(knownSlot(a.rc.seed, line), line, e.tune)
			}
			continue
		}
		a.rc.offer = repeatOffer{}
		a.line(no, line)
		a.remember(e, line)
	}
	end := base + b.lines
	a.reach(reached, end)
	// What the worker counted. A known repeat counts as an NCCL line and, for a TUNING line, one
	// call of its choice (which exists: the line was parsed before it was known), in any order.
	if b.counted {
		if base < 16 && b.nul&uint16(1<<(16-base)-1) != 0 {
			a.sawBinary(name)
		}
		for k := range min(len(a.tuning), len(b.tune)) {
			a.tuning[k].Count += b.tune[k]
		}
		coll += b.coll
		a.ncclLines += b.known
		a.rc.hits += b.known
		a.rc.known += b.known
	}
	a.lines += int64(b.lines)
	a.ncclLines += coll
	a.collLines += coll
	*lineNo = end
}

// reach passes the analyser's marks between line from (excluded) and line to, as the lines in
// between are read: the repeat cache grows at line growAfter of an input and the known table is
// made at line knownAfter. The lines the workers counted need neither, so passing the marks
// at the next kept line, or at the end of the block, is the same as passing them in order.
func (a *LogAnalyzer) reach(from, to int) {
	if from < growAfter && growAfter <= to {
		a.rc.grow()
	}
	if from < a.knownAfter && a.knownAfter <= to && a.known.Load() == nil && !a.rc.off {
		a.known.Store(&knownLines{slots: make([]atomic.Pointer[knownLine], knownSlots)})
	}
}

// sawBinary notes a NUL byte in one of lines 1 to 16 of the input name: binary data, not a log.
func (a *LogAnalyzer) sawBinary(name string) {
	if a.binarySeen {
		return
	}
	a.binary, a.binarySeen = "the "+displayName(name), true
	if name != "" {
		a.binary = name
	}
}

// errFault is a fault on a page of a block's mapping (guard): the file got shorter (a SIGBUS on
// the pages past its new end, which debug.SetPanicOnFault turns into a panic), or its pages
// could not be read (an I/O error): mapSource.faultError says which.
var errFault = errors.New("fault on a mapped page")

// guard runs f, and returns errFault if f faulted on a page of b's mapping (in a goroutine
// that set debug.SetPanicOnFault: the mapping is readable, so a fault in it is a page the file
// cannot give). Any other panic goes on, a fault elsewhere (a bug) included.
func guard(b *lineBlock, f func()) (err error) {
	defer func() {
		if r := recover(); r != nil {
			if fault, ok := r.(interface{ Addr() uintptr }); ok && b.mapped(fault.Addr()) {
				err = errFault
				return
			}
			panic(r)
		}
	}()
	f()
	return nil
}

// mapped says whether addr lies in b's mapping.
func (b *lineBlock) mapped(addr uintptr) bool {
	if len(b.mapping) == 0 {
		return false
	}
	start := uintptr(unsafe.Pointer(unsafe.SliceData(b.mapping)))
	return start <= addr && addr-start < uintptr(len(b.mapping))
}
