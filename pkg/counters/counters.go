// Package counters reads snapshots of RDMA NIC counters and explains what moved between two of
// them: the InfiniBand port counters and the mlx5 hardware counters under
// /sys/class/infiniband/<dev>/ports/<port>/{counters,hw_counters}/, `ethtool -S <netdev>` (PFC
// pause frames per priority, discards, the vport RDMA byte counters) and `rdma statistic show`.
//
// # Inputs
//
// A snapshot is any mix of:
//
//	/sys/class/infiniband/mlx5_1/ports/1/counters/port_xmit_data:123456      grep -H . <files> (SnapshotCommand)
//	/sys/class/infiniband/mlx5_1/ports/1/hw_counters/np_cnp_sent 7           "path value" (a for/cat loop)
//	NIC statistics:\n     rx_prio3_pause: 12                                 ethtool -S (after "ethtool -S ens1f0" or "== ens1f0 ==")
//	link mlx5_1/1 rx_write_requests 0 out_of_sequence 0 ...                  rdma statistic show
//	mlx5_1 port 1\n  port_xmit_data 123                                      a listing: a header naming device and port,
//	                                                                          then "name value" or "name: value" lines
//
// Lines may carry a prefix (kubectl logs --prefix, a prompt). Ports are keyed "dev:port"
// (mlx5_1:1); ethtool counters by the netdev's name.
//
// # Units
//
// port_xmit_data and port_rcv_data count 4-byte words, not bytes: "Total number of data octets,
// divided by 4 (lanes), transmitted on all VLs. This is a 64-bit counter" (Linux
// Documentation/ABI/stable/sysfs-class-infiniband; PortXmitData/PortRcvData in the IBTA
// PortCounters attribute). Bytes are 4 x the delta. hw_counters/lifespan is the counters' refresh
// period in milliseconds, not a counter, and is left out.
package counters

import (
	"bufio"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"

	"github.com/ain-hpc/ain/pkg/input"
	"github.com/ain-hpc/ain/pkg/lazyre"
)

// SnapshotCommand prints the sysfs part of a snapshot (busybox sh and grep are enough).
const SnapshotCommand = `grep -H . /sys/class/infiniband/*/ports/*/counters/* /sys/class/infiniband/*/ports/*/hw_counters/* 2>/dev/null`

// ProbeCommand is SnapshotCommand as ain's counter probe pods run it: ${AIN_SYSFS_ROOT} is unset in
// a pod (so it reads /sys); only the sandbox's simulated kubelet sets it, to run the same command
// over a simulated /sys (see pkg/ibport.SysfsDumpCommand).
const ProbeCommand = `grep -H . ${AIN_SYSFS_ROOT:-}/sys/class/infiniband/*/ports/*/counters/* ${AIN_SYSFS_ROOT:-}/sys/class/infiniband/*/ports/*/hw_counters/* 2>/dev/null`

// Snapshot is one reading of the counters.
type Snapshot struct {
	// Ports maps "mlx5_1:1" (RDMA ports) or a netdev name (ethtool) to counter values.
	Ports   map[string]map[string]uint64 `json:"ports"`
	Formats []string                     `json:"formats"`
	lines   int
}

// NoCounters is a *NoCountersError naming file when the snapshot holds no counter, else nil.
func (s *Snapshot) NoCounters(file string) error {
	if len(s.Ports) > 0 {
		return nil
	}
	return &NoCountersError{Name: file, Lines: s.lines}
}

var (
	linePrefix = lazyre.New(`^(\[[^\]]*\]\s?|\S+\s+\|\s+)`)
	sysfsRe    = lazyre.New(`/sys/class/infiniband/([^/\s]+)/ports/(\d+)/(counters|hw_counters)/([A-Za-z0-9_]+)(?::|\s+)\s*(\S+)\s*$`)
	sysfsDirRe = lazyre.New(`/sys/class/infiniband/([^/\s]+)/ports/(\d+)(?:/(?:counters|hw_counters))?/?\s*$`)
	ethtoolCmd = lazyre.New(`ethtool\s+(?:-S|--statistics)\s+(\S+)`)
	bannerRe   = lazyre.New(`^\s*[=#\-*]+\s*([A-Za-z][\w.-]*)\s*[=#\-*]+\s*$`)
	portHeadRe = lazyre.New(`^\s*[=#\-\[]*\s*([A-Za-z][A-Za-z0-9_.-]*?)\s*(?:[:/]|\s+port\s+)\s*(\d+)\s*(?:counters|hw counters|hw_counters)?\s*:?\s*[\]=\-#]*\s*$`)
	rdmaStatRe = lazyre.New(`^\s*link\s+([^/\s]+)/(\d+)\s+(.*)$`)
	// rdmaDevRe: names of RDMA devices (mlx5_0, mlx5_bond_0, rocep65s0f0, ibp12s0, irdma0, bnxt_re0,
	// efa_0, rxe0, siw0, hfi1_0, qedr0), to tell "mlx5_0:1" (a port header) from "name: 1" (a counter).
	rdmaDevRe = lazyre.New(`^(mlx\d_\w+|[a-z]+\d*_\d+|rocep\w+|ibp\w+|irdma\d+|bnxt_re\d+|rxe\d+|siw\d+|qedr\d+)$`)
	pairRe    = lazyre.New(`^\s*([A-Za-z][A-Za-z0-9_]*)\s*(?::\s*|\s+)(\d+)\s*$`)
	// relFileRe: grep -H run below the port's directory (counters/port_xmit_data:123).
	relFileRe = lazyre.New(`^\s*(?:\S*/)?(?:counters|hw_counters)/([A-Za-z0-9_]+)(?::|\s+)\s*(\d+)\s*$`)
	// fileBannerRe: a for/cat loop's banner naming the counter file (=== counters/port_xmit_data ===).
	fileBannerRe = lazyre.New(`^\s*[=#\-*]+\s*((?:\S*/)?)([A-Za-z][A-Za-z0-9_]*)\s*[=#\-*]+\s*$`)
	bareValueRe  = lazyre.New(`^\s*(\d+)\s*$`)
	// ethtoolName: names only ethtool -S prints (the PFC, physical-port and vport counters), to
	// tell an ethtool line pasted without its header from an RDMA counter.
	ethtoolName = lazyre.New(`_prio\d|pause|_phy$|vport|^(rx|tx)_(bytes|packets|dropped|errors)$`)
)

// UnnamedPort keys the counters of an RDMA port a paste does not name (grep -H run inside the
// port's directory, a loop over counters/*).
const UnnamedPort = "unnamed-port"

// Shapes says what Parse reads, for the message when a file holds no counters.
const Shapes = `grep -H . /sys/class/infiniband/*/ports/*/counters/* (path:value), "path value" lines, ` +
	`a for/cat loop (=== counters/NAME === then the value), ethtool -S [| grep prio], ` +
	`rdma statistic show, or a "mlx5_0 port 1" header followed by "name value" lines`

// NoCountersError is a file in which Parse found no counter.
type NoCountersError struct {
	Name  string // the file, "-" for stdin
	Lines int
}

func (e *NoCountersError) Error() string {
	return fmt.Sprintf("%s: no counters in %d line(s); expected %s", e.Name, e.Lines, Shapes)
}

// maxLine bounds a line of a snapshot (counter lines are under 100 bytes).
const maxLine = 1 << 20

// Parse reads one snapshot. A line longer than 1 MiB is an *input.LineTooLongError.
func Parse(r io.Reader) (*Snapshot, error) {
	p := &counterParser{s: &Snapshot{Ports: map[string]map[string]uint64{}, Formats: []string{}}, seen: map[string]bool{}}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), maxLine)
	for sc.Scan() {
		p.lineNo++
		if err := p.line(linePrefix().ReplaceAllString(strings.TrimRight(sc.Text(), "\r"), "")); err != nil {
			return nil, err
		}
	}
	if err := sc.Err(); err != nil {
		return nil, input.ScanError(err, p.lineNo+1, maxLine)
	}
	p.s.lines = p.lineNo
	return p.s, nil
}

// counterParser is Parse's state between lines.
type counterParser struct {
	s           *Snapshot
	seen        map[string]bool // formats already in s.Formats
	section     string          // the port or netdev the following "name value" lines belong to
	sectionKind string
	pendingDev  string // a netdev named by an ethtool command line, waiting for "NIC statistics:"
	lineNo      int
	// a loop's banner named a counter file; its value is the next bare number.
	pendingPort, pendingName string
}

// set records one counter of port, read in the format fmtName.
func (p *counterParser) set(port, name, val string, fmtName string) error {
	v, err := strconv.ParseUint(val, 10, 64)
	if err != nil {
		return fmt.Errorf("line %d: %s %s: %q is not a counter value (want a non-negative integer)", p.lineNo, port, name, val)
	}
	if name == "lifespan" {
		return nil
	}
	m := p.s.Ports[port]
	if m == nil {
		m = map[string]uint64{}
		p.s.Ports[port] = m
	}
	m[name] = v
	if !p.seen[fmtName] {
		p.seen[fmtName] = true
		p.s.Formats = append(p.s.Formats, fmtName)
	}
	return nil
}

// line reads one line, its launcher prefix removed; the first form that matches wins.
func (p *counterParser) line(line string) error {
	if done, err := p.fileLine(line); done || err != nil {
		return err
	}
	if m := sysfsDirRe().FindStringSubmatch(line); m != nil {
		p.section, p.sectionKind = m[1]+":"+m[2], "listing"
		return nil
	}
	if m := ethtoolCmd().FindStringSubmatch(line); m != nil {
		// The counters follow, with or without the "NIC statistics:" line (a grep drops it).
		p.pendingDev = m[1]
		p.section, p.sectionKind = m[1], "ethtool"
		return nil
	}
	if strings.TrimSpace(line) == "NIC statistics:" {
		p.nicStatistics()
		return nil
	}
	if m := rdmaStatRe().FindStringSubmatch(line); m != nil {
		f := strings.Fields(m[3])
		port := m[1] + ":" + m[2]
		for i := 0; i+1 < len(f); i += 2 {
			if err := p.set(port, f[i], f[i+1], "rdma-statistic"); err != nil {
				return err
			}
		}
		return nil
	}
	if m := portHeadRe().FindStringSubmatch(line); m != nil && rdmaDevRe().MatchString(m[1]) {
		p.section, p.sectionKind = m[1]+":"+m[2], "listing"
		return nil
	}
	return p.pairLine(line)
}

// fileLine reads the forms that name a counter file (a sysfs path with its value, a loop's
// banner and the bare value after it, grep's "file:value") and reports whether line was one.
func (p *counterParser) fileLine(line string) (bool, error) {
	if m := sysfsRe().FindStringSubmatch(line); m != nil {
		return true, p.set(m[1]+":"+m[2], m[4], m[5], "sysfs")
	}
	if p.pendingName != "" {
		name, port := p.pendingName, p.pendingPort
		p.pendingName = ""
		if m := bareValueRe().FindStringSubmatch(line); m != nil {
			return true, p.set(port, name, m[1], "loop")
		}
	}
	if m := relFileRe().FindStringSubmatch(line); m != nil {
		return true, p.set(portOr(p.section, p.sectionKind), m[1], m[2], "grep-relative")
	}
	if m := fileBannerRe().FindStringSubmatch(line); m != nil && (strings.HasSuffix(m[1], "counters/") || isKnown(m[2])) {
		// for f in counters/*; do echo "=== $f ==="; cat $f; done
		port := portOr(p.section, p.sectionKind)
		if d := sysfsDirRe().FindStringSubmatch(strings.TrimSuffix(m[1], "/")); d != nil {
			port = d[1] + ":" + d[2]
		}
		p.pendingName, p.pendingPort = m[2], port
		return true, nil
	}
	return false, nil
}

// nicStatistics opens the section of ethtool -S's "NIC statistics:" line, named by the
// ethtool command or banner before it, or else numbered.
func (p *counterParser) nicStatistics() {
	dev := p.pendingDev
	if dev == "" {
		if p.sectionKind == "banner" {
			dev = p.section
		} else {
			dev = "ethtool" + strconv.Itoa(len(p.s.Ports))
		}
	}
	p.section, p.sectionKind, p.pendingDev = dev, "ethtool", ""
}

// pairLine reads a "name value" counter of the current section, or a banner that opens one.
func (p *counterParser) pairLine(line string) error {
	if m := pairRe().FindStringSubmatch(line); m != nil && p.section == "" && isKnown(m[1]) {
		// No header: ethtool -S piped through grep, or grep -H run inside the counters
		// directory. Only a counter ain knows opens such a section, so that "epoch 3" in some
		// other file is not read as a counter.
		if ethtoolName().MatchString(m[1]) {
			p.section, p.sectionKind = "ethtool"+strconv.Itoa(len(p.s.Ports)), "ethtool"
		} else {
			p.section, p.sectionKind = UnnamedPort, "listing"
		}
	}
	if m := pairRe().FindStringSubmatch(line); m != nil && p.section != "" {
		kind := p.sectionKind
		if kind == "banner" {
			kind = "listing"
		}
		return p.set(p.section, m[1], m[2], kind)
	}
	if m := bannerRe().FindStringSubmatch(line); m != nil {
		p.section, p.sectionKind = m[1], "banner"
	}
	return nil
}

// portOr is the port a relative counter path belongs to: the section a header named, or UnnamedPort.
func portOr(section, kind string) string {
	if kind == "listing" && section != "" {
		return section
	}
	return UnnamedPort
}

// PortNames lists the snapshot's ports, sorted.
func (s *Snapshot) PortNames() []string {
	names := make([]string, 0, len(s.Ports))
	for p := range s.Ports {
		names = append(names, p)
	}
	sort.Strings(names)
	return names
}

// isKnown reports whether name is a counter ain knows (a loop's banner may name just the file).
func isKnown(name string) bool {
	_, ok := Describe(name)
	return ok
}
