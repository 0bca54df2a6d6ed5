package dcgm

import (
	"fmt"
	"sort"
	"strings"

	"github.com/ain-hpc/ain/pkg/next"
)

// Problem kinds.
const (
	KindXID      = "xid"       // DCGM_FI_DEV_XID_ERRORS is not 0
	KindThrottle = "throttle"  // clocks held down by heat or power
	KindIdleRank = "idle_rank" // one rank's GPU idle while the job's other GPUs work
	KindZeroUtil = "zero_util" // a GPU a pod holds at 0%
)

// Severities: a fail makes the check fail; a warn is printed and does not.
const (
	SeverityFail = "fail"
	SeverityWarn = "warn"
)

// Thresholds of the idle verdicts, in percent of GPU utilisation (DCGM_FI_DEV_GPU_UTIL, or SM
// activity when the page has no utilisation).
const (
	IdlePct = 5  // at or below: idle
	BusyPct = 50 // at or above: working
)

// Problem is one verdict on one GPU: what is wrong and what to do.
type Problem struct {
	Kind     string `json:"kind"`
	Severity string `json:"severity"`
	GPU      string `json:"gpu"` // how the text names it: host, index, pod
	Host     string `json:"host,omitempty"`
	Index    string `json:"index"`
	UUID     string `json:"uuid,omitempty"`
	Pod      string `json:"pod,omitempty"` // namespace/name
	Job      string `json:"job,omitempty"` // namespace/prefix the idle verdicts group ranks by
	// XID and its meaning (kind xid); Reasons: the clock event reasons (kind throttle).
	XID     *int64   `json:"xid,omitempty"`
	Reasons []string `json:"reasons,omitempty"`
	What    string   `json:"what"`
	Fix     string   `json:"fix"`
	// Next are the ain commands the fix suggests running.
	Next []next.Command `json:"next,omitempty"`
}

// Report is the verdicts on a set of GPUs.
type Report struct {
	OK       bool      `json:"ok"` // no problem of severity fail
	Summary  string    `json:"summary"`
	Hosts    int       `json:"hosts"`
	GPUs     []GPU     `json:"gpus"`
	Problems []Problem `json:"problems"`
	// NotJudged names the checks no GPU of the input had the field for (dcgm-exporter collects
	// what its counters CSV lists: the default one has no clock event reasons, for instance).
	NotJudged []string `json:"notJudged,omitempty"`
}

// xidMeanings are the well-known XIDs: NVIDIA's Xid catalog
// (https://docs.nvidia.com/deploy/xid-errors/), its description and resolution, in short.
var xidMeanings = map[int64]struct{ what, fix string }{
	13: {"graphics engine exception: most often the application (an out-of-range access, an illegal instruction), rarely the driver or the GPU",
		"restart the job; if it recurs, run the code under compute-sanitizer; if other code hits it on this GPU too, run `dcgmi diag -r 3` on the node"},
	31: {"GPU memory page fault: the application accessed memory it does not own (an MMU fault), rarely a driver bug",
		"debug the application (compute-sanitizer); the GPU itself is usually fine"},
	43: {"GPU stopped processing: a user application faulted and its channel was reset; the GPU stays usable",
		"restart the job and read its own error; no action on the GPU unless other XIDs come with it"},
	48: {"double-bit ECC error: uncorrectable GPU memory error",
		"drain the node, reset the GPU (nvidia-smi -r, or reboot) to retire the page or remap the row; if it recurs, the GPU needs service (RMA)"},
	63: {"ECC page retirement or row remapping recorded: a memory row was marked for remapping",
		"reset the GPU when it is free (drain the node, nvidia-smi -r) to apply the remapping; no service needed unless XID 64 follows"},
	64: {"ECC page retirement or row remapping failed to record",
		"drain the node and reset the GPU; if it recurs, the GPU needs service (RMA)"},
	74: {"NVLink error: a link between GPUs (or to an NVSwitch) failed",
		"drain the node, check the links (nvidia-smi nvlink -s, nvidia-smi nvlink -e), reset the GPUs; if it recurs, hardware service (GPU, baseboard, NVSwitch)"},
	79: {"GPU has fallen off the bus: the GPU no longer answers on PCIe",
		"drain the node (kubectl drain) and power-cycle it; check the node's power, cooling and the GPU's seating; if it recurs, the GPU or baseboard needs service (RMA)"},
	92: {"high single-bit ECC error rate: corrected errors, many of them",
		"watch the GPU; reset it when free; if the rate stays high, contact support"},
	94: {"contained ECC error: an uncorrectable memory error stopped only the application that touched it",
		"restart the job (other work on the GPU continues); reset the GPU when free to remap the row"},
	95: {"uncontained ECC error: an uncorrectable memory error that may have affected every application on the GPU",
		"drain the node and reset the GPU before running anything on it; if it recurs, the GPU needs service (RMA)"},
}

// XIDMeaning is the catalog's short meaning of a well-known XID, or "" for another.
func XIDMeaning(xid int64) string { return xidMeanings[xid].what }

// Analyze gives the verdicts on the GPUs of a sample (or of several, one per node, merged); the
// report holds them sorted by host, index, MIG instance and pod.
func Analyze(gpus []GPU) *Report {
	gpus = append([]GPU{}, gpus...)
	sortGPUs(gpus)
	r := &Report{GPUs: gpus, Problems: []Problem{}}
	hosts := map[string]bool{}
	for i := range gpus {
		hosts[gpus[i].Host] = true
	}
	r.Hosts = len(hosts)
	for i := range gpus {
		g := &gpus[i]
		if g.XID != nil && *g.XID != 0 {
			r.Problems = append(r.Problems, xidProblem(g))
		}
		if p, ok := throttleProblem(g); ok {
			r.Problems = append(r.Problems, p)
		}
	}
	r.Problems = append(r.Problems, idleProblems(gpus)...)
	r.OK = true
	fails := 0
	for _, p := range r.Problems {
		if p.Severity == SeverityFail {
			fails++
			r.OK = false
		}
	}
	inPods := 0
	for i := range gpus {
		if gpus[i].Pod != "" {
			inPods++
		}
	}
	what := fmt.Sprintf("%d GPU series on %d host(s), %d held by pods", len(gpus), r.Hosts, inPods)
	switch {
	case fails > 0 && fails < len(r.Problems):
		r.Summary = fmt.Sprintf("%d problem(s), %d warning(s) (%s)", fails, len(r.Problems)-fails, what)
	case fails > 0:
		r.Summary = fmt.Sprintf("%d problem(s) (%s)", fails, what)
	case len(r.Problems) > 0:
		r.Summary = fmt.Sprintf("healthy, %d warning(s) (%s)", len(r.Problems), what)
	default:
		r.Summary = "healthy (" + what + ")"
	}
	r.NotJudged = notJudged(gpus)
	if len(r.NotJudged) > 0 {
		r.Summary += "; not judged: " + strings.Join(r.NotJudged, "; ")
	}
	return r
}

// notJudged lists the checks whose field no GPU has, with the field to add to dcgm-exporter's
// counters CSV (its -f file or ConfigMap).
func notJudged(gpus []GPU) []string {
	if len(gpus) == 0 {
		return nil
	}
	var clocks, xid, util bool
	for i := range gpus {
		clocks = clocks || gpus[i].ClockEvents != nil
		xid = xid || gpus[i].XID != nil
		util = util || gpus[i].UtilPct != nil || gpus[i].SMActive != nil
	}
	var out []string
	if !clocks {
		out = append(out, "throttling (the exporter collects no DCGM_FI_DEV_CLOCKS_EVENT_REASONS: add it to its counters CSV)")
	}
	if !xid {
		out = append(out, "XIDs (no DCGM_FI_DEV_XID_ERRORS)")
	}
	if !util {
		out = append(out, "idle GPUs (no DCGM_FI_DEV_GPU_UTIL nor DCGM_FI_PROF_SM_ACTIVE)")
	}
	return out
}

func base(g *GPU, kind, sev string) Problem {
	return Problem{Kind: kind, Severity: sev, GPU: g.Name(), Host: g.Host, Index: g.GPU, UUID: g.UUID, Pod: g.PodName()}
}

func xidProblem(g *GPU) Problem {
	p := base(g, KindXID, SeverityFail)
	x := *g.XID
	p.XID = &x
	if m, ok := xidMeanings[x]; ok {
		p.What = fmt.Sprintf("XID %d: %s", x, m.what)
		p.Fix = m.fix
	} else {
		p.What = fmt.Sprintf("XID %d (the last XID DCGM saw on this GPU)", x)
		p.Fix = "look it up in NVIDIA's Xid catalog (https://docs.nvidia.com/deploy/xid-errors/) and read the node's kernel log (dmesg | grep -i xid) for its context"
	}
	p.Fix += " (the exporter keeps the last XID until DCGM restarts: check dmesg for when it happened)"
	return p
}

// throttleProblem: hardware slowdown, thermal slowdown and the power brake fail; a software power
// cap alone is a warning (a GPU at full load often sits at its power limit); idle, sync boost,
// application and display clock settings are not throttling.
func throttleProblem(g *GPU) (Problem, bool) {
	if g.ClockEvents == nil {
		return Problem{}, false
	}
	bits := *g.ClockEvents
	const bad = ClockHWSlowdown | ClockSWThermal | ClockHWThermal | ClockHWPowerBrake
	if bits&(bad|ClockSWPowerCap) == 0 {
		return Problem{}, false
	}
	sev := SeverityWarn
	if bits&bad != 0 {
		sev = SeverityFail
	}
	p := base(g, KindThrottle, sev)
	p.Reasons = ClockReasons(bits & (bad | ClockSWPowerCap))
	var why, fix []string
	temp, power := "", ""
	if g.TempC != nil {
		temp = fmt.Sprintf(" at %.0f C", *g.TempC)
	}
	if g.PowerW != nil {
		power = fmt.Sprintf(" at %.0f W", *g.PowerW)
	}
	if bits&(ClockHWThermal|ClockSWThermal) != 0 {
		why = append(why, "thermal slowdown"+temp)
		fix = append(fix, "check the node's cooling (fans, inlet temperature, airflow blocked by cables or a blanking panel missing) and compare with the other GPUs' temperatures")
	}
	if bits&ClockHWSlowdown != 0 {
		why = append(why, "hardware slowdown (clocks cut by half or more: too hot, a power brake, or a power spike)")
	}
	if bits&ClockHWPowerBrake != 0 {
		why = append(why, "power brake asserted by the system (the power supply or the BMC)")
		fix = append(fix, "check the node's power supplies and the BMC's power capping")
	}
	if bits&ClockSWPowerCap != 0 {
		why = append(why, "held at its power limit"+power)
		fix = append(fix, "a GPU at full load often sits at its power limit; if the limit is below the card's rating, see `nvidia-smi -q -d POWER`")
	}
	if bits&ClockHWSlowdown != 0 && len(fix) == 0 {
		fix = append(fix, "check cooling and power (nvidia-smi -q -d PERFORMANCE,TEMPERATURE,POWER) and run `dcgmi diag -r 2`")
	}
	p.What = "clocks throttled: " + strings.Join(why, "; ")
	p.Fix = strings.Join(fix, "; ")
	return p, true
}

// JobOf is the job a pod belongs to, by its name: the pod name without the trailing random
// suffix of a generated name (after an index), its rank indexes and a role (master, worker,
// node, leader): "llama-worker-3" and "llama-master-0" are job "llama", a JobSet's
// "ft-node-0-1-x7k2p" is "ft". A name with none of these is its own job.
func JobOf(pod string) string {
	seg := strings.Split(pod, "-")
	if n := len(seg); n >= 3 && isRandSuffix(seg[n-1]) && isDigits(seg[n-2]) {
		seg = seg[:n-1]
	}
	for len(seg) > 1 && isDigits(seg[len(seg)-1]) {
		seg = seg[:len(seg)-1]
	}
	if len(seg) > 1 {
		switch seg[len(seg)-1] {
		case "master", "worker", "node", "leader":
			seg = seg[:len(seg)-1]
		}
	}
	return strings.Join(seg, "-")
}

func isDigits(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// isRandSuffix: five characters of the alphabet Kubernetes generates names from
// (k8s.io/apimachinery/pkg/util/rand: no vowels, no 0, 1, 3).
func isRandSuffix(s string) bool {
	if len(s) != 5 {
		return false
	}
	for _, c := range s {
		if !strings.ContainsRune("bcdfghjklmnpqrstvwxz2456789", c) {
			return false
		}
	}
	return true
}

// idleProblems: a GPU of a job's pod idle while others of the same job work (idle_rank), and a
// GPU a pod holds at 0% otherwise (zero_util).
func idleProblems(gpus []GPU) []Problem {
	type member struct {
		g    *GPU
		busy float64
	}
	groups := map[string][]member{}
	var order []string
	for i := range gpus {
		g := &gpus[i]
		b, ok := g.Busy()
		if g.Pod == "" || !ok {
			continue
		}
		job := g.Namespace + "/" + JobOf(g.Pod)
		if _, seen := groups[job]; !seen {
			order = append(order, job)
		}
		groups[job] = append(groups[job], member{g, b})
	}
	sort.Strings(order)
	var out []Problem
	for _, job := range order {
		ms := groups[job]
		var busy []float64
		for _, m := range ms {
			if m.busy >= BusyPct {
				busy = append(busy, m.busy)
			}
		}
		sort.Float64s(busy)
		for _, m := range ms {
			switch {
			case len(busy) > 0 && m.busy <= IdlePct:
				p := base(m.g, KindIdleRank, SeverityFail)
				p.Job = job
				p.What = fmt.Sprintf("%.0f%% busy while %d other GPU(s) of job %s work at %.0f-%.0f%%: this rank is not computing",
					m.busy, len(busy), job, busy[0], busy[len(busy)-1])
				p.Fix = fmt.Sprintf("read the pod's log (kubectl logs -n %s %s): a rank waiting on its data loader, a straggler, "+
					"or code running on the CPU (check torch.cuda.is_available() and the rank's device index); "+
					"if the whole job stalls next, find the rank it waits on", m.g.Namespace, m.g.Pod)
				p.Next = []next.Command{"doctor hang"}
				out = append(out, p)
			case m.busy < 1:
				p := base(m.g, KindZeroUtil, SeverityFail)
				p.Job = job
				p.What = "0% busy, yet pod " + m.g.PodName() + " holds it"
				if m.g.FBUsedMiB != nil && *m.g.FBUsedMiB > 0 {
					p.What += fmt.Sprintf(" (%.0f MiB of its memory in use)", *m.g.FBUsedMiB)
				}
				p.Fix = "sample again a minute later: if it stays at 0%, the pod holds the GPU without using it " +
					"(stuck in a collective: check for a hang; waiting on input or a download; a model server with no requests; " +
					"code on the CPU); free the GPU for others if it is not needed"
				p.Next = []next.Command{"doctor hang"}
				out = append(out, p)
			}
		}
	}
	return out
}
