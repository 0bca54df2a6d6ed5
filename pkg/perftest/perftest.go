// Package perftest reads the output of the linux-rdma perftest tools (ib_write_bw, ib_read_bw,
// ib_send_bw, ib_atomic_bw and their _lat twins, server or client side) into runs: the test, the
// settings block (device, QPs, link type, MTU, GID index), the local and remote addresses with
// their GIDs, and the result table, whichever columns it has:
//
//	#bytes     #iterations    BW peak[MB/sec]    BW average[MB/sec]   MsgRate[Mpps]      (default)
//	#bytes     #iterations    BW peak[Gb/sec]    BW average[Gb/sec]   MsgRate[Mpps]      (--report_gbits)
//	... BW Port1[MB/sec]   MsgRate Port1[Mpps]   BW Port2 ...                              (--report-per-port)
//	#bytes    #sl      #iterations    BW peak ...                                          (raw QoS)
//	#bytes #iterations    t_min[usec]    t_max[usec]  t_typical[usec]    t_avg[usec]    t_stdev[usec]   99% percentile[usec]   99.9% percentile[usec]
//	#bytes        #iterations       t_avg[usec]    tps average                              (latency with -D)
//
// one row per size (-a prints them all), and a trailing CPU_Util[%] column with --cpu_util.
// The column names are those of perftest's perftest_parameters.h (RESULT_FMT*, REPORT_FMT*).
//
// Values are kept exactly as printed (json.Number), so a report says what the tool said.
// perftest prints latency columns with "%-7.2f" and no separator, so a wide value runs into the
// next one ("2465.901216.65"); such a token is split after each two-decimal number.
package perftest

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/ain-hpc/ain/pkg/input"
	"github.com/ain-hpc/ain/pkg/lazyre"
)

// Run is one perftest invocation's report.
type Run struct {
	Tool string `json:"tool"` // always "perftest"
	// Test is the binary that printed it (ib_write_bw, ...), from the title line or the command
	// line; null when the input has neither.
	Test          *string           `json:"test"`
	Title         string            `json:"title,omitempty"`
	Kind          string            `json:"kind"`  // bw or lat
	Units         string            `json:"units"` // MB/sec, Gb/sec (bandwidth) or usec (latency)
	Bidirectional bool              `json:"bidirectional,omitempty"`
	Device        string            `json:"device,omitempty"`
	QPs           *int              `json:"qps,omitempty"`
	LinkType      string            `json:"linkType,omitempty"` // IB or Ethernet (RoCE)
	Transport     string            `json:"transport,omitempty"`
	Connection    string            `json:"connection,omitempty"` // RC, UC, UD, DC, XRC
	MTU           string            `json:"mtu,omitempty"`
	GIDIndex      *int              `json:"gidIndex,omitempty"`
	Settings      map[string]string `json:"settings,omitempty"` // the whole settings block, as printed
	Local         []Address         `json:"local,omitempty"`
	Remote        []Address         `json:"remote,omitempty"`
	Columns       []string          `json:"columns"`
	Rows          []Row             `json:"rows"`
	Warnings      []string          `json:"warnings,omitempty"`
	Errors        []string          `json:"errors,omitempty"`
	Line          int               `json:"line"` // where the run starts
}

// Address is one QP's "local address:" or "remote address:" line and its GID line.
type Address struct {
	LID  string `json:"lid,omitempty"`
	QPN  string `json:"qpn,omitempty"`
	PSN  string `json:"psn,omitempty"`
	GID  string `json:"gid,omitempty"`  // as printed (decimal bytes joined by ':')
	IPv4 string `json:"ipv4,omitempty"` // the address of an IPv4-mapped RoCE v2 GID
}

// Row is one line of the result table; a column the table lacks is omitted.
type Row struct {
	Bytes        int64        `json:"bytes"`
	SL           *int64       `json:"sl,omitempty"`
	Iterations   int64        `json:"iterations"`
	BwPeak       *json.Number `json:"bwPeak,omitempty"`
	BwAverage    *json.Number `json:"bwAverage,omitempty"`
	MsgRate      *json.Number `json:"msgRate,omitempty"`
	BwPort1      *json.Number `json:"bwPort1,omitempty"`
	MsgRatePort1 *json.Number `json:"msgRatePort1,omitempty"`
	BwPort2      *json.Number `json:"bwPort2,omitempty"`
	MsgRatePort2 *json.Number `json:"msgRatePort2,omitempty"`
	TMin         *json.Number `json:"tMin,omitempty"`
	TMax         *json.Number `json:"tMax,omitempty"`
	TTypical     *json.Number `json:"tTypical,omitempty"`
	TAvg         *json.Number `json:"tAvg,omitempty"`
	TStdev       *json.Number `json:"tStdev,omitempty"`
	P99          *json.Number `json:"p99,omitempty"`
	P999         *json.Number `json:"p999,omitempty"`
	TpsAverage   *json.Number `json:"tpsAverage,omitempty"`
	CPUUtil      *json.Number `json:"cpuUtil,omitempty"`
	Line         int          `json:"line"`
}

// Detect reports whether text looks like perftest output: a perftest result header.
func Detect(text string) bool {
	return headerRe().MatchString(text)
}

var (
	headerRe  = lazyre.New(`(?m)#bytes\s+(#sl\s+)?#iterations\s+(BW peak|t_min|t_avg)`)
	titleRe   = lazyre.New(`^\s*((RDMA_Write|RDMA_Read|Send|Atomic|Raw Ethernet)\b(.*?) ?(BW|Latency) Test)\s*$`)
	cmdRe     = lazyre.New(`\b(ib_(?:write|read|send|atomic)_(?:bw|lat)|raw_ethernet_(?:bw|lat))\b`)
	addrRe    = lazyre.New(`^\s*(local|remote) address:\s*(.*)$`)
	gidRe     = lazyre.New(`^\s*GID:\s*([0-9A-Fa-f:]+)\s*$`)
	settingRe = lazyre.New(`([A-Za-z][A-Za-z0-9_.* /-]*?)\s*:\s*(\S[^\t]*?)\s*(?:\t+|$)`)
	// kubectl logs --prefix ("[pod/x/c] ") and mpirun --tag-output ("[1,0]<stdout>:").
	linePrefixRe = lazyre.New(`^\[[^\]]*\](<\w+>:)?\s?`)
	dashesRe     = lazyre.New(`^\s*-{20,}\s*$`)
	fusedRe      = lazyre.New(`^-?\d+\.\d{2}`)
	// A value kept as printed must also be a JSON number (ParseFloat takes "00", "Inf", "0x1p3").
	jsonNumRe = lazyre.New(`^-?(0|[1-9]\d*)(\.\d+)?([eE][+-]?\d+)?$`)
	errorRe   = lazyre.New(`(?i)couldn't|could not|failed|completion with error|unable to|error|no device|not supported|timeout|timed out`)
	warnRe    = lazyre.New(`(?i)^\s*(warning|conflicting cpu frequency)`)
)

// columnKey maps a header column to the Row field it fills.
var columnKey = map[string]string{
	"#bytes": "bytes", "#sl": "sl", "#iterations": "iterations",
	"BW peak": "bwPeak", "BW average": "bwAverage", "MsgRate": "msgRate",
	"BW Port1": "bwPort1", "MsgRate Port1": "msgRatePort1", "BW Port2": "bwPort2", "MsgRate Port2": "msgRatePort2",
	"t_min": "tMin", "t_max": "tMax", "t_typical": "tTypical", "t_avg": "tAvg", "t_stdev": "tStdev",
	"99% percentile": "p99", "99.9% percentile": "p999", "tps average": "tpsAverage", "CPU_Util": "cpuUtil",
}

// maxLine bounds a line of perftest output (its lines are under 200 bytes).
const maxLine = 1 << 20

// Parse reads every perftest run in r. Text around the runs (a shell prompt, the server's
// "Waiting for client" banner, launcher prefixes) is skipped. A line longer than 1 MiB is an
// *input.LineTooLongError.
func Parse(r io.Reader) ([]*Run, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), maxLine)
	p := &parser{}
	for sc.Scan() {
		p.lineNo++
		if err := p.line(linePrefixRe().ReplaceAllString(strings.TrimRight(sc.Text(), "\r"), "")); err != nil {
			return nil, err
		}
	}
	if err := sc.Err(); err != nil {
		return nil, input.ScanError(err, p.lineNo+1, maxLine)
	}
	// A run with neither a table nor an error is a settings block without results: keep it only
	// when it says why (errors) so a caller sees "no results" with the cause.
	out := p.runs[:0]
	for _, r := range p.runs {
		if len(r.Rows) > 0 || len(r.Errors) > 0 || len(r.Columns) > 0 {
			if len(r.Settings) == 0 {
				r.Settings = nil
			}
			if r.Kind == "" && r.Test != nil {
				r.Kind = (*r.Test)[strings.LastIndex(*r.Test, "_")+1:]
			}
			out = append(out, r)
		}
	}
	return out, nil
}

// parser is Parse's state between lines.
type parser struct {
	runs    []*Run
	cur     *Run
	cols    []string // keys of the current table
	prefix  string   // text before the header's "#bytes": stripped from its rows
	inTable bool
	cmdTest string
	// lastAddr is the address list the last "local/remote address:" line went to.
	lastAddr *[]Address
	lineNo   int
}

func (p *parser) newRun() *Run {
	r := &Run{Tool: "perftest", Settings: map[string]string{}, Columns: []string{}, Rows: []Row{}, Line: p.lineNo}
	if p.cmdTest != "" {
		t := p.cmdTest
		r.Test = &t
	}
	p.runs = append(p.runs, r)
	p.lastAddr = nil
	return r
}

// line reads one line, its launcher prefix removed: a command line, a run's title, a table
// header, or a line of the current run.
func (p *parser) line(raw string) error {
	line := raw
	if p.prefix != "" {
		line = strings.TrimPrefix(line, p.prefix)
	}
	if m := cmdRe().FindStringSubmatch(line); m != nil && !p.inTable && !strings.Contains(line, "Test") {
		p.command(m[1])
		return nil
	}
	if m := titleRe().FindStringSubmatch(line); m != nil {
		p.title(m)
		return nil
	}
	if i := strings.Index(raw, "#bytes"); i >= 0 && headerRe().MatchString(raw[i:]) {
		return p.header(raw, i)
	}
	if p.cur == nil && !p.opensRun(line) {
		return nil
	}
	return p.runLine(line)
}

// command reads the perftest command line that names the test of the next run.
func (p *parser) command(test string) {
	p.cmdTest = test
	if p.cur != nil && (len(p.cur.Rows) > 0 || len(p.cur.Errors) > 0) {
		p.cur = nil // the next invocation
	}
	if p.cur != nil && len(p.cur.Rows) == 0 && p.cur.Test == nil {
		t := p.cmdTest
		p.cur.Test = &t
	}
}

// title reads a run's title (titleRe's submatches m), which opens a new run unless the
// current one is still empty.
func (p *parser) title(m []string) {
	p.inTable, p.prefix = false, ""
	if p.cur == nil || len(p.cur.Rows) > 0 || p.cur.Title != "" || len(p.cur.Errors) > 0 {
		p.cur = p.newRun()
	}
	p.cur.Title = m[1]
	p.cur.Bidirectional = strings.Contains(m[3], "Bidirectional")
	if t := testName(m[2], m[4]); t != "" {
		p.cur.Test = &t
	}
}

// header reads a table header whose "#bytes" is at raw[i:]: its columns, and the kind and
// units of the run's results.
func (p *parser) header(raw string, i int) error {
	if p.cur == nil || len(p.cur.Rows) > 0 {
		p.cur = p.newRun()
	}
	p.prefix = strings.TrimRight(raw[:i], " ")
	if p.prefix != "" {
		p.prefix = raw[:i]
	}
	var err error
	p.cols, err = headerColumns(raw[i:])
	if err != nil {
		return fmt.Errorf("line %d: %w", p.lineNo, err)
	}
	p.cur.Columns = p.cols
	p.cur.Kind, p.cur.Units = "lat", "usec"
	if strings.Contains(raw, "BW peak") {
		p.cur.Kind = "bw"
		p.cur.Units = unitsOf(raw[i:])
	}
	p.inTable = true
	return nil
}

// opensRun reads a line seen before any run: an error or a setting opens one. It reports
// whether the line is to be read on as the new run's.
func (p *parser) opensRun(line string) bool {
	if strings.Contains(line, "Waiting for client") || strings.TrimSpace(line) == "" {
		return false
	}
	if errorRe().MatchString(line) && !isSetting(line) {
		// A client that failed before printing anything (could not connect) is a run too.
		p.cur = p.newRun()
		p.cur.Errors = append(p.cur.Errors, fmt.Sprintf("line %d: %s", p.lineNo, strings.TrimSpace(line)))
		return false
	}
	// Settings before a title (a pasted block without it) still start a run.
	if strings.HasPrefix(strings.TrimSpace(line), "Dual-port") || strings.HasPrefix(strings.TrimSpace(line), "Number of qps") {
		p.cur = p.newRun()
		return true
	}
	return false
}

// runLine reads a line of the current run: a table row or rule, an address, a GID, a
// warning, an error or settings.
func (p *parser) runLine(line string) error {
	cur := p.cur
	trim := strings.TrimSpace(line)
	switch {
	case dashesRe().MatchString(line):
		if p.inTable && len(cur.Rows) > 0 {
			p.inTable = false
		}
		return nil
	case trim == "":
		return nil
	case p.inTable && (trim[0] >= '0' && trim[0] <= '9'):
		row, err := parseRow(trim, p.cols, p.lineNo)
		if err != nil {
			return err
		}
		cur.Rows = append(cur.Rows, row)
		return nil
	}
	if m := addrRe().FindStringSubmatch(line); m != nil {
		p.address(m)
		return nil
	}
	if m := gidRe().FindStringSubmatch(line); m != nil {
		// The GID line belongs to the address line right above it.
		if list := p.lastAddr; list != nil && len(*list) > 0 && (*list)[len(*list)-1].GID == "" {
			n := len(*list)
			(*list)[n-1].GID = m[1]
			(*list)[n-1].IPv4 = gidIPv4(m[1])
		}
		return nil
	}
	if warnRe().MatchString(line) {
		cur.Warnings = append(cur.Warnings, fmt.Sprintf("line %d: %s", p.lineNo, trim))
		return nil
	}
	if errorRe().MatchString(line) && !isSetting(line) {
		cur.Errors = append(cur.Errors, fmt.Sprintf("line %d: %s", p.lineNo, trim))
		return nil
	}
	if !p.inTable && len(cur.Rows) == 0 {
		for _, m := range settingRe().FindAllStringSubmatch(line, -1) {
			k, v := strings.TrimSpace(m[1]), strings.TrimSpace(m[2])
			cur.Settings[k] = v
			applySetting(cur, k, v)
		}
	}
	return nil
}

// address reads a "local/remote address:" line (addrRe's submatches m).
func (p *parser) address(m []string) {
	a := parseAddress(m[2])
	if m[1] == "local" {
		p.cur.Local = append(p.cur.Local, a)
		p.lastAddr = &p.cur.Local
	} else {
		p.cur.Remote = append(p.cur.Remote, a)
		p.lastAddr = &p.cur.Remote
	}
}

var settingKeys = []string{"Dual-port", "Device", "Number of qps", "Transport type", "Connection type", "Using SRQ",
	"PCIe relax order", "ibv_wr* API", "TX depth", "RX depth", "CQ Moderation", "Mtu", "Link type", "GID index",
	"Max inline data", "rdma_cm QPs", "Data ex. method", "Outstand reads", "Post List", "Using DDP", "Using Enhanced Reorder"}

func isSetting(line string) bool {
	t := strings.TrimSpace(line)
	for _, k := range settingKeys {
		if strings.HasPrefix(t, k) {
			return true
		}
	}
	return false
}

// applySetting keeps one line of perftest's settings block ("Link type : Ethernet").
func applySetting(r *Run, k, v string) {
	text := map[string]*string{"Device": &r.Device, "Link type": &r.LinkType, "Transport type": &r.Transport,
		"Connection type": &r.Connection, "Mtu": &r.MTU}
	number := map[string]**int{"Number of qps": &r.QPs, "GID index": &r.GIDIndex}
	if f := text[k]; f != nil {
		*f = v
	} else if f := number[k]; f != nil {
		if n, err := strconv.Atoi(v); err == nil {
			*f = &n
		}
	}
}

func testName(verb, kind string) string {
	v := map[string]string{"RDMA_Write": "write", "RDMA_Read": "read", "Send": "send", "Raw Ethernet": "raw_ethernet"}[verb]
	if strings.HasPrefix(verb, "Atomic") {
		v = "atomic"
	}
	k := map[string]string{"BW": "bw", "Latency": "lat"}[kind]
	if v == "" || k == "" {
		return ""
	}
	if v == "raw_ethernet" {
		return "raw_ethernet_" + k
	}
	return "ib_" + v + "_" + k
}

func unitsOf(header string) string {
	if strings.Contains(header, "[Gb/sec]") {
		return "Gb/sec"
	}
	return "MB/sec"
}

// headerColumns splits a result header into its columns' keys. Names with spaces ("BW peak[MB/sec]",
// "99% percentile[usec]", "tps average") end at their "[unit]" or are known pairs.
func headerColumns(h string) ([]string, error) {
	f := strings.Fields(h)
	var keys []string
	for i := 0; i < len(f); i++ {
		name := f[i]
		if !strings.HasPrefix(name, "#") {
			for !strings.Contains(name, "[") && i+1 < len(f) && name != "tps average" {
				if name == "tps" && f[i+1] != "average" {
					break
				}
				i++
				name += " " + f[i]
			}
		}
		if j := strings.Index(name, "["); j >= 0 {
			name = name[:j]
		}
		k, ok := columnKey[name]
		if !ok {
			return nil, fmt.Errorf("perftest result header has an unknown column %q: %s", name, strings.TrimSpace(h))
		}
		keys = append(keys, k)
	}
	if len(keys) < 3 || keys[0] != "bytes" {
		return nil, fmt.Errorf("perftest result header too short: %s", strings.TrimSpace(h))
	}
	return keys, nil
}

// splitFused splits tokens where perftest's unseparated "%-7.2f" columns ran together.
func splitFused(tokens []string) []string {
	out := make([]string, 0, len(tokens))
	for _, t := range tokens {
		if strings.Count(t, ".") < 2 {
			out = append(out, t)
			continue
		}
		rest := t
		for rest != "" {
			m := fusedRe().FindString(rest)
			if m == "" {
				out = append(out, rest)
				break
			}
			out = append(out, m)
			rest = rest[len(m):]
		}
	}
	return out
}

func parseRow(trim string, cols []string, lineNo int) (Row, error) {
	f := splitFused(strings.Fields(trim))
	if len(f) < len(cols) {
		return Row{}, fmt.Errorf("line %d: result row has %d values, the header has %d columns (%s): is the line cut?", lineNo, len(f), len(cols), strings.Join(cols, " "))
	}
	row := Row{Line: lineNo}
	for i, k := range cols {
		v := f[i]
		switch k {
		case "bytes", "iterations", "sl":
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil || n < 0 {
				return Row{}, fmt.Errorf("line %d: column %s: %q is not a count", lineNo, k, v)
			}
			switch k {
			case "bytes":
				row.Bytes = n
			case "iterations":
				row.Iterations = n
			default:
				row.SL = &n
			}
			continue
		}
		if !jsonNumRe().MatchString(v) {
			return Row{}, fmt.Errorf("line %d: column %s: %q is not a number", lineNo, k, v)
		}
		num := json.Number(v)
		*rowField(&row, k) = &num
	}
	return row, nil
}

func rowField(r *Row, k string) **json.Number {
	switch k {
	case "bwPeak":
		return &r.BwPeak
	case "bwAverage":
		return &r.BwAverage
	case "msgRate":
		return &r.MsgRate
	case "bwPort1":
		return &r.BwPort1
	case "msgRatePort1":
		return &r.MsgRatePort1
	case "bwPort2":
		return &r.BwPort2
	case "msgRatePort2":
		return &r.MsgRatePort2
	case "tMin":
		return &r.TMin
	case "tMax":
		return &r.TMax
	case "tTypical":
		return &r.TTypical
	case "tAvg":
		return &r.TAvg
	case "tStdev":
		return &r.TStdev
	case "p99":
		return &r.P99
	case "p999":
		return &r.P999
	case "tpsAverage":
		return &r.TpsAverage
	}
	return &r.CPUUtil
}

func parseAddress(s string) Address {
	var a Address
	f := strings.Fields(s)
	for i := 0; i+1 < len(f); i += 2 {
		switch f[i] {
		case "LID":
			a.LID = f[i+1]
		case "QPN":
			a.QPN = f[i+1]
		case "PSN":
			a.PSN = f[i+1]
		}
	}
	return a
}

// gidIPv4 reads perftest's GID (16 bytes printed in decimal, ':'-joined) and returns the IPv4
// address of an IPv4-mapped GID (::ffff:a.b.c.d, the RoCE v2 GID NCCL wants), else "".
func gidIPv4(g string) string {
	p := strings.Split(g, ":")
	if len(p) != 16 {
		return ""
	}
	b := make([]int, 16)
	for i, s := range p {
		n, err := strconv.Atoi(s)
		if err != nil || n < 0 || n > 255 {
			return ""
		}
		b[i] = n
	}
	for i := 0; i < 10; i++ {
		if b[i] != 0 {
			return ""
		}
	}
	if b[10] != 255 || b[11] != 255 {
		return ""
	}
	return fmt.Sprintf("%d.%d.%d.%d", b[12], b[13], b[14], b[15])
}

// Best is the row with the highest average bandwidth (bandwidth tests) or the lowest typical
// latency (latency tests); nil without rows.
func (r *Run) Best() *Row {
	var best *Row
	var bv float64
	for i := range r.Rows {
		row := &r.Rows[i]
		var n *json.Number
		if r.Kind == "bw" {
			n = row.BwAverage
		} else if n = row.TTypical; n == nil {
			n = row.TAvg
		}
		if n == nil {
			continue
		}
		v, _ := n.Float64()
		if best == nil || (r.Kind == "bw" && v > bv) || (r.Kind != "bw" && v < bv) {
			best, bv = row, v
		}
	}
	return best
}

// Gbps converts a bandwidth as printed in this run's units to Gb/s. perftest's MB/sec is 2^20
// bytes per second and its Gb/sec 10^9 bits per second: print_report_bw in perftest_resources.c
// divides by format_factor = (report_fmt == MBS) ? 0x100000 : 125000000.
func (r *Run) Gbps(n *json.Number) (float64, bool) {
	if n == nil {
		return 0, false
	}
	v, err := n.Float64()
	if err != nil {
		return 0, false
	}
	if r.Units == "Gb/sec" {
		return v, true
	}
	return v * 1048576 * 8 / 1e9, true
}
