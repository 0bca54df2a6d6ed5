// The reader: LogAnalyzer's state, feeding it lines, finding the process a line belongs to and
// keeping bounded evidence.

package nccl

import (
	"bytes"
	"io"
	"sync/atomic"
)

// LogAnalyzer reads NCCL logs line by line and keeps only bounded summaries, so memory stays
// constant whatever the size of the input. Feed it one or more logs (one per rank, or one
// interleaved multi-rank log), then call Report.
type LogAnalyzer struct {
	files    int
	procs    map[string]*proc
	order    []*proc
	overflow *proc
	anon     map[string]*proc // lines without a host:pid:tid header, per file

	version   string
	evidence  []Evidence
	evKinds   map[string]int
	env       []EnvEcho
	envIdx    map[string]int
	tuning    []TuningChoice
	tuneIdx   map[string]int
	warnLines []Evidence
	warnCount int64

	shm            []Evidence
	netMissing     []Evidence
	netMissingName string
	pluginMiss     []Evidence
	ibCompl        []Evidence
	noDevice       []Evidence
	verbsMissing   []Evidence
	binary         string // the first input that held NUL bytes (not a text log)
	binarySeen     bool
	gdrOff         []Evidence
	lines          int64
	ncclLines      int64
	collLines      int64 // of which COLL lines counted without a parse (log_coll.go)
	curFile        string
	kbuf           []byte            // scratch for map keys
	intern         map[string]string // algorithm/protocol names seen in TUNING lines
	rc             repeatCache
	blocks         []*lineBlock // the splitter's buffers, kept across Feeds
	known          atomic.Pointer[knownLines]
	knownAfter     int   // lines of an input after which the known table is made (growAfter; less in tests)
	splitRead      int   // bytes a block reads (0: splitRead; less in tests)
	mapMin         int64 // the smallest file read by mapping it (mapMin; less in tests)
}

type proc struct {
	key, host, label, file string
	pid                    int
	rank, nranks, nnodes   int

	usingNet     string // "Using network X"
	chanNet      string // first "via NET/X" name
	chanNetAlt   string // another NET name on channels (mixed within a process)
	chanKind     string // "chan:"+chanNet, the evidence kind of its channel lines (built once)
	initIB       bool   // NET/IB : Using [...]
	initOther    string // NET/<plugin> : Using [...] (IBext, ...)
	noIBDevice   bool
	initSocket   bool // NET/Socket : Using / N interfaces found: also NCCL 2.3-2.5's bootstrap net init, so weak
	verbsMissing bool // Failed to open libibverbs.so: IB/RoCE was never tried
	ofi          bool
	netNotFound  bool
	intraOnly    bool // channels via P2P/SHM seen
	ibLinkIB     int
	ibLinkRoCE   int
	gdrOn        bool
	gdrOff       bool
	chanGDR      int
	chanNoGDR    int
	devices      []string
}

// NewLogAnalyzer returns an empty analyser.
func NewLogAnalyzer() *LogAnalyzer {
	return &LogAnalyzer{
		procs:   map[string]*proc{},
		anon:    map[string]*proc{},
		evKinds: map[string]int{},
		envIdx:  map[string]int{},
		tuneIdx: map[string]int{},
		intern:  map[string]string{},

		knownAfter: growAfter,
		mapMin:     mapMin,
	}
}

// AnalyzeLog is the one-reader shortcut.
func AnalyzeLog(r io.Reader) (*LogReport, error) {
	a := NewLogAnalyzer()
	if err := a.Feed("", r); err != nil {
		return nil, err
	}
	return a.Report(), nil
}

// Feed reads one log. name labels its evidence lines (a file name; "" for a single input).
// Lines longer than 1 MiB are read cut; a line longer than 256 MiB is an *input.LineTooLongError
// (without the name: the caller knows it).
func (a *LogAnalyzer) Feed(name string, r io.Reader) error {
	return a.feed(name, r, mappable(r, a.mapMin))
}

// feed is Feed with the mapping of r's file given (nil: r is read).
func (a *LogAnalyzer) feed(name string, r io.Reader, src *mapSource) error {
	a.files++
	a.curFile = name
	a.rc.reset() // lines without a host:pid header belong to a per-file process
	return a.feedSplit(name, r, src)
}

func displayName(name string) string {
	if name == "" {
		return "input"
	}
	return name
}

var (
	bNCCLInfo = []byte("NCCL INFO ")
	bNCCLWarn = []byte("NCCL WARN ")
	bNCCL     = []byte("NCCL ")
)

func (a *LogAnalyzer) line(no int, raw []byte) {
	i := bytes.Index(raw, bNCCL)
	if i < 0 {
		return
	}
	s := trimRightSpace(raw)
	var msg []byte
	warn := false
	// The first "NCCL " is almost always the header's: test it in place before scanning again.
	if j := i; bytes.HasPrefix(s[j:], bNCCLInfo) {
		msg = s[j+len(bNCCLInfo):]
		s = s[:j]
	} else if bytes.HasPrefix(s[j:], bNCCLWarn) {
		msg = s[j+len(bNCCLWarn):]
		s = s[:j]
		warn = true
	} else if j := bytes.Index(s, bNCCLInfo); j >= 0 {
		msg = s[j+len(bNCCLInfo):]
		s = s[:j]
	} else if j := bytes.Index(s, bNCCLWarn); j >= 0 {
		msg = s[j+len(bNCCLWarn):]
		s = s[:j]
		warn = true
	} else {
		// Old NCCL (and nccl-tests) print the version without the INFO header.
		if k := bytes.Index(s, bVersion); k >= 0 {
			a.ncclLines++
			a.infoLine(no, raw, nil, s[k:])
		}
		return
	}
	a.ncclLines++
	if warn {
		a.warnLine(no, raw, a.procFor(s), msg)
		return
	}
	a.infoLine(no, raw, s, msg)
}

// procFor finds the process a line belongs to from its "host:pid:tid [dev]" header.
func (a *LogAnalyzer) procFor(head []byte) *proc {
	rest, label := stripLinePrefix(head)
	// The header's first token is host:pid:tid (possibly glued to a launcher tag already removed).
	tok := rest
	if sp := bytes.IndexAny(tok, " \t"); sp >= 0 {
		tok = tok[:sp]
	}
	c2 := bytes.LastIndexByte(tok, ':')
	var host, pid []byte
	if c2 > 0 {
		c1 := bytes.LastIndexByte(tok[:c2], ':')
		if c1 > 0 {
			if _, ok := atoiBytes(tok[c1+1 : c2]); ok {
				host, pid = tok[:c1], tok[c1+1:c2]
				// Hosts never contain ':'; anything before one is a launcher tag we did not know.
				if k := bytes.LastIndexByte(host, ':'); k >= 0 {
					host = host[k+1:]
				}
			}
		}
	}
	if host == nil {
		key := a.curFile
		if p := a.anon[key]; p != nil {
			return p
		}
		p := a.newProc("file:"+key, "", 0, string(label))
		a.anon[key] = p
		return p
	}
	keyLen := len(host) + 1 + len(pid)
	var buf [256]byte
	var key []byte
	if keyLen <= len(buf) {
		key = append(append(append(buf[:0], host...), ':'), pid...)
	} else {
		key = append(append(append([]byte(nil), host...), ':'), pid...)
	}
	if p, ok := a.procs[string(key)]; ok {
		return p
	}
	n, _ := atoiBytes(pid)
	return a.newProc(string(key), string(host), n, string(label))
}

func (a *LogAnalyzer) newProc(key, host string, pid int, label string) *proc {
	if len(a.order) >= maxProcs {
		if a.overflow == nil {
			a.overflow = &proc{key: "(more processes)", rank: -1, nranks: -1, nnodes: -1}
		}
		return a.overflow
	}
	p := &proc{key: key, host: host, pid: pid, label: label, file: a.curFile, rank: -1, nranks: -1, nnodes: -1}
	a.procs[key] = p
	a.order = append(a.order, p)
	return p
}

func (a *LogAnalyzer) addEvidence(kind string, no int, raw []byte) {
	a.addEvidence2(kind, "", no, raw)
}

// addEvidence2 keeps the line if fewer than maxEvidencePerKind lines of kind+sub are kept; the
// kind is assembled in a reused buffer so that the common case (kind full) allocates nothing.
func (a *LogAnalyzer) addEvidence2(kind, sub string, no int, raw []byte) {
	if len(a.evidence) >= maxEvidence {
		return
	}
	a.kbuf = append(append(a.kbuf[:0], kind...), sub...)
	n := a.evKinds[string(a.kbuf)]
	if n >= maxEvidencePerKind {
		return
	}
	a.evKinds[string(a.kbuf)] = n + 1
	a.evidence = append(a.evidence, a.ev(no, raw))
}

func (a *LogAnalyzer) ev(no int, raw []byte) Evidence {
	t := trimRightSpace(trimLeftSpace(raw))
	if len(t) > maxTextLen {
		t = t[:maxTextLen]
	}
	return Evidence{File: a.curFile, Line: no, Text: string(t)}
}

func appendBounded(list []Evidence, e Evidence) []Evidence {
	if len(list) >= maxEvidencePerKind {
		return list
	}
	return append(list, e)
}
