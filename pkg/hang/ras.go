package hang

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/ain-hpc/ain/pkg/next"
)

// rasGroup is one "N ranks have launched up to operation V" group of a MISMATCH block, with the
// ranks RAS listed for it (it lists only outlier groups unless queried with -v).
type rasGroup struct {
	value int64
	count int
	ranks []int
	line  int
}

// analyzeRASText reads ncclras's text output. The lines it relies on are printed by NCCL's
// src/ras/client_support.cc:
//
//	Group  Comms  Nodes  Ranks  Ranks  Ranks  Status  Errors     (summary table, one row per group)
//	DEAD / INCOMPLETE / TIMEOUT                                   (job-level blocks)
//	#<g>-<c> (<hash>) INCOMPLETE|MISMATCH|ERROR                   (per-communicator blocks)
//	  Communicator ranks have different <Op|collective> operation counts
//	  26 ranks have launched up to operation 6650
//	  Rank 0 -- GPU 0 managed by process 483072 on node 172.16.64.210
//	  Rank 7 has launched up to operation 60 -- GPU 3 managed by process 1650386 on node node1
//	  The missing rank: 21   (NCCL 2.24-2.25; later: "Rank 21 -- GPU 5 managed by ...")
func analyzeRASText(in Input) *Report {
	p := &rasText{r: newReport(FormatRASText), in: in, base: -1,
		missing: map[int]bool{}, stuck: map[int]bool{}, ahead: map[int]bool{}}
	lines(in.Data, p.line)
	return p.finish()
}

// rasText is the state of a read of ncclras's text output.
type rasText struct {
	r                     *Report
	in                    Input
	missing, stuck, ahead map[int]bool
	block                 string // INCOMPLETE, MISMATCH, ERROR, DEAD, TIMEOUT ("" outside)
	comm                  string // "#0-0 (hash)"
	op                    string // "AllReduce", "collective"
	groups                []*rasGroup
	cur                   *rasGroup
	worst                 string
	inTable, statusDead   bool
	jobGPUs               int
	base                  int // the first line's indentation
}

// flush ends a spread of operation counts: its highest count's ranks are ahead, the others stuck.
func (p *rasText) flush() {
	groups := p.groups
	p.groups, p.cur = nil, nil
	if len(groups) < 2 || p.r.Collective != "" {
		// Only the first spread RAS printed gives the ranks (communicator ranks are not
		// comparable across communicators); later spreads stay in the evidence.
		return
	}
	var top int64 = -1
	for _, g := range groups {
		top = max(top, g.value)
	}
	for _, g := range groups {
		set := p.stuck
		if g.value == top {
			set = p.ahead
		}
		for _, k := range g.ranks {
			set[k] = true
		}
		if g.value < top && len(g.ranks) < g.count {
			p.r.Evidence = append(p.r.Evidence, Evidence{File: p.in.Name, Line: g.line, Text: fmt.Sprintf(
				"%d rank(s) behind at operation %d that RAS did not list (it lists outliers only): rerun `ncclras -v`", g.count-len(g.ranks), g.value)})
		}
	}
	p.r.Collective = fmt.Sprintf("%s operation %d of communicator %s", p.op, top, p.comm)
}

func (p *rasText) setWorst(s string) {
	if severity(s) > severity(p.worst) {
		p.worst = s
	}
}

func (p *rasText) ev(no int, s string) {
	if len(p.r.Evidence) < 40 {
		p.r.Evidence = append(p.r.Evidence, Evidence{File: p.in.Name, Line: no, Text: strings.TrimSpace(s)})
	}
}

func (p *rasText) line(no int, raw string) {
	s := strings.TrimSpace(raw)
	if s == "" {
		return
	}
	// Pasted output (docs, issues) is often indented as a whole: blocks are told from their
	// bodies by indentation relative to the first line.
	if p.base < 0 {
		p.base = indentOf(raw)
	}
	indented := indentOf(raw) > p.base && p.block != ""
	f := strings.Fields(s)
	if p.summaryLine(no, s, f) {
		return
	}
	if strings.HasPrefix(s, "===") || s == "Errors" || s == "Warnings" {
		p.inTable = false
		return
	}
	if !indented {
		p.blockHeader(no, s, f)
		return
	}
	p.blockBody(no, s, f)
}

// summaryLine reads the job summary and the groups table; false for any other line.
func (p *rasText) summaryLine(no int, s string, f []string) bool {
	switch {
	case strings.HasPrefix(s, "Group") && strings.Contains(s, "Comms") && strings.Contains(s, "Status"):
		p.inTable = true
	case len(f) == 5 && allInts(f) && p.jobGPUs == 0:
		// Job summary: nodes, processes per node, GPUs per process, processes, GPUs (totals).
		p.jobGPUs, _ = strconv.Atoi(f[4])
	case p.inTable && len(f) == 8 && isInt(f[0]) && isInt(f[1]):
		// group comms nodes ranks/node ranks/comm ranks/group status errors
		if n, err := strconv.Atoi(f[4]); err == nil && n > p.r.NRanks {
			p.r.NRanks = n
		}
		if f[7] != "OK" {
			p.setWorst(f[7])
			p.ev(no, s)
		}
	case p.inTable && (strings.HasPrefix(s, "#") && strings.Contains(s, "in group")):
	default:
		return false
	}
	return true
}

// blockHeader starts a block (DEAD, INCOMPLETE, TIMEOUT, or a communicator's "#..." line) or
// ends the one before.
func (p *rasText) blockHeader(no int, s string, f []string) {
	p.flush()
	p.inTable = false
	p.block, p.comm, p.op = "", "", "collective"
	switch {
	case s == "DEAD" || s == "INCOMPLETE" || s == "TIMEOUT":
		p.block = s
		if s == "DEAD" {
			p.statusDead = true
			p.setWorst(StatusDead)
		} else if s == "INCOMPLETE" {
			p.setWorst(StatusIncomplete)
		}
		p.ev(no, s)
	case strings.HasPrefix(s, "#") && len(f) >= 3:
		p.block, p.comm = f[len(f)-1], f[0]+" "+f[1]
		p.setWorst(p.block)
		p.ev(no, s)
	}
}

// blockBody reads a line inside a block.
func (p *rasText) blockBody(no int, s string, f []string) {
	switch {
	case strings.HasPrefix(s, "Communicator ranks have different ") && strings.HasSuffix(s, " operation counts"):
		p.flush()
		p.op = strings.TrimSuffix(strings.TrimPrefix(s, "Communicator ranks have different "), " operation counts")
	case strings.Contains(s, " ranks have launched up to operation ") || strings.Contains(s, " ranks have not launched any operations"):
		g := &rasGroup{line: no}
		g.count, _ = strconv.Atoi(f[0])
		if i := strings.LastIndex(s, "operation "); i >= 0 && strings.Contains(s, "launched up to") {
			g.value, _ = strconv.ParseInt(strings.TrimSpace(s[i+len("operation "):]), 10, 64)
		}
		p.groups = append(p.groups, g)
		p.cur = g
	case strings.HasPrefix(s, "Rank ") && len(f) >= 2 && isInt(f[1]):
		p.rankLine(no, s, f)
	case strings.HasPrefix(s, "The missing rank"):
		// "The missing rank: 21" / "The missing ranks: 3, 21"
		if i := strings.IndexByte(s, ':'); i >= 0 {
			for _, t := range strings.Split(s[i+1:], ",") {
				if k, err := strconv.Atoi(strings.TrimSpace(t)); err == nil {
					p.missing[k] = true
				}
			}
		}
	case strings.HasPrefix(s, "Missing communicator data") || strings.HasPrefix(s, "Process ") ||
		strings.Contains(s, "considered dead") || strings.Contains(s, "timeout") ||
		strings.Contains(s, "error") || strings.Contains(s, "have status") || strings.Contains(s, "reported"):
	default:
		return
	}
	p.ev(no, s)
}

// rankLine reads "Rank N ...": a missing rank of an INCOMPLETE block, a rank's own operation
// count, or a member of the count group above.
func (p *rasText) rankLine(no int, s string, f []string) {
	k, _ := strconv.Atoi(f[1])
	switch {
	case p.block == "INCOMPLETE":
		p.missing[k] = true
	case strings.Contains(s, " has launched up to operation ") || strings.Contains(s, " has not launched any operations"):
		g := &rasGroup{count: 1, ranks: []int{k}, line: no}
		if i := strings.Index(s, "operation "); i >= 0 && strings.Contains(s, "launched up to") {
			g.value, _ = strconv.ParseInt(strings.Fields(s[i+len("operation "):])[0], 10, 64)
		}
		p.groups = append(p.groups, g)
		p.cur = nil
	case p.cur != nil:
		p.cur.ranks = append(p.cur.ranks, k)
	}
}

func (p *rasText) finish() *Report {
	p.flush()
	r := p.r
	if p.jobGPUs > 0 {
		r.NRanks = p.jobGPUs // the job's ranks; the table's per-communicator sizes are a fallback
	}
	for k := range p.stuck { // a rank listed twice (malformed input) counts as behind
		delete(p.ahead, k)
	}
	r.MissingRanks, r.StuckRanks, r.AheadRanks = sortedInts(p.missing), sortedInts(p.stuck), sortedInts(p.ahead)
	if p.worst != "" {
		r.Status = p.worst
	}
	if p.statusDead && r.Status != StatusDead {
		r.Status = StatusDead
	}
	r.Fix, r.Next = rasFix(r)
	return r
}

// severity orders the statuses, worst last.
func severity(s string) int {
	switch s {
	case "", StatusOK:
		return 0
	case StatusMismatch:
		return 1
	case StatusError:
		return 2
	case StatusIncomplete:
		return 3
	case StatusDead:
		return 4
	}
	return 1 // an unknown RAS error word is at least a mismatch
}

func isInt(s string) bool {
	_, err := strconv.Atoi(s)
	return err == nil
}

func rasFix(r *Report) (string, []next.Command) {
	switch {
	case r.Status == StatusOK:
		return "", nil
	case len(r.MissingRanks) > 0 || r.Status == StatusDead || r.Status == StatusIncomplete:
		return "a process stopped answering (crashed, was killed, or its node went away): find its pod from the process/node " +
			"lines (kubectl get pods -o wide; describe it for OOMKilled/Evicted), read its log; the other ranks wait for it forever " +
			"unless NCCL_TIMEOUT / the PyTorch watchdog aborts them", nil
	case len(r.StuckRanks) > 0:
		return "the stuck ranks did not launch the operation the others wait in: query again (ncclras) — if the counts do not move, " +
			"look at what those ranks do instead (py-spy dump --pid on their nodes, their logs: data loading, a rank-dependent branch " +
			"that skips a collective, an exception swallowed on that rank)", nil
	case r.Status == StatusMismatch:
		return "ranks disagree but RAS did not list which: rerun `ncclras -v` for every rank, twice, to see whether the counts move", nil
	}
	return "read the listed errors; NCCL's own log of the ranks named gives the cause", []next.Command{"doctor nccl-log"}
}

// rasJSON is ncclras -f json (NCCL >= 2.28.7).
type rasJSON struct {
	NCCLVersion   string `json:"nccl_version"`
	Communicators []struct {
		Hash  string `json:"hash"`
		Size  int    `json:"size"`
		Ranks []struct {
			Rank   *int   `json:"rank"`
			Host   string `json:"host"`
			Pid    int    `json:"pid"`
			Status struct {
				InitState      int  `json:"init_state"`
				AsyncError     int  `json:"async_error"`
				FinalizeCalled bool `json:"finalize_called"`
				AbortFlag      bool `json:"abort_flag"`
			} `json:"status"`
			CollectiveCounts map[string]int64 `json:"collective_counts"`
		} `json:"ranks"`
		MissingRanks []struct {
			Rank   *int   `json:"rank"`
			Host   string `json:"host"`
			Pid    int    `json:"pid"`
			Status struct {
				Unresponsive   bool `json:"unresponsive"`
				ConsideredDead bool `json:"considered_dead"`
			} `json:"status"`
		} `json:"missing_ranks"`
	} `json:"communicators"`
	RAS struct {
		TimeoutsCount int `json:"timeouts_count"`
	} `json:"ras"`
}

// analyzeRASJSON reads ncclras -f json: the raw per-rank data, which this package interprets the
// way the text output does (missing ranks, differing operation counts per collective type, errors).
func analyzeRASJSON(in Input) (*Report, error) {
	var d rasJSON
	if err := json.Unmarshal(in.Data, &d); err != nil {
		var se *json.SyntaxError
		if !errors.As(err, &se) || json.Unmarshal(addMissingCommas(in.Data), &d) != nil {
			return nil, fmt.Errorf("%s: reading ncclras JSON: %w", displayName(in.Name), err)
		}
	}
	r := newReport(FormatRASJSON)
	missing, stuck, ahead := map[int]bool{}, map[int]bool{}, map[int]bool{}
	worst := StatusOK
	set := func(s string) {
		if severity(s) > severity(worst) {
			worst = s
		}
	}
	for _, c := range d.Communicators {
		r.NRanks = max(r.NRanks, c.Size)
		for _, m := range c.MissingRanks {
			if m.Rank == nil {
				continue
			}
			missing[*m.Rank] = true
			state := "unresponsive"
			if m.Status.ConsideredDead {
				state = "considered dead"
				set(StatusDead)
			} else {
				set(StatusIncomplete)
			}
			r.Evidence = append(r.Evidence, Evidence{File: in.Name, Text: fmt.Sprintf("communicator %s: rank %d (pid %d on %s) missing: %s", c.Hash, *m.Rank, m.Pid, m.Host, state)})
		}
		// Operation counts per collective type: ranks below the maximum did not launch it.
		ops := map[string]bool{}
		for _, rk := range c.Ranks {
			for op := range rk.CollectiveCounts {
				ops[op] = true
			}
			if rk.Rank != nil && (rk.Status.AsyncError != 0 || (rk.Status.InitState != 0 && rk.Status.InitState != 7)) {
				set(StatusError)
				r.Evidence = append(r.Evidence, Evidence{File: in.Name, Text: fmt.Sprintf("communicator %s: rank %d init_state %d async_error %d", c.Hash, *rk.Rank, rk.Status.InitState, rk.Status.AsyncError)})
			}
		}
		for _, op := range slices.Sorted(maps.Keys(ops)) {
			var top int64 = -1
			differ := false
			for i, rk := range c.Ranks {
				v := rk.CollectiveCounts[op]
				if i > 0 && v != top && top >= 0 {
					differ = true
				}
				top = max(top, v)
			}
			if !differ {
				continue
			}
			set(StatusMismatch)
			if r.Collective != "" {
				// Only the first spread names ranks: a rank can be behind on one collective type or
				// communicator and level on another.
				r.Evidence = append(r.Evidence, Evidence{File: in.Name, Text: fmt.Sprintf("communicator %s: ranks also differ on %s (up to operation %d)", c.Hash, op, top)})
				continue
			}
			for _, rk := range c.Ranks {
				if rk.Rank == nil {
					continue
				}
				if rk.CollectiveCounts[op] < top {
					stuck[*rk.Rank] = true
					r.Evidence = append(r.Evidence, Evidence{File: in.Name, Text: fmt.Sprintf("communicator %s: rank %d (pid %d on %s) launched %s up to operation %d, others %d", c.Hash, *rk.Rank, rk.Pid, rk.Host, op, rk.CollectiveCounts[op], top)})
				} else {
					ahead[*rk.Rank] = true
				}
			}
			r.Collective = fmt.Sprintf("%s operation %d of communicator %s", op, top, c.Hash)
		}
	}
	if d.RAS.TimeoutsCount > 0 {
		r.Evidence = append(r.Evidence, Evidence{File: in.Name, Text: fmt.Sprintf("RAS met %d communication timeout(s) while gathering data", d.RAS.TimeoutsCount)})
	}
	r.Status = worst
	for k := range stuck { // a rank listed twice (malformed input) counts as behind
		delete(ahead, k)
	}
	r.MissingRanks, r.StuckRanks, r.AheadRanks = sortedInts(missing), sortedInts(stuck), sortedInts(ahead)
	r.Fix, r.Next = rasFix(r)
	return r, nil
}

func indentOf(s string) int {
	n := 0
	for n < len(s) && (s[n] == ' ' || s[n] == '\t') {
		n++
	}
	return n
}

func allInts(f []string) bool {
	for _, x := range f {
		if !isInt(x) {
			return false
		}
	}
	return true
}

// addMissingCommas repairs the JSON of ncclras 2.28.9, which writes a missing rank's "nvml_dev"
// with no comma before its "status" object: where a value ends a line and the next line starts
// with a key, it inserts the comma. Strings are skipped, so their contents are never changed.
// It is tried only when the input did not parse, and ncclras puts one key per line.
func addMissingCommas(b []byte) []byte {
	out := make([]byte, 0, len(b)+64)
	inStr, esc := false, false
	var last byte // the last non-space byte outside strings (or the closing quote)
	for i := 0; i < len(b); i++ {
		c := b[i]
		if inStr {
			out = append(out, c)
			switch {
			case esc:
				esc = false
			case c == '\\':
				esc = true
			case c == '"':
				inStr, last = false, '"'
			}
			continue
		}
		if c == '"' {
			// A key or value starting a line right after a value: the comma is missing.
			if valueEnd(last) && lineBreakSince(out) {
				out = insertBeforeSpace(out)
			}
			inStr = true
		}
		out = append(out, c)
		if c != ' ' && c != '\t' && c != '\r' && c != '\n' {
			last = c
		}
	}
	return out
}

func valueEnd(c byte) bool {
	return c == '"' || c == '}' || c == ']' || c == 'e' || c == 'l' || (c >= '0' && c <= '9')
}

// lineBreakSince reports whether out ends with white space that holds a newline.
func lineBreakSince(out []byte) bool {
	for i := len(out) - 1; i >= 0; i-- {
		switch out[i] {
		case '\n':
			return true
		case ' ', '\t', '\r':
			continue
		}
		return false
	}
	return false
}

// insertBeforeSpace puts a comma before the trailing white space of out.
func insertBeforeSpace(out []byte) []byte {
	i := len(out)
	for i > 0 && (out[i-1] == ' ' || out[i-1] == '\t' || out[i-1] == '\r' || out[i-1] == '\n') {
		i--
	}
	out = append(out, 0)
	copy(out[i+1:], out[i:])
	out[i] = ','
	return out
}
