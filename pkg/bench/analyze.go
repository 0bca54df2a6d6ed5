package bench

import (
	"bufio"
	"bytes"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/ain-hpc/ain/pkg/next"

	"github.com/ain-hpc/ain/pkg/lazyre"
	"github.com/ain-hpc/ain/pkg/nccl"
)

// VariantResult is one variant's MPIJob and what its launcher printed. The JSON names are a
// stable interface (saved results are read back by `ain bench compare` and `ain bench plot`).
type VariantResult struct {
	Variant
	Job      string    `json:"job"`
	Nodes    []string  `json:"nodes,omitempty"` // the worker pods' nodes
	Phase    string    `json:"phase"`           // the job's final phase
	Started  time.Time `json:"started"`
	Finished time.Time `json:"finished"`
	// Seconds is the variant's wall time, from submitting the job to reading its output.
	Seconds float64 `json:"seconds"`

	Perf *nccl.PerfRun `json:"perf"`
	// OutOfBoundsOK is true when the run printed "# Out of bounds values : 0 OK".
	OutOfBoundsOK bool `json:"outOfBoundsOK"`
	// Transport is what NCCL used according to its log lines in the same output.
	Transport string          `json:"transport"`
	GDR       *bool           `json:"gdr"`
	NCCL      *nccl.LogReport `json:"nccl,omitempty"`
	// Tuning is NCCL's algorithm/protocol choice per message size (TUNING lines), when printed.
	Tuning []SizeChoice `json:"tuning,omitempty"`

	// Valid is false when the numbers do not measure what they claim (socket fallback, wrong
	// values, no table); Problems says why. Warnings do not invalidate the result.
	Valid    bool     `json:"valid"`
	Problems []string `json:"problems"`
	Warnings []string `json:"warnings"`
	// Next are the ain commands that look into the problems and warnings.
	Next []next.Command `json:"next,omitempty"`

	// Wire is what the RDMA ports of the variant's nodes carried (counter snapshots before and
	// after), checked against the table and NCCL's transport; nil when no snapshots were taken.
	Wire *Wire `json:"wire,omitempty"`

	// Raw is the launcher's whole output.
	Raw string `json:"raw"`
}

// SizeChoice is NCCL's choice for one allreduce size.
type SizeChoice struct {
	Size  int64  `json:"size"`
	Algo  string `json:"algo"`
	Proto string `json:"proto"`
}

// Problem codes start every Problems entry, so scripts can match them.
const (
	ProblemSocketFallback = "socket-fallback"
	ProblemNoTable        = "no-table"
	ProblemOutOfBounds    = "out-of-bounds"
	ProblemWrong          = "wrong-values"
	ProblemTestError      = "test-error"
	ProblemNoTransport    = "transport-unverified"
	ProblemJobFailed      = "job-failed"
)

// transportCommands look into why NCCL did not use the RDMA fabric: its log per rank, then the
// ports.
var transportCommands = []next.Command{"doctor nccl-log", "doctor ib-ports"}

// Analyze reads one variant's launcher output: the all_reduce_perf table, the out-of-bounds
// trailer, the NCCL transport (checked against the fabric the bench ran on: ib, roce or
// socket) and the TUNING choices. It fills r's measurement fields and validity.
func Analyze(r *VariantResult, raw []byte, fabric string) {
	r.Raw = string(raw)
	r.Perf, r.OutOfBoundsOK, r.Tuning = nil, false, nil
	r.Problems, r.Warnings, r.Next = []string{}, []string{}, nil
	suggest := func(cmds ...next.Command) {
		for _, c := range cmds {
			if !slices.Contains(r.Next, c) {
				r.Next = append(r.Next, c)
			}
		}
	}
	problem := func(code, format string, a ...any) {
		r.Problems = append(r.Problems, code+": "+fmt.Sprintf(format, a...))
		if code == ProblemSocketFallback {
			suggest(transportCommands...)
		}
	}
	runs, _ := nccl.ParsePerf(bytes.NewReader(raw))
	for _, run := range runs {
		if len(run.Rows) > 0 && (run.Collective == "" || strings.HasPrefix(run.Collective, "all_reduce")) {
			r.Perf = run // the last all_reduce table
		}
	}
	switch {
	case r.Perf == nil:
		problem(ProblemNoTable, "no all_reduce_perf table in the launcher's output (did the program start? see the raw output)")
	default:
		p := r.Perf
		switch {
		case p.OutOfBounds == nil:
			problem(ProblemOutOfBounds, "no \"# Out of bounds values\" line: the run did not finish")
		case *p.OutOfBounds > 0:
			problem(ProblemOutOfBounds, "%d out-of-bounds values: the results are wrong, not just slow", *p.OutOfBounds)
		default:
			r.OutOfBoundsOK = true
		}
		var wrong []string
		for _, row := range p.Rows {
			for _, c := range []*nccl.PerfCell{row.OOP, row.IP} {
				if c != nil && c.Wrong != nil && *c.Wrong > 0 {
					wrong = append(wrong, SizeLabel(row.Size))
					break
				}
			}
		}
		if len(wrong) > 0 {
			problem(ProblemWrong, "#wrong > 0 at %s: data corruption (check GPUs, NICs and the NCCL version)", strings.Join(wrong, ", "))
		}
		for _, e := range p.Errors {
			problem(ProblemTestError, "%s", e)
		}
	}
	an := nccl.NewLogAnalyzer()
	_ = an.Feed("launcher", bytes.NewReader(raw))
	rep := an.Report()
	r.NCCL, r.Transport, r.GDR = rep, rep.Transport, rep.GDR
	r.Tuning = TuningPerSize(raw)
	switch {
	case rep.NCCLLines == 0 || rep.Transport == nccl.TransportUnknown:
		problem(ProblemNoTransport, "no NCCL transport lines in the output: the fabric cannot be verified (ain sets NCCL_DEBUG=INFO; keep it)")
	case rep.Transport == nccl.TransportSocket && fabric != "socket":
		problem(ProblemSocketFallback, "NCCL fell back to TCP sockets (`Using network Socket`) on a %s fabric: these numbers measure the Ethernet/TCP path, not RDMA", fabric)
	case fabric == "socket" && rep.Transport != nccl.TransportSocket:
		r.Warnings = append(r.Warnings, fmt.Sprintf("--fabric socket, but NCCL used %s: NCCL_IB_DISABLE did not reach the ranks", rep.Transport))
	case rep.Transport == "mixed" || (fabric != "socket" && rep.Transport != fabric && strings.HasPrefix(rep.Transport, "plugin:")):
		r.Warnings = append(r.Warnings, fmt.Sprintf("NCCL used %s on a %s fabric", rep.Transport, fabric))
	case rep.Transport == nccl.TransportNone:
		r.Warnings = append(r.Warnings, "NCCL used no network (one node: P2P/SHM only): this measures NVLink/PCIe, not the fabric")
	case fabric != "socket" && rep.Transport != fabric:
		r.Warnings = append(r.Warnings, fmt.Sprintf("the profile says %s, NCCL reports %s: check the profile's fabric", fabric, rep.Transport))
	}
	for _, f := range rep.Problems {
		if f.Code == nccl.CodeSocketFallback || f.Code == nccl.CodeNoIBDevice || f.Code == nccl.CodeIBHCANoMatch {
			if fabric != "socket" {
				r.Warnings = append(r.Warnings, f.Message+" (fix: "+f.Fix+")")
				suggest(f.Next...)
			}
			continue
		}
		if f.Code == nccl.CodeMixedTransport {
			problem(ProblemSocketFallback, "%s", f.Message)
			continue
		}
		r.Warnings = append(r.Warnings, f.Message)
	}
	if r.GDR != nil && !*r.GDR && fabric != "socket" && rep.Transport != nccl.TransportSocket {
		r.Warnings = append(r.Warnings, "GPUDirect RDMA is off: data is staged through host memory (check nvidia-peermem and NCCL_NET_GDR_LEVEL)")
	}
	r.Valid = len(r.Problems) == 0
}

var tuningRE = lazyre.New(`AllReduce: (\d+) Bytes -> Algo (\S+) proto (\S+)`)

// TuningPerSize reads NCCL's per-size choices from TUNING lines
// ("AllReduce: 1048576 Bytes -> Algo RING proto SIMPLE ..."), one entry per size (the first seen).
func TuningPerSize(raw []byte) []SizeChoice {
	seen := map[int64]bool{}
	var out []SizeChoice
	sc := bufio.NewScanner(bytes.NewReader(raw))
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Bytes()
		if !bytes.Contains(line, []byte("Bytes -> Algo")) {
			continue
		}
		m := tuningRE().FindSubmatch(line)
		if m == nil {
			continue
		}
		size, err := strconv.ParseInt(string(m[1]), 10, 64)
		if err != nil || seen[size] {
			continue
		}
		seen[size] = true
		out = append(out, SizeChoice{Size: size, Algo: string(m[2]), Proto: string(m[3])})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Size < out[j].Size })
	return out
}

// SizeLabel prints a size in binary units: 8 B, 64 KiB, 1 GiB (exact values only, else bytes).
func SizeLabel(n int64) string {
	units := []string{"B", "KiB", "MiB", "GiB", "TiB"}
	i := 0
	for n >= 1024 && n%1024 == 0 && i < len(units)-1 {
		n /= 1024
		i++
	}
	return strconv.FormatInt(n, 10) + " " + units[i]
}
