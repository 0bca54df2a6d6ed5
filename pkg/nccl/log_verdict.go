// The verdict: each process's transport and GPUDirect RDMA state, and the run's from them.

package nccl

import (
	"fmt"
	"sort"
	"strings"

	"github.com/ain-hpc/ain/pkg/next"
)

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
	case p.initSocket || p.noIBDevice || p.verbsMissing:
		return TransportSocket
	case p.intraOnly || p.nnodes == 1:
		return TransportNone
	}
	return TransportUnknown
}

// weakSocket reports whether the process's socket verdict rests only on "NET/Socket : Using" or
// "NET/Socket : N interfaces found". NCCL 2.3-2.5 print those on every rank at init, IB or not
// (nv_peer_memory#56: `NET/Socket : Using [0]ib0` next to `NET/IB : Using [0]mlx5_0:1/IB`), so a
// rank whose IB line was cut off the log must not read as a socket fallback when others used IB.
func (p *proc) weakSocket() bool {
	return p.chanNet == "" && p.usingNet == "" && !p.netNotFound && p.initOther == "" && !p.ofi &&
		!p.initIB && !p.noIBDevice && !p.verbsMissing && p.initSocket
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
	tally := r.perProcess(procs)
	r.runTransport(tally.counts)
	switch {
	case tally.gdrTrue:
		r.GDR = boolPtr(true)
	case tally.gdrFalse:
		r.GDR = boolPtr(false)
	case r.Transport == TransportSocket:
		r.GDR = boolPtr(false)
	}
	a.findings(r)
	return r
}

// procTally is what the per-process verdicts add up to.
type procTally struct {
	counts            map[string]int // processes per transport
	gdrTrue, gdrFalse bool           // some process used GPUDirect RDMA / some did not
}

// perProcess reads each process's verdict: the devices, ranks and nodes of the run, and with
// more than one process the report's PerRank list, sorted by rank.
func (r *LogReport) perProcess(procs []*proc) procTally {
	tally := procTally{counts: map[string]int{}}
	nranks, nnodes := -1, -1
	multi := len(procs) > 1
	strongNet := false // a process proved a network other than sockets
	for _, p := range procs {
		if t := p.transport(); t != TransportUnknown && t != TransportSocket && t != TransportNone {
			strongNet = true
			break
		}
	}
	for _, p := range procs {
		tr := p.transport()
		if strongNet && p.weakSocket() {
			tr = TransportUnknown
		}
		tally.counts[tr]++
		nranks = max(nranks, p.nranks)
		nnodes = max(nnodes, p.nnodes)
		for _, d := range p.devices {
			if len(r.Devices) < maxDevices && !containsStr(r.Devices, []byte(d)) {
				r.Devices = append(r.Devices, d)
			}
		}
		g := p.gdr()
		if g != nil && *g {
			tally.gdrTrue = true
		} else if g != nil {
			tally.gdrFalse = true
		}
		if multi {
			r.PerRank = append(r.PerRank, p.rankReport(tr, g))
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
	return tally
}

// rankReport is the process's line in the report's PerRank list.
func (p *proc) rankReport(t string, g *bool) RankReport {
	rr := RankReport{Label: p.label, Host: p.host, Pid: p.pid, File: p.file, Transport: t, GDR: g, Devices: p.devices}
	if rr.Devices == nil {
		rr.Devices = []string{}
	}
	if p.rank >= 0 {
		rk := p.rank
		rr.Rank = &rk
	}
	return rr
}

// runTransport sets the run's transport: the one every process agrees on, ignoring processes
// that printed nothing decisive; if they disagree, the worst one, reported as a problem.
func (r *LogReport) runTransport(counts map[string]int) {
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
	// By rank, then by name: two net plugins rank alike, and the map gave them in any order.
	sort.Slice(known, func(i, j int) bool {
		ri, rj := transportRank(known[i]), transportRank(known[j])
		return ri < rj || ri == rj && known[i] < known[j]
	})
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
			Fix:     "compare the perRank list: the ranks on " + known[len(known)-1] + " lack what the others have (RDMA resource, IPC_LOCK, libibverbs, an ACTIVE port: check the ports of their nodes)",
			Next:    []next.Command{"doctor ib-ports"},
		})
	}
}
