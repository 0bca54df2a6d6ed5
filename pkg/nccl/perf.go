package nccl

import (
	"bufio"
	"bytes"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"path"
	"strconv"
	"strings"
)

// PerfCell is one half (out-of-place or in-place) of an nccl-tests result row.
type PerfCell struct {
	TimeUs float64  `json:"timeUs"`
	Algbw  float64  `json:"algbw"`
	Busbw  float64  `json:"busbw"`
	Wrong  *int64   `json:"wrong"`           // #wrong; null when printed N/A (-c 0) or absent
	Error  *float64 `json:"error,omitempty"` // the max-error column of old nccl-tests (before #wrong)
	// PerIter is the per-iteration timing summary of nccl-tests -I 1 (i_min i_max i_p99 i_cv%).
	PerIter *PerIter `json:"perIter,omitempty"`
}

// PerfRow is one message size of an nccl-tests table.
type PerfRow struct {
	Size  int64     `json:"size"`
	Count int64     `json:"count"`
	Type  string    `json:"type"`
	Redop string    `json:"redop"`
	Root  *int      `json:"root"`
	OOP   *PerfCell `json:"oop"`
	IP    *PerfCell `json:"ip"`
}

// PerfRun is one nccl-tests run (one binary invocation's table). The JSON names are a stable interface.
type PerfRun struct {
	Collective         string       `json:"collective"`
	CollectiveInferred bool         `json:"collectiveInferred,omitempty"`
	NRanks             *int         `json:"nranks"`
	NRanksInferred     *int         `json:"nranksInferred,omitempty"`
	Rows               []PerfRow    `json:"rows"`
	AvgBusbw           *json.Number `json:"avgBusbw"`
	MaxBusbw           *float64     `json:"maxBusbw"`
	OutOfBounds        *int64       `json:"outOfBounds"`
	Elided             bool         `json:"elided,omitempty"`
	NCCLTestsVersion   string       `json:"ncclTestsVersion,omitempty"`
	Errors             []string     `json:"errors,omitempty"`
	// Source is "json" for runs read from nccl-tests' -J file; empty for the text table.
	Source      string `json:"source,omitempty"`
	NCCLVersion string `json:"ncclVersion,omitempty"`

	closed  bool // the trailer was read
	maxRank int
	cols    *perfCols
}

const maxPerfRows = 1 << 16
const maxPerfErrors = 20

// perfCols is the column layout read from a table header.
type perfCols struct {
	prefix []string // columns before the first "time": size count type [redop] [root]
	half   []string // columns of one half: time algbw busbw [#wrong|error] ...
}

// ParsePerf reads nccl-tests output (any *_perf binary, any version, with launcher prefixes,
// stripped '#' or elided rows) and returns one PerfRun per run found, in order. Input that
// starts with '{' is read as the JSON file of -J (nccl-tests >= 2.17), one or more documents.
func ParsePerf(r io.Reader) ([]*PerfRun, error) {
	br := bufio.NewReaderSize(r, 64<<10)
	if first, err := firstNonSpace(br); err == nil && first == '{' {
		return parsePerfJSON(br)
	}
	p := &perfParser{}
	sc := bufio.NewScanner(br)
	sc.Buffer(make([]byte, 0, 64<<10), maxLineBytes)
	for sc.Scan() {
		p.line(sc.Bytes())
	}
	if err := sc.Err(); err != nil && err != bufio.ErrTooLong {
		return nil, fmt.Errorf("reading nccl-tests output: %w", err)
	}
	return p.finish(), nil
}

type perfParser struct {
	runs     []*PerfRun
	cur      *PerfRun
	pendName string // a collective name seen before its table
	pendCols *perfCols
}

func (p *perfParser) run() *PerfRun {
	if p.cur == nil {
		p.cur = &PerfRun{Rows: []PerfRow{}, maxRank: -1, Collective: p.pendName, cols: p.pendCols}
		p.runs = append(p.runs, p.cur)
		p.pendName, p.pendCols = "", nil
	}
	return p.cur
}

// startRun closes the current run if it already holds results, so the next lines open a new one.
func (p *perfParser) startRun() {
	if p.cur != nil && (len(p.cur.Rows) > 0 || p.cur.closed) {
		p.cur = nil
	}
}

// setName names the run being read, or the next one if the current one is complete.
func (p *perfParser) setName(name string) {
	p.startRun()
	if p.cur != nil {
		if p.cur.Collective == "" {
			p.cur.Collective = name
		}
		return
	}
	p.pendName = name
}

func (p *perfParser) line(raw []byte) {
	s, _ := stripLinePrefix(raw)
	s = trimRightSpace(s)
	if len(s) == 0 {
		return
	}
	if bytes.Contains(s, bNCCLInfo) || bytes.Contains(s, bNCCLWarn) {
		return
	}
	if s[0] == '$' {
		p.shellCommand(s[1:])
		return
	}
	hashed := s[0] == '#'
	c := s
	if hashed {
		c = trimLeftSpace(s[1:])
	}
	if len(c) == 0 || p.metaLine(c) || hashed {
		return
	}
	p.dataRow(c)
}

// shellCommand names the next run from a pasted shell command: "$ srun ... /path/all_reduce_perf -b 8".
func (p *perfParser) shellCommand(args []byte) {
	for _, f := range bytes.Fields(args) {
		if b := path.Base(string(f)); strings.HasSuffix(b, "_perf") || strings.HasSuffix(b, "_perf_mpi") {
			p.setName(strings.TrimSuffix(b, "_mpi"))
			return
		}
	}
}

// metaLine reads a line that is not a data row (banner, header, summary, marker), with any
// leading '#' removed, and reports whether it was one.
func (p *perfParser) metaLine(c []byte) bool {
	switch {
	case bytes.HasPrefix(c, []byte("Collective test starting:")):
		p.setName(string(bytes.TrimSpace(c[len("Collective test starting:"):])))
	case bytes.HasPrefix(c, []byte("Collective test concluded")):
		if p.cur != nil {
			p.cur.closed = true
		}
	case bytes.HasPrefix(c, []byte("nccl-tests version")):
		p.startRun()
		f := bytes.Fields(c)
		if len(f) >= 3 {
			p.run().NCCLTestsVersion = string(f[2])
		}
	case bytes.HasPrefix(c, []byte("nThread ")):
		p.startRun()
		p.run()
	case bytes.HasPrefix(c, []byte("Rank ")) && bytes.Contains(c, []byte(" Pid ")):
		if n, ok := leadingInt(trimLeftSpace(c[len("Rank "):])); ok {
			r := p.run()
			r.maxRank = max(r.maxRank, n)
		}
	case bytes.Contains(c, []byte("out-of-place")) || bytes.HasPrefix(c, []byte("(B)")) || bytes.HasPrefix(c, []byte("Using devices")):
	case bytes.HasPrefix(c, []byte("size ")) && bytes.Contains(c, []byte(" count ")) &&
		(bytes.Contains(c, []byte(" time ")) || bytes.Contains(c, []byte(" cputime "))): // -C 1 prints cputime
		p.tableHeader(c)
	case bytes.HasPrefix(c, []byte("Out of bounds values")):
		p.outOfBounds(c)
	case bytes.HasPrefix(c, []byte("Avg bus bandwidth")):
		p.avgBusbw(c)
	case bytes.Equal(c, []byte("...")) || bytes.Equal(c, []byte("…")) || bytes.Equal(c, []byte("[...]")):
		if p.cur != nil {
			p.cur.Elided = true
		}
	case bytes.Contains(c, []byte("Test NCCL failure")) || bytes.Contains(c, []byte("Test CUDA failure")) ||
		bytes.Contains(c, []byte("Test failure")) || bytes.Contains(c, []byte("Test timeout")):
		r := p.run()
		if len(r.Errors) < maxPerfErrors {
			r.Errors = append(r.Errors, string(c[:min(len(c), maxTextLen)]))
		}
	default:
		return false
	}
	return true
}

// tableHeader sets the column layout of the run being read, or of the next one if the
// current one is complete.
func (p *perfParser) tableHeader(c []byte) {
	cols := parsePerfHeader(c)
	p.startRun()
	if p.cur != nil {
		p.cur.cols = cols
	} else {
		p.pendCols = cols
	}
}

// outOfBounds reads "Out of bounds values : N OK".
func (p *perfParser) outOfBounds(c []byte) {
	if k := bytes.IndexByte(c, ':'); k >= 0 {
		if n, ok := leadingInt(trimLeftSpace(c[k+1:])); ok {
			v := int64(n)
			p.run().OutOfBounds = &v
		}
	}
}

// avgBusbw reads "Avg bus bandwidth : 31.605", or "31.605 FAILED"/"31.605 OK" when
// NCCL_TESTS_MIN_BW is set; a number closes the run.
func (p *perfParser) avgBusbw(c []byte) {
	k := bytes.IndexByte(c, ':')
	if k < 0 {
		return
	}
	f := strings.Fields(string(c[k+1:]))
	if len(f) == 0 {
		return
	}
	r := p.run()
	if _, err := strconv.ParseFloat(f[0], 64); err == nil && isJSONNumber(f[0]) {
		n := json.Number(f[0])
		r.AvgBusbw = &n
		r.closed = true
	}
	if len(f) > 1 && f[1] == "FAILED" && len(r.Errors) < maxPerfErrors {
		r.Errors = append(r.Errors, "average bus bandwidth "+f[0]+" GB/s is below NCCL_TESTS_MIN_BW")
	}
}

// firstNonSpace returns the first byte that is not white space (a UTF-8 BOM counts as space)
// without consuming it.
func firstNonSpace(br *bufio.Reader) (byte, error) {
	for {
		b, err := br.Peek(1)
		if err != nil {
			return 0, err
		}
		switch b[0] {
		case ' ', '\t', '\r', '\n':
			_, _ = br.ReadByte()
			continue
		case 0xEF:
			if bom, _ := br.Peek(3); len(bom) == 3 && bom[1] == 0xBB && bom[2] == 0xBF {
				_, _ = br.Discard(3)
				continue
			}
		}
		return b[0], nil
	}
}

// isJSONNumber reports whether s can be written verbatim as a JSON number.
func isJSONNumber(s string) bool {
	var n json.Number
	return json.Unmarshal([]byte(s), &n) == nil && !strings.ContainsAny(s, "\"")
}

func parsePerfHeader(c []byte) *perfCols {
	f := bytes.Fields(c)
	cols := &perfCols{}
	i := 0
	isTime := func(b []byte) bool { return bytes.Equal(b, []byte("time")) || bytes.Equal(b, []byte("cputime")) }
	for i < len(f) && !isTime(f[i]) {
		cols.prefix = append(cols.prefix, string(f[i]))
		i++
	}
	if i < len(f) {
		cols.half = append(cols.half, "time")
		i++
		for i < len(f) && !isTime(f[i]) {
			cols.half = append(cols.half, strings.TrimPrefix(string(f[i]), "#"))
			i++
		}
	}
	return cols
}

// typeSizes are the element sizes of the types nccl-tests prints.
var typeSizes = map[string]int64{
	"int8": 1, "uint8": 1, "char": 1, "f8e4m3": 1, "f8e5m2": 1, "fp8_e4m3": 1, "fp8_e5m2": 1,
	"half": 2, "bfloat16": 2, "float16": 2, "bf16": 2, "fp16": 2,
	"int32": 4, "uint32": 4, "int": 4, "float": 4, "float32": 4,
	"int64": 8, "uint64": 8, "double": 8, "float64": 8,
}

func (p *perfParser) dataRow(c []byte) {
	var fbuf [32][]byte
	f := fbuf[:0]
	for _, t := range bytes.Fields(c) {
		if len(f) == cap(fbuf) {
			return
		}
		f = append(f, t)
	}
	if len(f) < 6 {
		return
	}
	size, ok1 := atoiBytes(f[0])
	count, ok2 := atoiBytes(f[1])
	if !ok1 || !ok2 || !isWord(f[2]) {
		return
	}
	row := PerfRow{Size: int64(size), Count: int64(count), Type: string(f[2])}
	rest := f[3:]
	r := p.run()
	cols := r.cols
	// With a header, its columns decide; trailing extras (the -T timestamp) are ignored.
	if cols != nil && len(cols.prefix) >= 3 && len(cols.half) >= 3 &&
		(len(f) >= len(cols.prefix)+2*len(cols.half) || len(f) == len(cols.prefix)+len(cols.half)) {
		for i, name := range cols.prefix[3:] {
			switch name {
			case "redop":
				row.Redop = string(rest[i])
			case "root":
				if n, err := strconv.Atoi(string(rest[i])); err == nil {
					row.Root = &n
				}
			}
		}
		rest = rest[len(cols.prefix)-3:]
		row.OOP = perfCell(rest[:len(cols.half)], cols.half)
		if len(rest) >= 2*len(cols.half) {
			row.IP = perfCell(rest[len(cols.half):], cols.half)
		}
	} else {
		// No header, or one that does not fit: redop is the one word, root an integer
		// that leaves an even number of result columns.
		if len(rest) > 0 && isWord(rest[0]) && !bytes.Equal(rest[0], []byte("N/A")) {
			row.Redop = string(rest[0])
			rest = rest[1:]
		}
		if len(rest)%2 == 1 && len(rest) > 3 {
			if n, err := strconv.Atoi(string(rest[0])); err == nil {
				row.Root = &n
				rest = rest[1:]
			}
		}
		switch {
		case len(rest) >= 6 && len(rest)%2 == 0:
			h := len(rest) / 2
			row.OOP = perfCell(rest[:h], nil)
			row.IP = perfCell(rest[h:], nil)
		case len(rest) == 3 || len(rest) == 4:
			row.OOP = perfCell(rest, nil)
		}
	}
	if row.OOP == nil || (row.IP == nil && len(rest) >= 6) {
		return
	}
	if len(r.Rows) >= maxPerfRows {
		return
	}
	if r.closed && len(r.Rows) > 0 {
		// Rows after a trailer without any header: a concatenated run whose header was cut.
		prev := r
		p.cur = nil
		r = p.run()
		r.cols = prev.cols
		r.Rows = append(r.Rows, row)
		return
	}
	r.Rows = append(r.Rows, row)
}

func isWord(b []byte) bool {
	if len(b) == 0 {
		return false
	}
	c := b[0]
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'
}

func perfCell(t [][]byte, names []string) *PerfCell {
	if len(t) < 3 {
		return nil
	}
	c := &PerfCell{}
	var ok bool
	if c.TimeUs, ok = finite(t[0]); !ok {
		return nil
	}
	if c.Algbw, ok = finite(t[1]); !ok {
		return nil
	}
	if c.Busbw, ok = finite(t[2]); !ok {
		return nil
	}
	if len(t) >= 8 && (len(names) >= 8 || names == nil) {
		// -I 1: "#wrong i_min i_max i_p99 i_cv%" (nccl-tests >= 2.19.2).
		iter := names
		if iter == nil {
			iter = []string{"time", "algbw", "busbw", "wrong", "i_min", "i_max", "i_p99", "i_cv%"}
		}
		if iter[4] == "i_min" {
			p := &PerIter{}
			field := map[string]*float64{"i_min": &p.MinUs, "i_max": &p.MaxUs, "i_p99": &p.P99Us, "i_cv%": &p.CVPct}
			for k := 4; k < 8; k++ {
				if f := field[iter[k]]; f != nil {
					*f, _ = finite(t[k])
				}
			}
			c.PerIter = p
		}
	}
	if len(t) >= 4 {
		name := "wrong"
		if len(names) >= 4 {
			name = names[3]
		}
		v := t[3]
		// New nccl-tests print #wrong with %g ("0", "512", "1e+06"); old ones printed a max
		// error column with %e ("0e+00", "2e-07").
		isError := name == "error" || (len(names) < 4 && (bytes.IndexByte(v, '.') >= 0 || bytes.Contains(v, []byte("e-"))))
		switch {
		case bytes.Equal(v, []byte("N/A")):
		case isError:
			if e, ok := finite(v); ok {
				c.Error = &e
			}
		default:
			if n, err := strconv.ParseInt(string(v), 10, 64); err == nil {
				c.Wrong = &n
			} else if x, ok := finite(v); ok && x >= 0 && x < math.MaxInt64 {
				n := int64(x)
				c.Wrong = &n
			}
		}
	}
	return c
}

func finite(b []byte) (float64, bool) {
	if bytes.Equal(b, []byte("N/A")) {
		return 0, true
	}
	v, err := strconv.ParseFloat(string(b), 64)
	if err != nil {
		return 0, false
	}
	if math.IsInf(v, 0) || math.IsNaN(v) {
		return 0, true
	}
	return v, true
}

func (p *perfParser) finish() []*PerfRun {
	out := make([]*PerfRun, 0, len(p.runs))
	for _, r := range p.runs {
		if len(r.Rows) == 0 && r.AvgBusbw == nil && len(r.Errors) == 0 {
			continue
		}
		r.finish()
		out = append(out, r)
	}
	return out
}

func (r *PerfRun) finish() {
	if r.maxRank >= 0 {
		n := r.maxRank + 1
		r.NRanks = &n
	}
	var best *PerfRow
	for i := range r.Rows {
		row := &r.Rows[i]
		for _, c := range []*PerfCell{row.OOP, row.IP} {
			if c == nil {
				continue
			}
			if r.MaxBusbw == nil || c.Busbw > *r.MaxBusbw {
				v := c.Busbw
				r.MaxBusbw = &v
			}
		}
		if best == nil || row.OOP.Algbw > best.OOP.Algbw {
			best = row
		}
	}
	if r.Collective == "" && best != nil {
		r.Collective = inferCollective(best)
		r.CollectiveInferred = r.Collective != ""
	}
	if r.Collective == "" {
		r.Collective = "unknown"
	}
	if best != nil {
		if n := inferRanks(r.Collective, best); n > 0 {
			r.NRanksInferred = &n
		}
	}
}

// inferCollective names the binary from a row when its banner was not captured: the redop and
// root columns, the busbw/algbw factor (allreduce 2(n-1)/n, gather-like (n-1)/n, else 1) and the
// count, which gather-like tests print per rank.
func inferCollective(row *PerfRow) string {
	ratio := 0.0
	if row.OOP.Algbw > 0 {
		ratio = row.OOP.Busbw / row.OOP.Algbw
	}
	perRank := false
	if ts, ok := typeSizes[row.Type]; ok && row.Count > 0 {
		perRank = row.Size > row.Count*ts
	}
	rooted := row.Root != nil && *row.Root >= 0
	reducing := row.Redop != "" && row.Redop != "none"
	switch {
	case reducing && rooted:
		return "reduce_perf"
	case !reducing && rooted:
		return "broadcast_perf"
	case reducing && ratio > 1.01:
		return "all_reduce_perf"
	case reducing && (perRank || (ratio > 0 && ratio < 0.99)):
		return "reduce_scatter_perf"
	case reducing:
		return "all_reduce_perf"
	case perRank || (ratio > 0 && ratio < 0.99):
		return "all_gather_perf" // alltoall_perf prints the same columns and factor
	case ratio > 0:
		return "sendrecv_perf"
	}
	return ""
}

// inferRanks recovers the rank count from the busbw factor (or, for gather-like tests, the per-rank
// count); 0 when it cannot be told with confidence.
func inferRanks(coll string, row *PerfRow) int {
	base := strings.TrimSuffix(coll, "_perf")
	if ts, ok := typeSizes[row.Type]; ok && row.Count > 0 && row.Size%(row.Count*ts) == 0 {
		switch base {
		case "all_gather", "reduce_scatter", "alltoall", "gather", "scatter":
			if n := row.Size / (row.Count * ts); n >= 2 {
				return int(n)
			}
		}
	}
	if row.OOP.Algbw < 1 {
		return 0
	}
	r := row.OOP.Busbw / row.OOP.Algbw
	var n float64
	switch base {
	case "all_reduce":
		if r >= 2 {
			return 0
		}
		n = 2 / (2 - r)
	case "all_gather", "reduce_scatter", "alltoall":
		if r >= 1 {
			return 0
		}
		n = 1 / (1 - r)
	default:
		return 0
	}
	rn := math.Round(n)
	if rn < 2 || math.Abs(n-rn) > 0.02*rn {
		return 0
	}
	return int(rn)
}

// WritePerfCSV writes one CSV row per message size of every run.
func WritePerfCSV(w io.Writer, runs []*PerfRun) error {
	cw := csv.NewWriter(w)
	_ = cw.Write([]string{"collective", "size", "count", "type", "redop", "root",
		"oop_time_us", "oop_algbw", "oop_busbw", "oop_wrong", "ip_time_us", "ip_algbw", "ip_busbw", "ip_wrong"})
	for _, r := range runs {
		for _, row := range r.Rows {
			rec := []string{r.Collective, strconv.FormatInt(row.Size, 10), strconv.FormatInt(row.Count, 10), row.Type, row.Redop, ""}
			if row.Root != nil {
				rec[5] = strconv.Itoa(*row.Root)
			}
			rec = append(rec, row.OOP.Texts("", "")...)
			rec = append(rec, row.IP.Texts("", "")...)
			_ = cw.Write(rec)
		}
	}
	cw.Flush()
	return cw.Error()
}

// Texts is the cell's time, algbw, busbw and #wrong as text (numbers in their shortest exact
// form); a nil cell gives four times missing, a #wrong nccl-tests did not print noWrong.
func (c *PerfCell) Texts(missing, noWrong string) []string {
	if c == nil {
		return []string{missing, missing, missing, missing}
	}
	wrong := noWrong
	if c.Wrong != nil {
		wrong = strconv.FormatInt(*c.Wrong, 10)
	}
	return []string{fmtFloat(c.TimeUs), fmtFloat(c.Algbw), fmtFloat(c.Busbw), wrong}
}

func fmtFloat(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }
