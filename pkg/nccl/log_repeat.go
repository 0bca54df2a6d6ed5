// The repeat cache: the fast path that keeps the analyser near grep's speed on long logs.

package nccl

import (
	"bytes"
	"hash/maphash"
)

// A long NCCL log is mostly the same lines again: each rank prints its TUNING line for every
// collective call and its channel lines for every communicator. Once such a line has been parsed,
// its effect on the analyser is known: a TUNING line adds one call to a TuningChoice, a channel
// line adds nothing new (its process, network and GPUDirect flag are already recorded) once its
// evidence kind is full. The cache maps the exact line (prefix included, so the same process) to
// that effect; a repeat then costs a hash and a compare instead of a parse, with a result that is
// identical by construction (TestRepeatCacheExact compares it with the cache off).
const (
	repeatSlots   = 1 << 12 // direct-mapped; a collision only costs a parse
	firstSlots    = 1 << 8  // a small input never grows the table (TestAnalyzeSmall's budget)
	growAfter     = 1 << 13 // lines after which the table grows to repeatSlots
	maxRepeatLine = 384     // longer lines are never cached (bounded memory: slots x this)
)

type repeatEntry struct {
	line   []byte // the line, '\n' included
	tune   int    // a.tuning index to count, or -1
	evKind string // the evidence kind the line feeds ("" none)
	full   bool   // evKind is known to be full, so a repeat adds no evidence
}

// repeatOffer is what a handler says about the line it just parsed: cacheable, and its effect.
type repeatOffer struct {
	ok     bool
	tune   int
	evKind string
}

type repeatCache struct {
	seed    maphash.Seed
	slots   []repeatEntry
	off     bool // TestRepeatCacheExact turns it off to compare
	offer   repeatOffer
	hits    int64 // repeats applied without a parse, of which
	known   int64 // marked by the splitter's workers (knownLines)
	entries int
}

func (c *repeatCache) reset() {
	if c.slots == nil {
		c.seed = maphash.MakeSeed()
		c.slots = make([]repeatEntry, firstSlots)
	}
	clear(c.slots)
}

// grow enlarges the table for a long input; the cache starts empty again (it is only a cache).
func (c *repeatCache) grow() {
	if len(c.slots) < repeatSlots {
		c.slots = make([]repeatEntry, repeatSlots)
	}
}

// repeatHashed applies a cached line's effect and reports whether it did (returning its entry,
// then full); h is the line's hash under the cache's seed. When it did not, it returns the slot
// the line may be remembered in.
func (a *LogAnalyzer) repeatHashed(h uint64, line []byte) (*repeatEntry, bool) {
	e := &a.rc.slots[h&uint64(len(a.rc.slots)-1)]
	if e.line == nil || !bytes.Equal(e.line, line) {
		return e, false
	}
	if !e.full {
		if e.evKind != "" && len(a.evidence) < maxEvidence && a.evKinds[e.evKind] < maxEvidencePerKind {
			return nil, false // the repeat would still add evidence: parse it
		}
		e.full = true
	}
	a.ncclLines++
	if e.tune >= 0 {
		a.tuning[e.tune].Count++
	}
	a.rc.hits++
	return e, true
}

// remember stores the line in slot e when its handler offered it.
func (a *LogAnalyzer) remember(e *repeatEntry, line []byte) {
	o := a.rc.offer
	a.rc.offer = repeatOffer{}
	if e == nil || !o.ok {
		return
	}
	if e.line == nil {
		a.rc.entries++
	}
	e.line = append(e.line[:0], line...)
	e.tune, e.evKind, e.full = o.tune, o.evKind, false
}
