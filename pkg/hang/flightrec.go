package hang

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/ain-hpc/ain/pkg/next"
)

// frDump is what this package reads of one rank's Flight Recorder dump (torch
// FlightRecorder::dump, keys as in the flight recorder tutorial and fr_trace's loader).
type frDump struct {
	file string
	rank int
	pgs  map[string]*frPG // by process group name (pg_config key)
}

type frPG struct {
	desc  string
	ranks []int // global ranks of the group, from pg_config
	// From pg_status when present, else from the entries.
	lastEnq, lastStarted, lastComp int64
	entries                        map[int64]frEntry // collectives (not p2p) by collective_seq_id
}

type frEntry struct {
	seq    int64
	name   string // profiling_name: "nccl:all_reduce"
	state  string // scheduled, started, completed
	inSize string // input_sizes as printed
}

// analyzeFR reads one dump per rank and finds, per process group, the oldest collective that
// some rank enqueued and did not complete: the ranks that never enqueued it are stuck (they did
// not enter it), the ones that did are ahead and wait in it. Groups are compared by name; ranks
// are the global ranks of pg_config. P2P operations (is_p2p) are not matched.
func analyzeFR(ins []Input) (*Report, error) {
	r := newReport(FormatFlightRecorder)
	dumps, err := readFRDumps(ins)
	if err != nil {
		return nil, err
	}
	groups := frGroups(dumps)
	names := slices.Sorted(maps.Keys(groups))
	allRanks := map[int]bool{}
	for k := range dumps {
		allRanks[k] = true
	}
	for _, g := range groups {
		for k := range g.ranks {
			allRanks[k] = true
		}
	}
	r.NRanks = len(allRanks)
	missing := map[int]bool{}
	for k := range allRanks {
		if dumps[k] == nil {
			missing[k] = true
		}
	}
	for _, k := range sortedInts(missing) {
		r.Evidence = append(r.Evidence, Evidence{Text: fmt.Sprintf("no dump for rank %d (a member of the process groups the other dumps list)", k)})
	}
	if best := hungGroup(names, groups, dumps); best != nil {
		best.report(r, dumps)
	}
	// Collectives with the same sequence number that differ between ranks (op or sizes).
	for _, n := range names {
		if e := firstDifference(n, groups[n].ranks, dumps); e != "" {
			r.Evidence = append(r.Evidence, Evidence{Text: e})
			if r.Status == StatusOK {
				r.Status = StatusMismatch
			}
			break
		}
	}
	if len(missing) > 0 && severity(StatusIncomplete) > severity(r.Status) {
		r.Status = StatusIncomplete
	}
	r.MissingRanks = sortedInts(missing)
	r.Fix, r.Next = frFix(r)
	return r, nil
}

// readFRDumps reads every rank's dump; two dumps of one rank are an error.
func readFRDumps(ins []Input) (map[int]*frDump, error) {
	dumps := map[int]*frDump{}
	for _, in := range ins {
		d, err := readFR(in)
		if err != nil {
			return nil, err
		}
		if prev, dup := dumps[d.rank]; dup {
			return nil, fmt.Errorf("%s and %s are both rank %d's dump (the rank is read from the file name's trailing digits, or the dump's \"rank\")",
				displayName(prev.file), displayName(in.Name), d.rank)
		}
		dumps[d.rank] = d
	}
	return dumps, nil
}

// frGroup is a process group as all the dumps together know it.
type frGroup struct {
	name, desc string
	ranks      map[int]bool
}

// frGroups is every group any rank knows, with the union of its member ranks.
func frGroups(dumps map[int]*frDump) map[string]*frGroup {
	groups := map[string]*frGroup{}
	for rank, d := range dumps {
		for name, pg := range d.pgs {
			g := groups[name]
			if g == nil {
				g = &frGroup{name: name, desc: pg.desc, ranks: map[int]bool{}}
				groups[name] = g
			}
			for _, k := range pg.ranks {
				g.ranks[k] = true
			}
			if len(pg.ranks) == 0 {
				g.ranks[rank] = true
			}
		}
	}
	return groups
}

// frVerdict is one group's collective number seq, with the ranks that did not enter it (stuck)
// and those that did (ahead).
type frVerdict struct {
	group        *frGroup
	seq          int64
	stuck, ahead map[int]bool
}

// hungGroup finds the hung group: the one whose oldest incomplete collective has ranks that did
// not enter it (the lowest such collective of all groups); else a group where every rank waits
// in one collective; nil when no rank waits.
func hungGroup(names []string, groups map[string]*frGroup, dumps map[int]*frDump) *frVerdict {
	var best, inFlight *frVerdict
	for _, n := range names {
		v := groupVerdict(groups[n], dumps)
		switch {
		case v == nil:
		case len(v.stuck) > 0 && (best == nil || v.seq < best.seq):
			best = v
		case len(v.stuck) == 0 && inFlight == nil:
			inFlight = v
		}
	}
	if best == nil {
		return inFlight
	}
	return best
}

// groupVerdict judges one group: nil when none of its ranks waits in a collective.
func groupVerdict(g *frGroup, dumps map[int]*frDump) *frVerdict {
	n := g.name
	var seq int64 = -1
	for k := range g.ranks {
		d := dumps[k]
		if d == nil || d.pgs[n] == nil {
			continue
		}
		pg := d.pgs[n]
		if pg.lastEnq > pg.lastComp { // this rank waits in lastComp+1
			if w := pg.lastComp + 1; seq < 0 || w < seq {
				seq = w
			}
		}
	}
	if seq < 0 {
		return nil
	}
	v := splitAt(g, dumps, seq, true)
	if len(v.stuck) == 0 {
		// Every rank entered the oldest incomplete collective. If some ranks already issued a
		// later one that others did not (torchfrtrace's "Not all ranks joining collective N"),
		// name that one: its missing ranks are the ones to look at.
		var top int64 = -1
		for k := range g.ranks {
			if d := dumps[k]; d != nil && d.pgs[n] != nil {
				top = max(top, d.pgs[n].lastEnq)
			}
		}
		if later := splitAt(g, dumps, top, false); len(later.stuck) > 0 {
			v = later
		}
	}
	return v
}

// splitAt sorts g's ranks with a dump into those that enqueued collective seq (ahead) and those
// that did not (stuck); a rank whose dump lacks the group counts as stuck when absentStuck.
func splitAt(g *frGroup, dumps map[int]*frDump, seq int64, absentStuck bool) *frVerdict {
	v := &frVerdict{group: g, seq: seq, stuck: map[int]bool{}, ahead: map[int]bool{}}
	for k := range g.ranks {
		d := dumps[k]
		if d == nil {
			continue
		}
		pg := d.pgs[g.name]
		switch {
		case pg == nil && absentStuck:
			v.stuck[k] = true
		case pg == nil:
		case pg.lastEnq < seq:
			v.stuck[k] = true
		default:
			v.ahead[k] = true
		}
	}
	return v
}

// report writes the verdict into r: the collective, the ranks on each side and each rank's
// evidence.
func (v *frVerdict) report(r *Report, dumps map[int]*frDump) {
	n := v.group.name
	r.StuckRanks, r.AheadRanks = sortedInts(v.stuck), sortedInts(v.ahead)
	op := ""
	for _, k := range r.AheadRanks {
		if e, ok := dumps[k].pgs[n].entries[v.seq]; ok {
			op = e.name
			break
		}
	}
	if op == "" {
		op = "collective"
	}
	desc := ""
	if v.group.desc != "" {
		desc = ":" + v.group.desc
	}
	r.Collective = fmt.Sprintf("%s #%d in process group %s%s", op, v.seq, n, desc)
	for _, k := range slices.Sorted(maps.Keys(dumps)) {
		pg := dumps[k].pgs[n]
		if pg == nil || !v.group.ranks[k] {
			continue
		}
		role := "entered it and waits"
		if v.stuck[k] {
			role = "did not enter it"
		}
		r.Evidence = append(r.Evidence, Evidence{File: dumps[k].file, Text: fmt.Sprintf(
			"rank %d, process group %s: last enqueued #%d, started #%d, completed #%d: %s", k, n, pg.lastEnq, pg.lastStarted, pg.lastComp, role)})
	}
	if len(v.stuck) > 0 {
		r.Status = StatusMismatch
	} else {
		r.Status = StatusInCollective
	}
}

// firstDifference compares, for one group, the collectives every rank recorded with the same
// sequence number and describes the first that differ in op or input sizes.
func firstDifference(name string, members map[int]bool, dumps map[int]*frDump) string {
	seqs := map[int64]bool{}
	for k := range members {
		if d := dumps[k]; d != nil && d.pgs[name] != nil {
			for s := range d.pgs[name].entries {
				seqs[s] = true
			}
		}
	}
	ranks := slices.Sorted(maps.Keys(members))
	for _, s := range slices.Sorted(maps.Keys(seqs)) {
		var ref *frEntry
		refRank := -1
		for _, k := range ranks {
			d := dumps[k]
			if d == nil || d.pgs[name] == nil {
				continue
			}
			e, ok := d.pgs[name].entries[s]
			if !ok {
				continue
			}
			if ref == nil {
				ref, refRank = &e, k
				continue
			}
			if e.name != ref.name || (e.inSize != "" && ref.inSize != "" && e.inSize != ref.inSize) {
				return fmt.Sprintf("collective #%d of process group %s differs: rank %d ran %s %s, rank %d ran %s %s (a rank-dependent code path issued a different collective)",
					s, name, refRank, ref.name, ref.inSize, k, e.name, e.inSize)
			}
		}
	}
	return ""
}

func frFix(r *Report) (string, []next.Command) {
	switch {
	case len(r.StuckRanks) > 0:
		return "the stuck ranks never issued the collective the others wait in: read their stack (py-spy dump, the Python " +
			"stack in their dump's frames) and log; typical causes are a rank-dependent branch that skips or adds a collective, " +
			"data loading on that rank, or an exception on it. torchfrtrace (PyTorch) prints the same analysis with stacks", nil
	case r.Status == StatusInCollective:
		return "every rank entered the collective and none completed it: the hang is inside NCCL or the network — read the NCCL " +
			"logs, query NCCL RAS (`ncclras`) and check the ports", []next.Command{"doctor nccl-log", "doctor ib-ports"}
	case len(r.MissingRanks) > 0:
		return "some ranks left no dump: their process probably died first (OOM, segfault); read their pods' state and logs, and " +
			"check TORCH_NCCL_DUMP_ON_TIMEOUT=1 and TORCH_NCCL_DEBUG_INFO_TEMP_FILE point to a volume every pod writes to", nil
	case r.Status == StatusMismatch:
		return "ranks issued different collectives at the same sequence number: find the rank-dependent code path", nil
	}
	return "", nil
}

// readFR decodes one dump (pickle or JSON) into frDump.
func readFR(in Input) (*frDump, error) {
	var root any
	var err error
	t := strings.TrimLeft(string(in.Data[:min(len(in.Data), 8)]), " \t\r\n")
	if strings.HasPrefix(t, "{") {
		err = json.Unmarshal(in.Data, &root)
	} else {
		root, err = unpickle(in.Data)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: not a readable Flight Recorder dump: %w", displayName(in.Name), err)
	}
	m, ok := root.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("%s: a Flight Recorder dump is a dict with \"entries\" and \"pg_config\"; this one is a %T", displayName(in.Name), root)
	}
	d := &frDump{file: in.Name, pgs: map[string]*frPG{}}
	rank, ok := rankFromName(in.Name)
	if v, has := num(m["rank"]); has {
		rank, ok = int(v), true
	}
	if !ok {
		return nil, fmt.Errorf("%s: cannot tell which rank wrote this dump: name the files <prefix><rank> as PyTorch does "+
			"(TORCH_NCCL_DEBUG_INFO_TEMP_FILE, default /tmp/nccl_trace_rank_<rank>)", displayName(in.Name))
	}
	d.rank = rank
	if cfg, ok := m["pg_config"].(map[string]any); ok {
		for name, v := range cfg {
			c, _ := v.(map[string]any)
			pg := d.pg(name)
			pg.desc = str(c["desc"])
			pg.ranks = intList(c["ranks"])
		}
	}
	// pg_status is keyed by the group's numeric pg_id (FlightRecorder::getPgStatus), pg_config and
	// the entries' process_group by its name: the same string for default-named groups, not for
	// named ones (Megatron's). The entries, which carry both, map one to the other.
	idToName := map[string]string{}
	entries, _ := m["entries"].([]any)
	for _, v := range entries {
		e, ok := v.(map[string]any)
		if !ok {
			continue
		}
		if b, _ := e["is_p2p"].(bool); b {
			continue
		}
		name := pgName(e)
		if name == "" {
			continue
		}
		if id, ok := num(e["pg_id"]); ok {
			idToName[strconv.FormatInt(int64(id), 10)] = name
		}
		seq, ok := num(e["collective_seq_id"])
		if !ok || seq <= 0 {
			continue
		}
		pg := d.pg(name)
		if len(pg.entries) >= 1<<16 {
			continue
		}
		ent := frEntry{seq: int64(seq), name: str(e["profiling_name"]), state: str(e["state"]), inSize: compact(e["input_sizes"])}
		pg.entries[ent.seq] = ent
		pg.lastEnq = max(pg.lastEnq, ent.seq)
		if ent.state == "started" || ent.state == "completed" {
			pg.lastStarted = max(pg.lastStarted, ent.seq)
		}
		if ent.state == "completed" {
			pg.lastComp = max(pg.lastComp, ent.seq)
		}
	}
	// pg_status, when present, is authoritative: the ring buffer may have dropped old entries.
	if st, ok := m["pg_status"].(map[string]any); ok {
		for id, v := range st {
			s, _ := v.(map[string]any)
			name := id
			if n, ok := idToName[id]; ok {
				name = n
			}
			pg := d.pg(name)
			if x, ok := num(s["last_enqueued_collective"]); ok {
				pg.lastEnq = int64(x)
			}
			if x, ok := num(s["last_started_collective"]); ok {
				pg.lastStarted = int64(x)
			}
			if x, ok := num(s["last_completed_collective"]); ok {
				pg.lastComp = int64(x)
			}
		}
	}
	return d, nil
}

func (d *frDump) pg(name string) *frPG {
	pg := d.pgs[name]
	if pg == nil {
		pg = &frPG{entries: map[int64]frEntry{}}
		d.pgs[name] = pg
	}
	return pg
}

// pgName reads an entry's process group name: "process_group": ("0", "default_pg") (a tuple,
// decoded as a list), or "pg_id".
func pgName(e map[string]any) string {
	if t, ok := e["process_group"].([]any); ok && len(t) > 0 {
		return str(t[0])
	}
	if v, ok := num(e["pg_id"]); ok {
		return strconv.FormatInt(int64(v), 10)
	}
	return ""
}

func str(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case nil:
		return ""
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64)
	case int64:
		return strconv.FormatInt(x, 10)
	}
	return fmt.Sprint(v)
}

func num(v any) (float64, bool) {
	switch x := v.(type) {
	case int64:
		return float64(x), true
	case float64:
		return x, true
	case string:
		f, err := strconv.ParseFloat(strings.TrimSpace(x), 64)
		return f, err == nil
	}
	return 0, false
}

// intList reads pg_config's ranks: a list, or the string "[0, 1]" torch writes.
func intList(v any) []int {
	var out []int
	switch x := v.(type) {
	case []any:
		for _, e := range x {
			if n, ok := num(e); ok && n >= 0 && n < 1<<24 {
				out = append(out, int(n))
			}
		}
	case string:
		for _, t := range strings.FieldsFunc(x, func(r rune) bool { return r == '[' || r == ']' || r == ',' || r == ' ' }) {
			if n, err := strconv.Atoi(t); err == nil && n >= 0 && n < 1<<24 {
				out = append(out, n)
			}
		}
	}
	if len(out) > 1<<16 {
		out = out[:1<<16]
	}
	return out
}

// compact prints input_sizes ([[3, 4]]) the way Python does.
func compact(v any) string {
	switch x := v.(type) {
	case []any:
		parts := make([]string, 0, len(x))
		for _, e := range x {
			parts = append(parts, compact(e))
		}
		return "[" + strings.Join(parts, ", ") + "]"
	case nil:
		return ""
	}
	return str(v)
}
