// Package nccl holds what ain knows about NCCL: the environment it derives for a fabric, and
// three offline analysers that take an io.Reader:
//
//   - LogAnalyzer reads NCCL logs (NCCL 2.4 to 2.30, one file per rank or interleaved multi-rank
//     output with launcher prefixes such as "[1,0]<stdout>:" or "N: ") and decides which transport
//     NCCL used: ib, roce, socket, plugin:<name> (aws-ofi, IBext, ...), none (P2P/SHM only) or
//     unknown, whether GPUDirect RDMA was on, and the known problems with their fixes. It streams:
//     memory is bounded by the number of processes (capped) and small fixed-size summaries, never by
//     the size of the log; each line is scanned once without allocating on the common path.
//   - ParsePerf reads nccl-tests output of any *_perf binary, old and new column sets, and returns
//     the rows and trailer values (the average bus bandwidth kept exactly as printed).
//   - AllReduceModel predicts ring and tree allreduce times with the alpha-beta model of NCCL's
//     tuner and the size where ring overtakes tree. Its formulas and limits are documented in
//     model.go: Simple protocol only (small-message times are pessimistic), no NVLS, CollNet or
//     PAT, no congestion; a measured run is the truth.
//
// Line formats are taken from NCCL's and nccl-tests' sources and from real logs; the shared
// corpus tests (corpus_test files) keep the analysers honest on real-world samples.
package nccl

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
)

// Transport values of LogReport.Transport.
const (
	TransportIB      = "ib"
	TransportRoCE    = "roce"
	TransportSocket  = "socket"
	TransportNone    = "none"
	TransportUnknown = "unknown"
	pluginPrefix     = "plugin:"
)

// Finding codes of LogReport.Problems and LogReport.Warnings.
const (
	CodeNoIBDevice       = "ib-no-device"
	CodeSocketFallback   = "socket-transport"
	CodeIBHCANoMatch     = "ib-hca-no-match"
	CodeIBDisabled       = "ib-disabled-by-env"
	CodeShm              = "dev-shm"
	CodeNetNotFound      = "net-not-found"
	CodePluginNotFound   = "net-plugin-not-found"
	CodeMixedTransport   = "mixed-transport"
	CodeGDRDisabled      = "gdr-disabled"
	CodeIBCompletion     = "ib-completion-error"
	CodeNCCLWarn         = "nccl-warn"
	CodeNoEvidence       = "no-transport-evidence"
	CodeSingleNode       = "single-node"
	CodeDebugSubsysLimit = "debug-subsys"
)

// Limits that keep the analyser's memory constant whatever the log size.
const (
	maxLineBytes       = 1 << 20 // longer lines are cut (bufio.Scanner would fail on them)
	maxEvidencePerKind = 3
	maxEvidence        = 60
	maxProcs           = 4096
	maxDevices         = 64
	maxEnv             = 64
	maxTuning          = 128
	maxWarnLines       = 20
	maxTextLen         = 400
)

// Evidence is one log line that supports the verdict.
type Evidence struct {
	File string `json:"file,omitempty"`
	Line int    `json:"line"`
	Text string `json:"text"`
}

// Finding is a problem or warning with what to do about it.
type Finding struct {
	Code    string     `json:"code"`
	Message string     `json:"message"`
	Fix     string     `json:"fix,omitempty"`
	Lines   []Evidence `json:"evidence,omitempty"`
}

// EnvEcho is an NCCL variable that NCCL reported as "set by environment".
type EnvEcho struct {
	Name  string `json:"name"`
	Value string `json:"value"`
	File  string `json:"file,omitempty"`
	Line  int    `json:"line"`
	text  string // the log line, for evidence
}

// TuningChoice summarises the TUNING lines for one collective/algorithm/protocol choice.
type TuningChoice struct {
	Collective string `json:"collective"`
	Algo       string `json:"algo"`
	Proto      string `json:"proto"`
	MinBytes   int64  `json:"minBytes"`
	MaxBytes   int64  `json:"maxBytes"`
	Count      int64  `json:"count"`
}

// RankReport is the verdict for one NCCL process (one host:pid).
type RankReport struct {
	Rank      *int     `json:"rank"`
	Label     string   `json:"label,omitempty"`
	Host      string   `json:"host,omitempty"`
	Pid       int      `json:"pid,omitempty"`
	File      string   `json:"file,omitempty"`
	Transport string   `json:"transport"`
	GDR       *bool    `json:"gdr"`
	Devices   []string `json:"devices"`
}

// LogReport is the verdict of the NCCL log analyser. The JSON names are a stable interface.
type LogReport struct {
	Transport   string         `json:"transport"`
	GDR         *bool          `json:"gdr"`
	NCCLVersion *string        `json:"ncclVersion"`
	Ranks       *int           `json:"ranks"`
	Nodes       *int           `json:"nodes,omitempty"`
	Devices     []string       `json:"devices"`
	Evidence    []Evidence     `json:"evidence"`
	Warnings    []Finding      `json:"warnings"`
	Problems    []Finding      `json:"problems"`
	PerRank     []RankReport   `json:"perRank,omitempty"`
	Env         []EnvEcho      `json:"env,omitempty"`
	Tuning      []TuningChoice `json:"tuning,omitempty"`
	Lines       int64          `json:"lines"`
	NCCLLines   int64          `json:"ncclLines"`
}

// OK reports whether the log shows no problem.
func (r *LogReport) OK() bool { return len(r.Problems) == 0 }

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
	versionEv bool
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
	gdrOff         []Evidence
	lines          int64
	ncclLines      int64
	curFile        string
	kbuf           []byte            // scratch for map keys
	intern         map[string]string // algorithm/protocol names seen in TUNING lines
}

type proc struct {
	key, host, label, file string
	pid                    int
	rank, nranks, nnodes   int

	usingNet    string // "Using network X"
	chanNet     string // first "via NET/X" name
	chanNetAlt  string // another NET name on channels (mixed within a process)
	initIB      bool   // NET/IB : Using [...]
	initOther   string // NET/<plugin> : Using [...] (IBext, ...)
	noIBDevice  bool
	initSocket  bool
	ofi         bool
	netNotFound bool
	intraOnly   bool // channels via P2P/SHM seen
	ibLinkIB    int
	ibLinkRoCE  int
	gdrOn       bool
	gdrOff      bool
	chanGDR     int
	chanNoGDR   int
	devices     []string
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
func (a *LogAnalyzer) Feed(name string, r io.Reader) error {
	a.files++
	a.curFile = name
	br := bufio.NewReaderSize(r, 256<<10)
	var lineNo int
	var long []byte
	for {
		chunk, err := br.ReadSlice('\n')
		line := chunk
		if err == bufio.ErrBufferFull {
			// A very long line: keep its first maxLineBytes, skip the rest.
			long = append(long[:0], chunk...)
			for err == bufio.ErrBufferFull {
				chunk, err = br.ReadSlice('\n')
				if len(long) < maxLineBytes {
					long = append(long, chunk[:min(len(chunk), maxLineBytes-len(long))]...)
				}
			}
			line = long
		}
		if len(line) > 0 {
			lineNo++
			a.lines++
			a.line(lineNo, line)
		}
		if err == io.EOF {
			return nil
		}
		if err != nil && err != bufio.ErrBufferFull {
			return fmt.Errorf("reading %s: %w", displayName(name), err)
		}
	}
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

var (
	bVersion      = []byte("NCCL version ")
	bUsingNetwork = []byte("Using network ")
	bNET          = []byte("NET/")
	bNoDevice     = []byte("No device found")
	bVia          = []byte(" via ")
	bGDR          = []byte("GPU Direct RDMA")
	bSetByEnv     = []byte(" set by environment to ")
	bSetTo        = []byte(" set to ")
	bBytesAlgo    = []byte(" Bytes -> Algo ")
	bCouldNotFind = []byte("Could not find")
	bNoPlugin     = []byte("No plugin found")
	bPluginLoad   = []byte("Plugin load")
	bGDRDMA       = []byte("/GDRDMA")
	bOFI          = []byte("NET/OFI")
	bChannel      = []byte("Channel ")
	bRing         = []byte("Ring ")
)

// infoLine dispatches on the message; head (the "host:pid:tid [dev]" part) is resolved to its
// process only for the messages that need one, so the bulk of a long log (TUNING lines, env
// echoes) costs a few prefix checks and one scan.
func (a *LogAnalyzer) infoLine(no int, raw, head, msg []byte) {
	switch {
	case bytes.HasPrefix(msg, bVersion):
		v := msg[len(bVersion):]
		if k := bytes.IndexAny(v, "+ "); k >= 0 {
			v = v[:k]
		}
		if a.version == "" && len(v) > 0 && len(v) < 32 {
			a.version = string(v)
		}
		a.addEvidence("version", no, raw)
	case bytes.HasPrefix(msg, bUsingNetwork):
		p := a.procFor(head)
		name := trimRightSpace(msg[len(bUsingNetwork):])
		if p.usingNet != string(name) {
			p.usingNet = string(name)
		}
		a.addEvidence2("using:", p.usingNet, no, raw)
	case (bytes.HasPrefix(msg, bChannel) || bytes.HasPrefix(msg, bRing)) && bytes.Contains(msg, bVia):
		a.channelLine(no, raw, a.procFor(head), msg)
	case bytes.HasPrefix(msg, bOFI):
		a.procFor(head).ofi = true
		a.addEvidence("ofi", no, raw)
	case bytes.HasPrefix(msg, bNET):
		a.netLine(no, raw, a.procFor(head), msg)
	case bytes.Contains(msg, bBytesAlgo):
		a.tuningLine(msg)
	case bytes.Contains(msg, bSetByEnv):
		a.envLine(no, raw, msg, bSetByEnv)
	case bytes.HasPrefix(msg, []byte("NCCL_")) && bytes.Contains(msg, bSetTo):
		// NCCL_IB_HCA, NCCL_SOCKET_IFNAME and NCCL_OOB_NET_IFNAME are echoed as "X set to Y".
		a.envLine(no, raw, msg, bSetTo)
	case bytes.HasPrefix(msg, []byte("comm ")) || bytes.HasPrefix(msg, []byte("ncclCommInit")) || bytes.HasPrefix(msg, []byte("Init COMPLETE")):
		p := a.procFor(head)
		if r, ok := intAfter(msg, " rank "); ok {
			p.rank = r
		}
		if n, ok := intAfter(msg, " nranks "); ok {
			p.nranks = n
		} else if n, ok := intAfter(msg, " nRanks "); ok {
			p.nranks = n
		}
		if n, ok := intAfter(msg, " nNodes "); ok {
			p.nnodes = n
		}
	case bytes.Contains(msg, bGDR):
		a.gdrLine(no, raw, a.procFor(head), msg)
	case bytes.Contains(msg, bVia):
		a.channelLine(no, raw, a.procFor(head), msg)
	}
}

// channelLine reads "Channel 00/0 : 8[0] -> 0[0] [receive] via NET/IB/0/GDRDMA" and its older
// forms ("Channel 01 : 2[c7000] -> 0[87000] ...", "Ring 00 : 15 -> 0 [receive] via NET/Socket/0").
func (a *LogAnalyzer) channelLine(no int, raw []byte, p *proc, msg []byte) {
	v := msg[bytes.Index(msg, bVia)+len(bVia):]
	switch {
	case bytes.HasPrefix(v, bNET):
		name := v[len(bNET):]
		if k := bytes.IndexByte(name, '/'); k >= 0 {
			name = name[:k]
		}
		switch {
		case p.chanNet == "":
			p.chanNet = string(name)
		case p.chanNet != string(name) && p.chanNetAlt == "":
			p.chanNetAlt = string(name)
		}
		if bytes.Contains(v, bGDRDMA) {
			p.chanGDR++
		} else {
			p.chanNoGDR++
		}
		a.addEvidence2("chan:", p.chanNet, no, raw)
	case bytes.HasPrefix(v, []byte("P2P")) || bytes.HasPrefix(v, []byte("SHM")) || bytes.HasPrefix(v, []byte("direct")):
		p.intraOnly = true
		a.addEvidence("chan:intra", no, raw)
	}
}

func (a *LogAnalyzer) netLine(no int, raw []byte, p *proc, msg []byte) {
	// NET/<name> : ...   NET/<name>: ...
	rest := msg[len(bNET):]
	end := bytes.IndexAny(rest, " :")
	if end < 0 {
		return
	}
	name := rest[:end]
	body := trimLeftSpace(rest[end:])
	if len(body) > 0 && body[0] == ':' {
		body = trimLeftSpace(body[1:])
	}
	switch {
	case bytes.Equal(name, []byte("Plugin")):
		switch {
		case bytes.Contains(body, bCouldNotFind) || (bytes.Contains(body, bPluginLoad) && bytes.Contains(body, []byte("returned"))):
			a.pluginMiss = appendBounded(a.pluginMiss, a.ev(no, raw))
			a.addEvidence("plugin", no, raw)
		case bytes.Contains(body, bNoPlugin):
			a.addEvidence("plugin", no, raw)
		case bytes.HasPrefix(body, []byte("Loaded net plugin")) || bytes.HasPrefix(body, []byte("Loaded ")):
			a.addEvidence("plugin", no, raw)
		}
	case bytes.Contains(body, bNoDevice):
		if bytes.HasPrefix(name, []byte("IB")) {
			p.noIBDevice = true
			a.noDevice = appendBounded(a.noDevice, a.ev(no, raw))
		}
		a.addEvidence("nodev", no, raw)
	case bytes.Contains(body, bGDR):
		a.gdrLine(no, raw, p, msg)
	case bytes.HasPrefix(body, []byte("Using")):
		if bytes.Equal(name, []byte("Socket")) {
			p.initSocket = true
			a.addEvidence("init:socket", no, raw)
			return
		}
		if bytes.Equal(name, []byte("IB")) {
			p.initIB = true
		} else if p.initOther == "" {
			p.initOther = string(name)
		}
		a.devicesFrom(p, body)
		a.addEvidence("init:"+string(name), no, raw)
	}
}

// devicesFrom reads "Using [0]mlx5_0:1/IB [1]mlx5_1:1/RoCE [RO]; OOB eth0:10.0.0.3<0>".
func (a *LogAnalyzer) devicesFrom(p *proc, body []byte) {
	if k := bytes.IndexByte(body, ';'); k >= 0 {
		body = body[:k]
	}
	for len(body) > 0 {
		k := bytes.IndexByte(body, '[')
		if k < 0 {
			return
		}
		body = body[k+1:]
		e := bytes.IndexByte(body, ']')
		if e < 0 {
			return
		}
		if _, ok := atoiBytes(body[:e]); !ok {
			body = body[e+1:]
			continue
		}
		body = body[e+1:]
		end := bytes.IndexAny(body, " [\t")
		dev := body
		if end >= 0 {
			dev = body[:end]
		}
		link := []byte(nil)
		if s := bytes.IndexByte(dev, '/'); s >= 0 {
			link = dev[s+1:]
			dev = dev[:s]
		}
		switch {
		case bytes.HasPrefix(link, []byte("RoCE")):
			p.ibLinkRoCE++
		case bytes.HasPrefix(link, []byte("IB")):
			p.ibLinkIB++
		}
		if len(dev) > 0 && len(p.devices) < maxDevices && !containsStr(p.devices, dev) {
			p.devices = append(p.devices, string(dev))
		}
		if end < 0 {
			return
		}
		body = body[end:]
	}
}

func containsStr(list []string, b []byte) bool {
	for _, s := range list {
		if s == string(b) {
			return true
		}
	}
	return false
}

func (a *LogAnalyzer) gdrLine(no int, raw []byte, p *proc, msg []byte) {
	switch {
	case bytes.Contains(msg, []byte("Disabled")) || bytes.Contains(msg, []byte("disabled")):
		p.gdrOff = true
		a.gdrOff = appendBounded(a.gdrOff, a.ev(no, raw))
		a.addEvidence("gdr:off", no, raw)
	case bytes.Contains(msg, []byte("Enabled")) || bytes.Contains(msg, []byte("enabled")):
		p.gdrOn = true
		a.addEvidence("gdr:on", no, raw)
	}
}

func (a *LogAnalyzer) envLine(no int, raw []byte, msg, sep []byte) {
	k := bytes.Index(msg, sep)
	name := msg[:k]
	if sp := bytes.LastIndexByte(name, ' '); sp >= 0 {
		name = name[sp+1:]
	}
	val := trimRightSpace(msg[k+len(sep):])
	val = bytes.TrimSuffix(val, []byte("."))
	if len(name) == 0 || len(name) > 64 {
		return
	}
	if i, ok := a.envIdx[string(name)]; ok {
		if a.env[i].Value == string(val) {
			return
		}
		// A different value on another rank: keep the first, mention the difference once.
		key := string(name) + "=" + string(val)
		if _, seen := a.envIdx[key]; seen || len(a.env) >= maxEnv {
			return
		}
		a.envIdx[key] = len(a.env)
	} else {
		if len(a.env) >= maxEnv {
			return
		}
		a.envIdx[string(name)] = len(a.env)
	}
	if len(val) > maxTextLen {
		val = val[:maxTextLen]
	}
	a.env = append(a.env, EnvEcho{Name: string(name), Value: string(val), File: a.curFile, Line: no, text: a.ev(no, raw).Text})
	a.addEvidence("env", no, raw)
}

// Numeric algorithm and protocol ids printed by NCCL 2.5-2.1x ("1048576 Bytes -> Algo 1 proto 2").
var (
	algoNames  = []string{"TREE", "RING", "COLLNET_DIRECT", "COLLNET_CHAIN", "NVLS", "NVLS_TREE", "PAT"}
	protoNames = []string{"LL", "LL128", "SIMPLE"}
)

// tuningLine reads "AllReduce: 1048576 Bytes -> Algo RING proto SIMPLE channel{Lo..Hi}={0..15}"
// and the older "1048576 Bytes -> Algo 1 proto 2 time 40.12".
func (a *LogAnalyzer) tuningLine(msg []byte) {
	k := bytes.Index(msg, bBytesAlgo)
	head := trimRightSpace(msg[:k])
	coll := []byte("")
	if c := bytes.LastIndexByte(head, ':'); c >= 0 {
		coll = trimLeftSpace(head[:c])
		if sp := bytes.LastIndexByte(coll, ' '); sp >= 0 {
			coll = coll[sp+1:]
		}
		head = trimLeftSpace(head[c+1:])
	}
	if sp := bytes.LastIndexByte(head, ' '); sp >= 0 {
		head = head[sp+1:]
	}
	size, ok := atoiBytes(head)
	if !ok {
		return
	}
	// "<algo> proto <proto> ..."
	rest := msg[k+len(bBytesAlgo):]
	algoTok, rest := nextField(rest)
	protoKw, rest := nextField(rest)
	protoTok, _ := nextField(rest)
	if len(algoTok) == 0 || len(protoTok) == 0 || !bytes.Equal(protoKw, []byte("proto")) {
		return
	}
	algo := a.nameOf(algoTok, algoNames)
	proto := a.nameOf(protoTok, protoNames)
	a.kbuf = append(append(append(append(append(a.kbuf[:0], coll...), '|'), algo...), '|'), proto...)
	if i, ok := a.tuneIdx[string(a.kbuf)]; ok {
		t := &a.tuning[i]
		t.Count++
		t.MinBytes = min(t.MinBytes, int64(size))
		t.MaxBytes = max(t.MaxBytes, int64(size))
		return
	}
	if len(a.tuning) >= maxTuning {
		return
	}
	a.tuneIdx[string(a.kbuf)] = len(a.tuning)
	a.tuning = append(a.tuning, TuningChoice{Collective: string(coll), Algo: algo, Proto: proto, MinBytes: int64(size), MaxBytes: int64(size), Count: 1})
}

// nextField returns the first space-separated field of s and what follows it.
func nextField(s []byte) (field, rest []byte) {
	s = trimLeftSpace(s)
	i := bytes.IndexAny(s, " \t")
	if i < 0 {
		return s, nil
	}
	return s[:i], s[i:]
}

// nameOf maps a numeric id to its name and interns textual names, so that repeated TUNING lines
// allocate nothing.
func (a *LogAnalyzer) nameOf(tok []byte, names []string) string {
	if n, ok := atoiBytes(tok); ok && n < len(names) {
		return names[n]
	}
	if s, ok := a.intern[string(tok)]; ok {
		return s
	}
	s := strings.ToUpper(string(tok))
	if len(a.intern) < 256 {
		a.intern[string(tok)] = s
	}
	return s
}

func (a *LogAnalyzer) warnLine(no int, raw []byte, p *proc, msg []byte) {
	e := a.ev(no, raw)
	switch {
	case bytes.Contains(msg, []byte("/dev/shm")) || bytes.Contains(msg, []byte("shared memory")) || bytes.Contains(msg, []byte("posix_fallocate")):
		a.shm = appendBounded(a.shm, e)
		a.addEvidence("shm", no, raw)
		return
	case bytes.Contains(msg, []byte("network ")) && bytes.Contains(msg, []byte(" not found")):
		p.netNotFound = true
		if a.netMissingName == "" {
			m := msg[bytes.Index(msg, []byte("network "))+len("network "):]
			m = m[:bytes.Index(m, []byte(" not found"))]
			a.netMissingName = string(m)
		}
		a.netMissing = appendBounded(a.netMissing, e)
		a.addEvidence("netmissing", no, raw)
		return
	case bytes.Contains(msg, []byte("Got completion from peer")) || (bytes.Contains(msg, []byte("completion")) && bytes.Contains(msg, []byte("error"))):
		a.ibCompl = appendBounded(a.ibCompl, e)
		a.addEvidence("iberr", no, raw)
		return
	case bytes.Contains(msg, bNoDevice) && bytes.Contains(msg, []byte("NET/IB")):
		p.noIBDevice = true
		a.noDevice = appendBounded(a.noDevice, e)
		a.addEvidence("nodev", no, raw)
		return
	}
	a.warnCount++
	if len(a.warnLines) < maxWarnLines {
		a.warnLines = append(a.warnLines, e)
	}
	a.addEvidence("warn", no, raw)
}

// transport decides one process's transport from the strongest evidence it printed:
// channels actually connected over NET/<x> beat "Using network <x>", which beats init lines.
func (p *proc) transport() string {
	switch {
	case p.chanNet != "":
		return p.netTransport(p.chanNet)
	case p.usingNet != "":
		return p.netTransport(p.usingNet)
	case p.netNotFound:
		return TransportNone
	case p.initOther != "":
		return p.netTransport(p.initOther)
	case p.ofi:
		return pluginPrefix + "aws-ofi"
	case p.initIB:
		return p.netTransport("IB")
	case p.initSocket || p.noIBDevice:
		return TransportSocket
	case p.intraOnly || p.nnodes == 1:
		return TransportNone
	}
	return TransportUnknown
}

func (p *proc) netTransport(name string) string {
	switch name {
	case "IB":
		if p.ibLinkRoCE > 0 && p.ibLinkIB == 0 {
			return TransportRoCE
		}
		return TransportIB
	case "Socket":
		return TransportSocket
	}
	return pluginPrefix + pluginName(name)
}

// pluginName normalises external net plugin names: the AWS OFI plugin calls itself
// "AWS Libfabric", "Libfabric" or "OFI" depending on its version.
func pluginName(n string) string {
	l := strings.ToLower(n)
	switch {
	case strings.Contains(l, "libfabric") || strings.Contains(l, "ofi"):
		return "aws-ofi"
	case strings.HasPrefix(n, "IBext"):
		return "IBext"
	}
	return n
}

func (p *proc) gdr() *bool {
	switch {
	case p.chanGDR > 0 || p.gdrOn:
		return boolPtr(true)
	case p.gdrOff || p.chanNoGDR > 0:
		return boolPtr(false)
	}
	return nil
}

func boolPtr(b bool) *bool { return &b }

// transportRank orders transports from best to worst, to report the worst of a mixed run.
func transportRank(t string) int {
	switch {
	case t == TransportIB:
		return 0
	case t == TransportRoCE:
		return 1
	case strings.HasPrefix(t, pluginPrefix):
		return 2
	case t == TransportNone:
		return 3
	case t == TransportUnknown:
		return 4
	}
	return 5 // socket
}

// Report computes the verdict from everything fed so far.
func (a *LogAnalyzer) Report() *LogReport {
	r := &LogReport{
		Transport: TransportUnknown,
		Devices:   []string{},
		Evidence:  append([]Evidence{}, a.evidence...),
		Warnings:  []Finding{},
		Problems:  []Finding{},
		Env:       a.env,
		Tuning:    a.tuning,
		Lines:     a.lines,
		NCCLLines: a.ncclLines,
	}
	if a.version != "" {
		v := a.version
		r.NCCLVersion = &v
	}
	procs := a.order
	if a.overflow != nil {
		procs = append(procs[:len(procs):len(procs)], a.overflow)
	}
	// Per-process verdicts.
	counts := map[string]int{}
	nranks, nnodes := -1, -1
	var gdrTrue, gdrFalse bool
	multi := len(procs) > 1
	for _, p := range procs {
		t := p.transport()
		counts[t]++
		nranks = max(nranks, p.nranks)
		nnodes = max(nnodes, p.nnodes)
		for _, d := range p.devices {
			if len(r.Devices) < maxDevices && !containsStr(r.Devices, []byte(d)) {
				r.Devices = append(r.Devices, d)
			}
		}
		g := p.gdr()
		if g != nil && *g {
			gdrTrue = true
		} else if g != nil {
			gdrFalse = true
		}
		if multi {
			rr := RankReport{Label: p.label, Host: p.host, Pid: p.pid, File: p.file, Transport: t, GDR: g, Devices: p.devices}
			if rr.Devices == nil {
				rr.Devices = []string{}
			}
			if p.rank >= 0 {
				rk := p.rank
				rr.Rank = &rk
			}
			r.PerRank = append(r.PerRank, rr)
		}
	}
	if multi {
		sort.SliceStable(r.PerRank, func(i, j int) bool {
			ri, rj := r.PerRank[i].Rank, r.PerRank[j].Rank
			if ri == nil || rj == nil {
				return ri != nil && rj == nil
			}
			return *ri < *rj
		})
	}
	if nranks > 0 {
		r.Ranks = &nranks
	}
	if nnodes > 0 {
		r.Nodes = &nnodes
	}
	// The run's transport: the one every process agrees on, ignoring processes that printed
	// nothing decisive; if they disagree, the worst one, reported as a problem.
	known := make([]string, 0, len(counts))
	for t := range counts {
		if t != TransportUnknown {
			known = append(known, t)
		}
	}
	if len(known) > 1 {
		// A process without any network next to networked ones is an intra-node communicator.
		k := known[:0]
		for _, t := range known {
			if t != TransportNone {
				k = append(k, t)
			}
		}
		known = k
	}
	sort.Slice(known, func(i, j int) bool { return transportRank(known[i]) < transportRank(known[j]) })
	switch len(known) {
	case 0:
		r.Transport = TransportUnknown
	case 1:
		r.Transport = known[0]
	default:
		r.Transport = known[len(known)-1]
		var parts []string
		for _, t := range known {
			parts = append(parts, fmt.Sprintf("%s on %d process(es)", t, counts[t]))
		}
		r.Problems = append(r.Problems, Finding{
			Code:    CodeMixedTransport,
			Message: "ranks disagree on the transport: " + strings.Join(parts, ", ") + "; the slowest one sets the pace of every collective",
			Fix:     "compare the perRank list: the ranks on " + known[len(known)-1] + " lack what the others have (RDMA resource, IPC_LOCK, libibverbs, an ACTIVE port: run `ain doctor ib-ports` on their nodes)",
		})
	}
	switch {
	case gdrTrue:
		r.GDR = boolPtr(true)
	case gdrFalse:
		r.GDR = boolPtr(false)
	case r.Transport == TransportSocket:
		r.GDR = boolPtr(false)
	}
	a.findings(r)
	return r
}

func (a *LogAnalyzer) envValue(name string) (string, bool) {
	if i, ok := a.envIdx[name]; ok {
		return a.env[i].Value, true
	}
	return "", false
}

func (a *LogAnalyzer) envEvidence(name string) []Evidence {
	if i, ok := a.envIdx[name]; ok {
		e := a.env[i]
		return []Evidence{{File: e.File, Line: e.Line, Text: e.text}}
	}
	return nil
}

const fixNoDevice = "check, in this order: (1) the pod requests the RDMA resource (e.g. rdma/rdma_shared_device_a: 1) and " +
	"/dev/infiniband is present; (2) securityContext.capabilities.add includes IPC_LOCK; (3) NCCL_IB_HCA, if set, " +
	"names devices that exist (`ibv_devices`); (4) the image has libibverbs and the provider (libmlx5); " +
	"(5) the port is ACTIVE: NCCL skips INIT/ARMED ports silently, so run `ain doctor ib-ports` on the node"

func (a *LogAnalyzer) findings(r *LogReport) {
	hca, hcaSet := a.envValue("NCCL_IB_HCA")
	ibDisable, _ := a.envValue("NCCL_IB_DISABLE")
	switch {
	case len(a.noDevice) > 0 && hcaSet:
		r.Problems = append(r.Problems, Finding{
			Code:    CodeIBHCANoMatch,
			Message: fmt.Sprintf("NCCL_IB_HCA=%s matched no usable IB device, so NCCL found none", hca),
			Fix: "list the devices and ports with `ibv_devinfo` (or `ain doctor ib-ports`) and set NCCL_IB_HCA to them, e.g. " +
				"`=mlx5_0:1,mlx5_1:1` (`=` for exact names: without it `mlx5_1` also matches mlx5_10..19; `^` excludes); " +
				"also check that the matched ports are ACTIVE",
			Lines: append(a.envEvidence("NCCL_IB_HCA"), a.noDevice...),
		})
	case len(a.noDevice) > 0:
		r.Problems = append(r.Problems, Finding{
			Code:    CodeNoIBDevice,
			Message: "NCCL found no usable InfiniBand/RoCE device (`NET/IB : No device found`)",
			Fix:     fixNoDevice,
			Lines:   a.noDevice,
		})
	}
	if ibDisable == "1" {
		r.Warnings = append(r.Warnings, Finding{
			Code:    CodeIBDisabled,
			Message: "NCCL_IB_DISABLE=1 turns the IB/RoCE transport off: NCCL uses sockets on purpose",
			Fix:     "unset NCCL_IB_DISABLE unless sockets are what you want",
			Lines:   a.envEvidence("NCCL_IB_DISABLE"),
		})
	}
	if r.Transport == TransportSocket {
		f := Finding{
			Code:    CodeSocketFallback,
			Message: "NCCL moved data over TCP sockets, not RDMA: expect a fraction of the fabric's bandwidth",
			Fix:     fixNoDevice,
		}
		if len(a.noDevice) > 0 || ibDisable == "1" {
			f.Fix = "fix the cause above; sockets are NCCL's fallback when no IB/RoCE device is usable"
		}
		for _, e := range a.evidence {
			if strings.Contains(e.Text, "Socket") && len(f.Lines) < maxEvidencePerKind {
				f.Lines = append(f.Lines, e)
			}
		}
		r.Problems = append(r.Problems, f)
	}
	if len(a.netMissing) > 0 {
		name := a.netMissingName
		f := Finding{
			Code:    CodeNetNotFound,
			Message: fmt.Sprintf("the network NCCL was told to use (%q, from NCCL_NET) is not available, so communicator init failed", name),
			Fix:     "install the net plugin in the image (aws-ofi-nccl for \"AWS Libfabric\"/EFA/Slingshot: libnccl-net-ofi.so or libnccl-net.so on LD_LIBRARY_PATH) or unset NCCL_NET to let NCCL choose",
			Lines:   append(append([]Evidence{}, a.pluginMiss...), a.netMissing...),
		}
		if name == "" {
			f.Message = "the network NCCL was told to use is not available, so communicator init failed"
		}
		r.Problems = append(r.Problems, f)
	} else if len(a.pluginMiss) > 0 {
		r.Warnings = append(r.Warnings, Finding{
			Code:    CodePluginNotFound,
			Message: "no external net plugin was loaded; NCCL uses its internal IB/Socket transports",
			Fix:     "fine on InfiniBand/RoCE; on EFA, Slingshot or TCPX/TCPXO the plugin must be in the image and on LD_LIBRARY_PATH",
			Lines:   a.pluginMiss,
		})
	}
	if len(a.shm) > 0 {
		r.Problems = append(r.Problems, Finding{
			Code:    CodeShm,
			Message: "NCCL could not create its shared-memory segment in /dev/shm (containers get 64 MiB by default)",
			Fix:     "mount a memory-backed /dev/shm in the pod: volumes: [{name: dshm, emptyDir: {medium: Memory, sizeLimit: 8Gi}}] with volumeMounts: [{name: dshm, mountPath: /dev/shm}] (docker: --shm-size=8g)",
			Lines:   a.shm,
		})
	}
	if len(a.ibCompl) > 0 {
		r.Problems = append(r.Problems, Finding{
			Code:    CodeIBCompletion,
			Message: "an IB work request completed with an error (status 12 = transport retry exceeded: the peer or the path went away)",
			Fix:     "check the peer rank's log and the ports on both nodes (`ain doctor ib-ports`); on RoCE check NCCL_IB_GID_INDEX/NCCL_IB_TC and PFC/ECN on the switches; consider NCCL_IB_TIMEOUT=22",
			Lines:   a.ibCompl,
		})
	}
	if r.GDR != nil && !*r.GDR && (r.Transport == TransportIB || r.Transport == TransportRoCE) {
		f := Finding{
			Code:    CodeGDRDisabled,
			Message: "GPUDirect RDMA is not used: data goes through host memory, costing bandwidth and CPU",
			Fix:     "load nvidia-peermem (or use DMA-BUF with an open kernel module), keep GPU and NIC under the same PCIe switch, and check NCCL_NET_GDR_LEVEL (e.g. SYS)",
			Lines:   a.gdrOff,
		}
		r.Warnings = append(r.Warnings, f)
	}
	if a.warnCount > 0 {
		msg := fmt.Sprintf("%d other NCCL WARN line(s)", a.warnCount)
		r.Warnings = append(r.Warnings, Finding{Code: CodeNCCLWarn, Message: msg, Lines: a.warnLines[:min(len(a.warnLines), maxEvidencePerKind)]})
	}
	if r.Transport == TransportNone && len(a.netMissing) == 0 {
		r.Warnings = append(r.Warnings, Finding{
			Code:    CodeSingleNode,
			Message: "no network transport was used: all peers were reached over P2P/SHM (a single-node run)",
		})
	}
	if r.Transport == TransportUnknown {
		r.Warnings = append(r.Warnings, Finding{
			Code:    CodeNoEvidence,
			Message: "the log does not say which transport NCCL used",
			Fix:     "rerun with NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,ENV,NET,GRAPH,TUNING (the default subsystems print no NET or channel lines)",
		})
	}
}

func (r *LogReport) hasProblem(code string) bool {
	for _, f := range r.Problems {
		if f.Code == code {
			return true
		}
	}
	return false
}

// Verdict is a one-line summary for humans.
func (r *LogReport) Verdict() string {
	var b strings.Builder
	switch {
	case r.Transport == TransportIB:
		b.WriteString("NCCL used InfiniBand (RDMA)")
	case r.Transport == TransportRoCE:
		b.WriteString("NCCL used RoCE (RDMA over Ethernet)")
	case r.Transport == TransportSocket:
		b.WriteString("NCCL used TCP sockets, not RDMA")
	case r.Transport == TransportNone && r.hasProblem(CodeNetNotFound):
		b.WriteString("NCCL found no usable network: the requested net plugin is missing")
	case r.Transport == TransportNone:
		b.WriteString("NCCL used no network (P2P/SHM only)")
	case strings.HasPrefix(r.Transport, pluginPrefix):
		b.WriteString("NCCL used the external net plugin " + strings.TrimPrefix(r.Transport, pluginPrefix))
	default:
		b.WriteString("transport unknown")
	}
	if r.GDR != nil {
		if *r.GDR {
			b.WriteString(", GPUDirect RDMA on")
		} else {
			b.WriteString(", GPUDirect RDMA off")
		}
	}
	if r.NCCLVersion != nil {
		b.WriteString(" (NCCL " + *r.NCCLVersion)
		if r.Ranks != nil {
			b.WriteString(", " + strconv.Itoa(*r.Ranks) + " ranks")
		}
		b.WriteString(")")
	}
	return b.String()
}
