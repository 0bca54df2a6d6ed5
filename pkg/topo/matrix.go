package topo

import (
	"bufio"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/ain-hpc/ain/pkg/input"
	"github.com/ain-hpc/ain/pkg/lazyre"
)

var (
	gpuName    = lazyre.New(`^GPU(\d+)$`)
	nicLegend  = lazyre.New(`(?:^|\s)(NIC\d+)\s*:\s*(\S+)\s*$`)
	nvLinks    = lazyre.New(`^NV(\d+)$`)
	affinities = [][]string{{"CPU", "Affinity"}, {"NUMA", "Affinity"}, {"GPU", "NUMA", "ID"}}
)

// maxMatrixLine bounds a line of `nvidia-smi topo -m` (a row is a few hundred bytes).
const maxMatrixLine = 1 << 20

// ParseMatrix reads the output of `nvidia-smi topo -m` (or -mp): the header row (GPU0 ... NIC0 ...
// or mlx5_0 ... from older drivers, then the CPU Affinity, NUMA Affinity and GPU NUMA ID columns
// where printed), a row per device, and the "NIC Legend" that names the NICs. Columns may be
// separated by tabs or spaces, lines may carry a prefix (a shell prompt, kubectl --prefix), and
// the legend and anything after the matrix (topo -p2p, lspci) are ignored. Old drivers printed SOC
// for what is now SYS; it is read as SYS.
//
// A line longer than 1 MiB is an *input.LineTooLongError.
func ParseMatrix(r io.Reader) (*Topology, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), maxMatrixLine)
	p := &matrixParser{rows: map[string][]string{}, rowExtra: map[string][]string{}, legend: map[string]string{}}
	for sc.Scan() {
		p.lineNo++
		if err := p.line(strings.TrimRight(sc.Text(), "\r")); err != nil {
			return nil, err
		}
	}
	if err := sc.Err(); err != nil {
		return nil, input.ScanError(err, p.lineNo+1, maxMatrixLine)
	}
	if p.cols == nil {
		return nil, fmt.Errorf("no topology matrix found: want the output of `nvidia-smi topo -m` (a header row GPU0 GPU1 ... and a row per GPU) or an NCCL topology dump (NCCL_TOPO_DUMP_FILE)")
	}
	return p.topology()
}

// matrixParser is ParseMatrix's state between lines.
type matrixParser struct {
	cols     []string // device columns, in order
	extra    []string // affinity columns after the devices
	colIndex map[string]int
	rows     map[string][]string
	rowExtra map[string][]string
	headerAt int
	done     bool
	legend   map[string]string
	inLegend bool
	lineNo   int
}

// line reads one line: the NIC legend, the header, or a row of the first matrix.
func (p *matrixParser) line(line string) error {
	if m := nicLegend().FindStringSubmatch(line); m != nil && (p.inLegend || p.cols != nil) {
		p.legend[m[1]] = m[2]
		return nil
	}
	if strings.Contains(line, "NIC Legend") {
		p.inLegend = true
		return nil
	}
	f := strings.Fields(line)
	if p.cols == nil {
		if c, e, ok := parseHeader(f); ok {
			p.cols, p.extra, p.headerAt = c, e, p.lineNo
			p.colIndex = make(map[string]int, len(p.cols))
			for i, c := range p.cols {
				p.colIndex[c] = i
			}
		}
		return nil
	}
	if p.done {
		return nil
	}
	if len(f) == 0 {
		if len(p.rows) > 0 {
			p.done = true
		}
		return nil
	}
	return p.row(line, f)
}

// row reads a row: a column's name, then one cell per column with X on the diagonal. A line
// that is not one, after the first rows, ends the matrix.
func (p *matrixParser) row(line string, f []string) error {
	k := -1
	for i, t := range f {
		if _, ok := p.colIndex[t]; ok {
			k = i
			break
		}
	}
	if k < 0 {
		if len(p.rows) > 0 && (strings.HasPrefix(strings.TrimSpace(line), "Legend") || strings.Contains(line, "=")) {
			p.done = true
		}
		return nil
	}
	name := f[k]
	cells := f[k+1:]
	if len(cells) < len(p.cols) {
		if _, dup := p.rows[name]; dup {
			p.done = true // a second, smaller matrix (topo -p2p) reuses the names
			return nil
		}
		if len(p.rows) > 0 {
			return fmt.Errorf("line %d: row %s has %d cells, the header (line %d) has %d columns: is the matrix cut or wrapped? paste it whole", p.lineNo, name, len(cells), p.headerAt, len(p.cols))
		}
		return nil
	}
	if self := cells[p.colIndex[name]]; self != "X" {
		return fmt.Errorf("line %d: row %s has %q in its own column %d, want X: columns out of step with the header (line %d)", p.lineNo, name, self, p.colIndex[name]+1, p.headerAt)
	}
	if _, dup := p.rows[name]; dup {
		p.done = true // a second matrix (topo -p2p) starts with the same names
		return nil
	}
	p.rows[name] = cells[:len(p.cols)]
	p.rowExtra[name] = cells[len(p.cols):]
	return nil
}

// topology builds the Topology from the header and rows read: its NICs, then each GPU with
// its path to every NIC.
func (p *matrixParser) topology() (*Topology, error) {
	t := &Topology{Source: SourceNvidiaSMI}
	var nicCols []int
	for i, c := range p.cols {
		if gpuName().MatchString(c) {
			continue
		}
		nicCols = append(nicCols, i)
		n := NICInfo{Name: c}
		if d, ok := p.legend[c]; ok {
			d := d
			n.Device = &d
		} else if !strings.HasPrefix(c, "NIC") {
			d := c // older drivers name the column by its RDMA device
			n.Device = &d
		}
		t.NICs = append(t.NICs, n)
	}
	for _, c := range p.cols {
		m := gpuName().FindStringSubmatch(c)
		if m == nil {
			continue
		}
		cells, ok := p.rows[c]
		if !ok {
			return nil, fmt.Errorf("line %d: the header names %s but no row for it follows: paste the whole matrix", p.headerAt, c)
		}
		idx, _ := strconv.Atoi(m[1])
		t.GPUs = append(t.GPUs, p.gpu(idx, c, cells))
		path := make([]string, len(nicCols))
		for j, ci := range nicCols {
			cell := cells[ci]
			if cell == "SOC" {
				cell = PathSYS
			}
			path[j] = cell
		}
		t.Path = append(t.Path, path)
	}
	return t, nil
}

// gpu reads GPU idx from its row (column c, cells): its affinities and its NVLinks.
func (p *matrixParser) gpu(idx int, c string, cells []string) GPUInfo {
	g := GPUInfo{Index: idx}
	field := map[string]*string{"CPU Affinity": &g.CPUAffinity, "NUMA Affinity": &g.NUMAAffinity, "GPU NUMA ID": &g.GPUNUMAID}
	for i, v := range p.rowExtra[c] {
		if i >= len(p.extra) {
			break
		}
		if f := field[p.extra[i]]; f != nil {
			*f = v
		}
	}
	for i, other := range p.cols {
		if mm := gpuName().FindStringSubmatch(other); mm != nil {
			if nv := nvLinks().FindStringSubmatch(cells[i]); nv != nil {
				if g.NVLinks == nil {
					g.NVLinks = map[int]int{}
				}
				j, _ := strconv.Atoi(mm[1])
				g.NVLinks[j], _ = strconv.Atoi(nv[1])
			}
		}
	}
	return g
}

// parseHeader recognises the header row: device names starting with GPU0, then the affinity
// columns. Anything before GPU0 (a prompt, a prefix) is ignored.
func parseHeader(f []string) (cols, extra []string, ok bool) {
	start := -1
	for i, t := range f {
		if t == "GPU0" {
			start = i
			break
		}
	}
	if start < 0 {
		return nil, nil, false
	}
	i := start
	for ; i < len(f); i++ {
		if f[i] == "CPU" || f[i] == "NUMA" || f[i] == "GPU" {
			break
		}
		cols = append(cols, f[i])
	}
	for i < len(f) {
		matched := false
		for _, a := range affinities {
			if i+len(a) <= len(f) && equalFold(f[i:i+len(a)], a) {
				extra = append(extra, strings.Join(a, " "))
				i += len(a)
				matched = true
				break
			}
		}
		if !matched {
			extra = append(extra, f[i])
			i++
		}
	}
	seen := map[string]bool{}
	for _, c := range cols {
		if seen[c] {
			return nil, nil, false
		}
		seen[c] = true
	}
	return cols, extra, true
}

func equalFold(a, b []string) bool {
	for i := range a {
		if !strings.EqualFold(a[i], b[i]) {
			return false
		}
	}
	return true
}
