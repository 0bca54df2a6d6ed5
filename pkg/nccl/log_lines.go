// The line parsers: one function per kind of NCCL INFO/WARN message the verdict needs.

package nccl

import (
	"bytes"
	"strings"
)

var (
	bVersion        = []byte("NCCL version ")
	bUsingNetwork   = []byte("Using network ")
	bNET            = []byte("NET/")
	bNoDevice       = []byte("No device found")
	bVia            = []byte(" via ")
	bGDR            = []byte("GPU Direct RDMA")
	bSetByEnv       = []byte(" set by environment to ")
	bSetTo          = []byte(" set to ")
	bBytesAlgo      = []byte(" Bytes -> Algo ")
	bCouldNotFind   = []byte("Could not find")
	bNoPlugin       = []byte("No plugin found")
	bPluginLoad     = []byte("Plugin load")
	bGDRDMA         = []byte("/GDRDMA")
	bOFI            = []byte("NET/OFI")
	bChannel        = []byte("Channel ")
	bRing           = []byte("Ring ")
	bNetIBOld       = []byte("Net/IB")
	bVerbsOpen      = []byte("Failed to open libibverbs")
	bInternalSocket = []byte("Using internal Network Socket")
)

// infoLine dispatches on the message; head (the "host:pid:tid [dev]" part) is resolved to its
// process only for the messages that need one, so the bulk of a long log (TUNING lines, env
// echoes) costs a few prefix checks and one scan. The per-call COLL lines mostly never get here
// (log_coll.go): a substring test added below must hold a '>' or an 'i' (TestCollMarkers).
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
	case bytes.HasPrefix(msg, bNetIBOld):
		// NCCL 2.3: "Net/IB: call to devices() returned 0 devices." is 2.4's "NET/IB : No device found".
		if bytes.Contains(msg, []byte("returned 0 devices")) {
			a.noIBDeviceLine(no, raw, a.procFor(head))
		}
	case bytes.HasPrefix(msg, bVerbsOpen):
		a.verbsMissingLine(no, raw, a.procFor(head))
	case bytes.HasPrefix(msg, bInternalSocket):
		// NCCL 2.3: "Using internal Network Socket" is the later "Using network Socket".
		p := a.procFor(head)
		p.usingNet = "Socket"
		a.addEvidence2("using:", p.usingNet, no, raw)
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
		// A repeat sets nothing new: chanNet/chanNetAlt are set, the GDR counters only matter as > 0.
		if p.chanKind == "" {
			p.chanKind = "chan:" + p.chanNet
		}
		a.rc.offer = repeatOffer{ok: true, tune: -1, evKind: p.chanKind}
	case bytes.HasPrefix(v, []byte("P2P")) || bytes.HasPrefix(v, []byte("SHM")) || bytes.HasPrefix(v, []byte("direct")):
		p.intraOnly = true
		a.addEvidence("chan:intra", no, raw)
		a.rc.offer = repeatOffer{ok: true, tune: -1, evKind: "chan:intra"}
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
			a.noIBDeviceLine(no, raw, p)
			return
		}
		a.addEvidence("nodev", no, raw)
	case bytes.Equal(name, []byte("Socket")) && bytes.Contains(body, []byte("interfaces found")):
		// NCCL 2.3: "NET/Socket : 3 interfaces found", printed at init whatever the transport.
		p.initSocket = true
		a.addEvidence("init:socket", no, raw)
	case bytes.HasPrefix(body, []byte("Using interface")):
		// NCCL 2.3: "NET/IB : Using interface eth0 for sideband communication" names the
		// out-of-band interface, not an IB device: it says nothing about the transport.
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
		a.rc.offer = repeatOffer{ok: true, tune: i}
		return
	}
	if len(a.tuning) >= maxTuning {
		a.rc.offer = repeatOffer{ok: true, tune: -1}
		return
	}
	a.rc.offer = repeatOffer{ok: true, tune: len(a.tuning)}
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
		a.noIBDeviceLine(no, raw, p)
		return
	case bytes.HasPrefix(msg, bVerbsOpen):
		a.verbsMissingLine(no, raw, p)
		return
	}
	a.warnCount++
	if len(a.warnLines) < maxWarnLines {
		a.warnLines = append(a.warnLines, e)
	}
	a.addEvidence("warn", no, raw)
}

func (a *LogAnalyzer) noIBDeviceLine(no int, raw []byte, p *proc) {
	p.noIBDevice = true
	a.noDevice = appendBounded(a.noDevice, a.ev(no, raw))
	a.addEvidence("nodev", no, raw)
}

// verbsMissingLine reads "Failed to open libibverbs.so[.1]" (a WARN up to 2.1x, an INFO since):
// the image lacks the RDMA userspace library, so NCCL never tried IB/RoCE.
func (a *LogAnalyzer) verbsMissingLine(no int, raw []byte, p *proc) {
	p.verbsMissing = true
	a.verbsMissing = appendBounded(a.verbsMissing, a.ev(no, raw))
	a.addEvidence("verbs", no, raw)
}
