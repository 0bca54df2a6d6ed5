package bench

import (
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/ain-hpc/ain/pkg/next"

	"github.com/ain-hpc/ain/pkg/perftest"
)

// RDMAKind marks a saved two-node RDMA result.
const RDMAKind = "ain.dev/v1alpha1/RDMABench"

// RDMAEfficiency is the share of the link's rate a two-node perftest bandwidth test must reach.
// ib_write_bw between two healthy HDR/NDR ports reports about 96-99% of the signalling rate (the
// rest is headers and flow control); under 90% something is in the way (a degraded link, PCIe,
// congestion, the wrong NIC or NUMA node).
const RDMAEfficiency = 0.90

// RDMAResult is one `ain bench rdma` run and the course's comparison (10.6.1): line rate vs
// two-node RDMA vs the NCCL busbw of the last allreduce bench.
type RDMAResult struct {
	Kind     string    `json:"kind"`
	Test     string    `json:"test"` // ib_write_bw, ib_read_bw, ib_write_lat
	Server   string    `json:"serverNode"`
	Client   string    `json:"clientNode"`
	Image    string    `json:"image"`
	Fabric   string    `json:"fabric"`
	Command  []string  `json:"command"` // the client's, with the server's address
	ServerIP string    `json:"serverIP"`
	IPSource string    `json:"serverIPSource"`
	Started  time.Time `json:"started"`
	Finished time.Time `json:"finished"`

	// Device, QPs and GIDIndex are what perftest says it used (its settings block), else what
	// ain asked for; GIDIndexSource says where the -x came from.
	Device         string `json:"device"`
	LinkType       string `json:"linkType,omitempty"`
	QPs            int    `json:"qps"`
	GIDIndex       *int   `json:"gidIndex"`
	GIDIndexSource string `json:"gidIndexSource,omitempty"`
	// GIDChoices are the indexes the pods chose themselves (RoCE without a fixed index): on a
	// shared port each pod's own GID sits at its own index, so the two may differ.
	GIDChoices []PodGID `json:"gidChoices,omitempty"`
	GPUMemory  bool     `json:"gpuMemory"`

	// Line rate: the profile's, the ports' (probed on both nodes), and the one the run is judged
	// against (Expected, with its source).
	ProfileLineRate string     `json:"profileLineRate"`
	ProfileGbps     float64    `json:"profileGbps"`
	Ports           []PortRate `json:"ports,omitempty"`
	ProbedGbps      float64    `json:"probedGbps,omitempty"` // the slower end of the link
	ExpectedGbps    float64    `json:"expectedGbps"`
	ExpectedSource  string     `json:"expectedSource"` // probe or profile
	LineRateNote    string     `json:"lineRateNote,omitempty"`

	// RDMA is this run's best bandwidth (Gb/s) and where; latency tests give TypicalUs instead.
	RDMAGbps    *float64 `json:"rdmaGbps"`
	RDMABytes   int64    `json:"rdmaBytes,omitempty"`
	PctLineRate *float64 `json:"pctLineRate"`
	TypicalUs   *float64 `json:"typicalUs,omitempty"`

	// TCP is the iperf3 baseline between the same nodes (--tcp), nil when not run; TCPNote says
	// why it has no number.
	TCP     *TCPRef `json:"tcp,omitempty"`
	TCPNote string  `json:"tcpNote,omitempty"`

	// NCCL is the last allreduce bench found (nil: NCCLNote says why).
	NCCL     *NCCLRef `json:"nccl"`
	NCCLNote string   `json:"ncclNote,omitempty"`

	OK       bool     `json:"ok"`
	Verdict  string   `json:"verdict"`
	Problems []string `json:"problems"`
	Notes    []string `json:"notes"`

	Runs      []*perftest.Run `json:"runs"`
	ServerLog string          `json:"serverLog"`
	ClientLog string          `json:"clientLog"`
}

// GIDInPodSource is GIDIndexSource while each pod is to choose its own index (ChoosePort);
// UseGIDChoices replaces it with what they chose.
const GIDInPodSource = "chosen in each pod at start from its own address (the RoCE v2 GID ::ffff:<the pod's IPv4>)"

// PodGID is the GID index one perftest pod chose itself, from its own address.
type PodGID struct {
	Role string `json:"role"` // server or client
	Pod  string `json:"pod"`
	Node string `json:"node"`
	perftest.GIDChoice
}

// UseGIDChoices reads the GID choice each pod printed (perftest.FindGIDChoice) into r: the
// client's index is GIDIndex (the one perftest's client settings show; the server's may differ,
// each end uses its own), GIDIndexSource says which pod chose what from which address, and a pod
// that found no GID of its own address is a problem with its reason. It returns the client's
// choice, nil when it printed none.
func (r *RDMAResult) UseGIDChoices(serverPod, clientPod string, serverLog, clientLog []byte) *perftest.GIDChoice {
	var client *perftest.GIDChoice
	var src []string
	for _, s := range []struct {
		role, pod, node string
		log             []byte
	}{{"client", clientPod, r.Client, clientLog}, {"server", serverPod, r.Server, serverLog}} {
		if s.pod == "" || s.log == nil {
			continue
		}
		ch, fail := perftest.FindGIDChoice(s.log)
		switch {
		case fail != "":
			r.Problems = append(r.Problems, fmt.Sprintf("no RoCE GID for perftest in the %s pod %s on %s: %s", s.role, s.pod, s.node, fail))
		case ch != nil:
			r.GIDChoices = append(r.GIDChoices, PodGID{Role: s.role, Pod: s.pod, Node: s.node, GIDChoice: *ch})
			src = append(src, fmt.Sprintf("index %d chosen in %s pod %s from its address %s (%s:%d, %s)", ch.Index, s.role, s.pod, ch.Address, ch.Device, ch.Port, ch.Netdev))
			if s.role == "client" {
				client = ch
				idx := ch.Index
				r.GIDIndex = &idx
			}
		}
	}
	if len(src) > 0 {
		r.GIDIndexSource = strings.Join(src, "; ")
	}
	return client
}

// TCPRef is the TCP baseline (course 3.10.1): what iperf3's receiver measured between the nodes.
type TCPRef struct {
	Gbps        float64  `json:"gbps"`
	Streams     int      `json:"streams"`
	Seconds     int      `json:"seconds"`
	Retransmits *int64   `json:"retransmits,omitempty"`
	CPUClient   *float64 `json:"cpuClientPercent,omitempty"`
	CPUServer   *float64 `json:"cpuServerPercent,omitempty"`
	Image       string   `json:"image"`
	ClientLog   string   `json:"clientLog"`
}

// NCCLRef is the peak busbw of a saved allreduce bench.
type NCCLRef struct {
	Path        string   `json:"path"`
	Name        string   `json:"name"`
	Finished    string   `json:"finished"`
	Nodes       int      `json:"nodes"`
	Ranks       int      `json:"ranks"`
	Variant     string   `json:"variant"`
	Size        int64    `json:"size"`
	BusbwGBps   float64  `json:"busbwGBps"`
	BusbwGbps   float64  `json:"busbwGbps"`
	NICsPerNode int      `json:"nicsPerNode"`
	PctLineRate *float64 `json:"pctLineRate"`
	LineRate    string   `json:"lineRate"`
	Valid       bool     `json:"valid"`
}

// Analyze reads the client's (and server's) perftest output into r: the settings perftest
// reports and the best row. Call Judge after.
func (r *RDMAResult) Analyze(client, server []byte) {
	r.ClientLog, r.ServerLog = string(client), string(server)
	runs, err := perftest.Parse(strings.NewReader(r.ClientLog))
	if err != nil {
		r.Problems = append(r.Problems, "reading the client's perftest output: "+err.Error())
	}
	r.Runs = runs
	run := r.Run()
	if run == nil {
		msg := "the client printed no perftest result table"
		for _, x := range runs {
			if len(x.Errors) > 0 {
				msg += ": " + strings.Join(x.Errors, "; ")
				break
			}
		}
		r.Problems = append(r.Problems, msg)
		return
	}
	if run.Device != "" {
		r.Device = run.Device
	}
	if run.QPs != nil {
		r.QPs = *run.QPs
	}
	if run.GIDIndex != nil {
		r.GIDIndex = run.GIDIndex
	}
	r.LinkType = run.LinkType
	best := run.Best()
	if best == nil {
		return
	}
	if run.Kind == "bw" {
		if g, ok := run.Gbps(best.BwAverage); ok {
			r.RDMAGbps, r.RDMABytes = &g, best.Bytes
		}
		return
	}
	n := best.TTypical
	if n == nil {
		n = best.TAvg
	}
	if n != nil {
		if v, err := n.Float64(); err == nil {
			r.TypicalUs, r.RDMABytes = &v, best.Bytes
		}
	}
}

// Run is the client's last run with a result table (earlier ones are failed connection tries).
func (r *RDMAResult) Run() *perftest.Run {
	for i := len(r.Runs) - 1; i >= 0; i-- {
		if len(r.Runs[i].Rows) > 0 {
			return r.Runs[i]
		}
	}
	return nil
}

// Judge picks the rate the link should run at and gives the verdict. ports are the IB port
// probe's view of both nodes (empty when it did not run: probeErr says why). The two ends of a
// link should run at the same rate: when they differ, the slower end is degraded and the run is
// judged against the faster one. When the ports and the profile's lineRate disagree, the ports
// win (what the hardware does) and the note says so.
func (r *RDMAResult) Judge(ports []PortRate, probeErr string) {
	r.Kind = RDMAKind
	if r.Problems == nil {
		r.Problems = []string{}
	}
	if r.Notes == nil {
		r.Notes = []string{}
	}
	r.Ports = ports
	end, evidence := fastestPorts(ports, func(port string) bool { return portIsDevice(port, r.Device) })
	sv, cv := end[r.Server], end[r.Client]
	switch {
	case sv > 0 && cv > 0:
		slow, fast := r.Server, r.Client
		if cv < sv {
			slow, fast = r.Client, r.Server
		}
		r.ProbedGbps = math.Min(sv, cv)
		r.ExpectedGbps, r.ExpectedSource = math.Max(sv, cv), "probe"
		if math.Abs(sv-cv)/math.Max(sv, cv) > rateMismatch {
			r.Problems = append(r.Problems, fmt.Sprintf("DEGRADED LINK: %s, but the other end runs at %s Gb/s (%s): the link is judged against %s Gb/s; check the cable, transceiver and port width/speed on %s (ibstat, mlxlink)",
				evidence[slow], fmtG(end[fast]), evidence[fast], fmtG(end[fast]), slow))
		}
	default:
		r.ExpectedGbps, r.ExpectedSource = r.ProfileGbps, "profile"
		why := probeErr
		if why == "" {
			why = "no ACTIVE port with a rate on " + r.Server + " and " + r.Client
			if r.Device != "" {
				why += " for " + r.Device
			}
		}
		r.LineRateNote = fmt.Sprintf("line rate %s is the profile's, not checked against the ports (%s)", r.ProfileLineRate, why)
	}
	if r.ExpectedSource == "probe" && r.ProfileGbps > 0 {
		if math.Abs(r.ExpectedGbps-r.ProfileGbps)/r.ProfileGbps > rateMismatch {
			r.LineRateNote = fmt.Sprintf("LINE RATE MISMATCH: the profile's lineRate is %s but the ports run at %s Gb/s (%s); judged against the ports. Set spec.lineRate: %sGb in the profile, or, if the ports should be faster, check the links.",
				r.ProfileLineRate, fmtG(r.ExpectedGbps), evidence[r.Server], fmtG(r.ExpectedGbps))
		} else {
			r.LineRateNote = fmt.Sprintf("line rate %s Gb/s as probed on %s and %s, as the profile says", fmtG(r.ExpectedGbps), r.Server, r.Client)
		}
	}
	if r.RDMAGbps != nil && r.ExpectedGbps > 0 {
		pct := *r.RDMAGbps / r.ExpectedGbps * 100
		r.PctLineRate = &pct
		if pct < RDMAEfficiency*100 {
			r.Problems = append(r.Problems, fmt.Sprintf("two-node RDMA %s Gb/s is %.1f%% of the %s Gb/s link (a healthy link gives at least %.0f%%)",
				fmtG(*r.RDMAGbps), pct, fmtG(r.ExpectedGbps), RDMAEfficiency*100))
		}
	}
	if r.Fabric == "roce" && r.GIDIndex == nil && r.GIDIndexSource == "" {
		r.Notes = append(r.Notes, "RoCE without a GID index: perftest used GID 0 (a link-local, RoCE v1 GID on most ports); give --gid-index or set gidIndex in the profile")
	}
	r.OK = len(r.Problems) == 0 && (r.RDMAGbps != nil || r.TypicalUs != nil)
	switch {
	case r.OK && r.RDMAGbps != nil:
		r.Verdict = fmt.Sprintf("PASS: %s between %s and %s reached %s Gb/s, %.1f%% of the %s Gb/s link (%s)",
			r.Test, r.Server, r.Client, fmtG(*r.RDMAGbps), *r.PctLineRate, fmtG(r.ExpectedGbps), r.ExpectedSource)
	case r.OK:
		r.Verdict = fmt.Sprintf("PASS: %s between %s and %s: %.2f us typical at %d bytes", r.Test, r.Server, r.Client, *r.TypicalUs, r.RDMABytes)
	default:
		r.Verdict = "FAIL: " + strings.Join(r.Problems, "; ")
	}
}

// portIsDevice: port "mlx5_0:1" belongs to device "mlx5_0" (any device when it is unknown).
func portIsDevice(port, device string) bool {
	if device == "" {
		return true
	}
	d, _, _ := strings.Cut(port, ":")
	return d == device
}

func fmtG(v float64) string { return strconv.FormatFloat(math.Round(v*100)/100, 'f', -1, 64) }

// UseNCCL puts the peak busbw of an allreduce bench result beside the RDMA numbers.
func (r *RDMAResult) UseNCCL(res *Result, path string) {
	if res == nil || len(res.Peaks) == 0 {
		return
	}
	best := res.Peaks[0]
	for _, p := range res.Peaks[1:] {
		if p.Busbw > best.Busbw {
			best = p
		}
	}
	r.NCCL = &NCCLRef{Path: path, Name: res.Name, Finished: res.Finished.UTC().Format(time.RFC3339), Nodes: res.Nodes, Ranks: res.Ranks,
		Variant: best.Variant, Size: best.Size, BusbwGBps: best.Busbw, BusbwGbps: best.Busbw * 8, NICsPerNode: res.NICsPerNode,
		PctLineRate: best.PctLineRate, LineRate: res.LineRate, Valid: res.Valid}
	r.NCCLNote = ""
}

// ErrNoAllreduce: no saved allreduce bench under the results folder.
var ErrNoAllreduce = errors.New("no allreduce result yet")

// LastAllreduce finds the most recent allreduce bench with measurements saved under dir
// (dir/*/result.json, the layout of --out's default ./ain-results/<timestamp>-<name>/, or
// dir/result.json), by its finish time.
func LastAllreduce(dir string) (*Result, string, error) {
	return newestAllreduce(dir, func(r *Result) bool { return len(r.Peaks) > 0 })
}

// newestAllreduce is the most recent allreduce result under dir that keep accepts.
func newestAllreduce(dir string, keep func(*Result) bool) (*Result, string, error) {
	matches, err := filepath.Glob(filepath.Join(dir, "*", ResultJSON))
	if err != nil {
		return nil, "", err
	}
	matches = append(matches, filepath.Join(dir, ResultJSON))
	var best *Result
	bestPath := ""
	for _, m := range matches {
		res, err := Load(m) // other kinds (an rdma result) and unreadable files are not candidates
		if err != nil || !keep(res) {
			continue
		}
		if best == nil || res.Finished.After(best.Finished) {
			best, bestPath = res, m
		}
	}
	if best == nil {
		if _, err := os.Stat(dir); err != nil {
			return nil, "", next.With(fmt.Errorf("%w (%s does not exist: measure the allreduce first)", ErrNoAllreduce, dir), "bench allreduce")
		}
		return nil, "", fmt.Errorf("%w (no allreduce result.json under %s)", ErrNoAllreduce, dir)
	}
	return best, bestPath, nil
}
