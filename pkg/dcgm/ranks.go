package dcgm

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// RankPod is one running pod of a job whose GPUs are watched: its namespace, name and node, and
// the label a person knows it by (worker-0, launcher, rank 3).
type RankPod struct {
	Namespace, Pod, Node, Label string
	// MayHaveNoGPU: a pod that needs no GPU (an MPI launcher, which the mpi-operator gives none
	// unless runLauncherAsWorker is set): not reported when no GPU is mapped to it.
	MayHaveNoGPU bool
}

// RankGPUs is what the GPUs of one pod showed at one scrape. The percentages are means over its
// GPUs, framebuffer and power are sums; nil where no GPU of the pod reported the field.
type RankGPUs struct {
	Pod  RankPod `json:"pod"`
	GPUs int     `json:"gpus"` // how many GPUs the exporter maps to the pod
	// At is when its node's page was read (the latest GPU.ReadAt of its GPUs; zero when the
	// reader keeps none): a sample of many nodes spans its reads, so the rank's line shows this.
	At time.Time `json:"at,omitzero"`

	UtilPct        *float64 `json:"gpu_util_pct,omitempty"` // of the GPUs that are not MIG instances
	SMActive       *float64 `json:"sm_active,omitempty"`
	TensorActive   *float64 `json:"tensor_active,omitempty"`
	GREngineActive *float64 `json:"gr_engine_active,omitempty"`
	FBUsedMiB      *float64 `json:"fb_used_mib,omitempty"`
	FBTotalMiB     *float64 `json:"fb_total_mib,omitempty"`
	PowerW         *float64 `json:"power_w,omitempty"`
	XIDs           []int64  `json:"xids,omitempty"` // non-zero XIDs on its GPUs
	// IdleGPUs are the pod's GPUs (their index) below idlePct while another of its GPUs is at
	// busyPct or more: a mean over the pod's GPUs hides them.
	IdleGPUs []string `json:"idle_gpus,omitempty"`
}

// Busy is the pod's GPU activity in percent: SM activity when the page has it (DCGM's profiling
// field, the fraction of time SMs hold a warp, which is what "is the GPU doing work" means), else
// the graphics engine's activity (on by default in dcgm-exporter's counters, and read on MIG),
// else DCGM_FI_DEV_GPU_UTIL. The last two are the fraction of time any kernel runs, which reads
// 100% for a kernel that spins waiting on the network, as NCCL's do.
func (r *RankGPUs) Busy() (pct float64, ok bool) {
	switch {
	case r.SMActive != nil:
		return *r.SMActive * 100, true
	case r.GREngineActive != nil:
		return *r.GREngineActive * 100, true
	case r.UtilPct != nil:
		return *r.UtilPct, true
	}
	return 0, false
}

// Boundness is what a snapshot says of the job as a whole.
type Boundness string

const (
	// GPUBound: every rank's GPUs are busy, by SM activity.
	GPUBound Boundness = "gpu-bound"
	// KernelsRunning: every rank's GPUs run kernels most of the time, by DCGM_FI_DEV_GPU_UTIL
	// alone, which cannot tell compute from NCCL kernels spinning on the network: not judged.
	KernelsRunning Boundness = "kernels-running"
	// Straggler: some ranks' GPUs are busy while others are idle: those wait on something.
	Straggler Boundness = "straggler"
	// Waiting: every rank's GPUs are mostly idle: the job waits on the network, storage or input.
	Waiting Boundness = "waiting"
	// Mixed: neither; a single scrape says no more.
	Mixed Boundness = ""
)

// Thresholds of the snapshot verdict, on Busy's percent.
const (
	busyPct = 70 // a rank at or above this is working
	idlePct = 25 // a rank below this is waiting
)

// Snapshot is one scrape of a job's GPUs, rank by rank.
type Snapshot struct {
	// At is when the sample ended (its last page read); each rank has its own read time.
	At      time.Time  `json:"at"`
	Ranks   []RankGPUs `json:"ranks"`
	Missing []RankPod  `json:"missing,omitempty"` // pods whose node was read but no GPU is mapped to them
	// Unmapped: the exporter does not label GPUs with pods, so no GPU can be given to a rank.
	Unmapped bool `json:"unmapped,omitempty"`
	// NotRunning are the labels of the job's pods that did not run when it was read: the
	// verdict is on the running ranks only.
	NotRunning []string  `json:"not_running,omitempty"`
	Bound      Boundness `json:"bound,omitempty"`
	Idle       []string  `json:"idle,omitempty"` // with Straggler: the idle ranks' labels
	Err        string    `json:"error,omitempty"`
	// Final: nothing was read and a later sample cannot do better (the caller may not list the
	// exporter pods).
	Final bool `json:"final,omitempty"`
	// NoVerdict: the lines leave the verdict out (a benchmark, whose GPUs wait on the network by
	// design).
	NoVerdict bool `json:"-"`
}

// key is what a person would see change between two samples: the verdict and who it names, the
// pods without a GPU or not running, the error.
func (s *Snapshot) key() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s|%v|%v|%v|%s|%v", s.Bound, s.Idle, s.NotRunning, s.Unmapped, s.Err, len(s.Ranks))
	for _, p := range s.Missing {
		b.WriteString("|" + p.Label)
	}
	return b.String()
}

// Ranks gives each pod its GPUs from gpus (a scrape of the pods' nodes) and judges the whole.
func Ranks(gpus []GPU, pods []RankPod, at time.Time) Snapshot {
	s := Snapshot{At: at}
	names := make([]string, len(pods))
	for i, p := range pods {
		names[i] = p.Namespace + "/" + p.Pod
	}
	mine, mapped := OfPods(gpus, names)
	if !mapped && len(gpus) > 0 {
		s.Unmapped = true
		return s
	}
	byPod := map[string][]GPU{}
	for _, g := range mine {
		byPod[g.Namespace+"/"+g.Pod] = append(byPod[g.Namespace+"/"+g.Pod], g)
	}
	for i, p := range pods {
		gs := byPod[names[i]]
		if len(gs) == 0 {
			if !p.MayHaveNoGPU {
				s.Missing = append(s.Missing, p)
			}
			continue
		}
		s.Ranks = append(s.Ranks, rankOf(p, gs))
	}
	s.Bound, s.Idle = judge(s.Ranks)
	return s
}

func rankOf(p RankPod, gs []GPU) RankGPUs {
	r := RankGPUs{Pod: p, GPUs: len(gs)}
	var util, sm, tensor, gr mean
	var fbUsed, fbTotal, power sum
	for _, g := range gs {
		if g.MIGID == "" { // GPU_UTIL reads 0 on MIG instances (see GPU.Busy)
			util.add(g.UtilPct)
		}
		sm.add(g.SMActive)
		tensor.add(g.TensorActive)
		gr.add(g.GREngineActive)
		fbUsed.add(g.FBUsedMiB)
		power.add(g.PowerW)
		if g.FBUsedMiB != nil && g.FBFreeMiB != nil {
			t := *g.FBUsedMiB + *g.FBFreeMiB
			fbTotal.add(&t)
		}
		if g.XID != nil && *g.XID != 0 {
			r.XIDs = append(r.XIDs, *g.XID)
		}
		if g.ReadAt.After(r.At) {
			r.At = g.ReadAt
		}
	}
	r.UtilPct, r.SMActive, r.TensorActive, r.GREngineActive = util.get(), sm.get(), tensor.get(), gr.get()
	r.FBUsedMiB, r.FBTotalMiB, r.PowerW = fbUsed.get(), fbTotal.get(), power.get()
	r.IdleGPUs = idleAmongBusy(gs)
	return r
}

// idleAmongBusy are the GPUs of gs below idlePct while another is at busyPct or more, each
// judged by the field the pod's mean is (SM activity, the graphics engine, GPU_UTIL).
func idleAmongBusy(gs []GPU) []string {
	if len(gs) < 2 {
		return nil
	}
	pcts := make([]float64, len(gs))
	ok := make([]bool, len(gs))
	top := -1.0
	for i := range gs {
		r := rankOf1(gs[i])
		pcts[i], ok[i] = r.Busy()
		if ok[i] {
			top = max(top, pcts[i])
		}
	}
	if top < busyPct {
		return nil
	}
	var idle []string
	for i := range gs {
		if ok[i] && pcts[i] < idlePct {
			idle = append(idle, gs[i].GPU)
		}
	}
	return idle
}

// rankOf1 is one GPU's fields as a RankGPUs, so that it is judged as a pod's mean is.
func rankOf1(g GPU) RankGPUs {
	r := RankGPUs{SMActive: g.SMActive, GREngineActive: g.GREngineActive}
	if g.MIGID == "" {
		r.UtilPct = g.UtilPct
	}
	return r
}

type mean struct {
	s float64
	n int
}

func (m *mean) add(v *float64) {
	if v != nil {
		m.s += *v
		m.n++
	}
}

func (m *mean) get() *float64 {
	if m.n == 0 {
		return nil
	}
	v := m.s / float64(m.n)
	return &v
}

type sum struct{ mean }

func (s *sum) get() *float64 {
	if s.n == 0 {
		return nil
	}
	v := s.s
	return &v
}

// judge says GPUBound when every rank is busy by SM activity (KernelsRunning when some rank's
// page has only GPU_UTIL), Waiting when every rank is idle, Straggler (with the idle ranks) when
// some are busy and others idle. Ranks whose page has no activity field are left out; with none
// left, or ranks between the thresholds, it says nothing.
func judge(ranks []RankGPUs) (Boundness, []string) {
	var busy, idle, known int
	utilOnly := false
	var idleNames, inner []string
	for i := range ranks {
		for _, id := range ranks[i].IdleGPUs {
			inner = append(inner, ranks[i].Pod.Label+" GPU "+id)
		}
		pct, ok := ranks[i].Busy()
		if !ok {
			continue
		}
		known++
		utilOnly = utilOnly || ranks[i].SMActive == nil
		switch {
		case pct >= busyPct:
			busy++
		case pct < idlePct:
			idle++
			idleNames = append(idleNames, ranks[i].Pod.Label)
		}
	}
	switch {
	case known == 0:
		return Mixed, nil
	case len(inner) > 0 && idle < known: // some GPU of a pod idles while its others work
		return Straggler, append(idleNames, inner...)
	case busy == known && utilOnly:
		return KernelsRunning, nil
	case busy == known:
		return GPUBound, nil
	case idle == known:
		return Waiting, nil
	case busy > 0 && idle > 0:
		return Straggler, idleNames
	}
	return Mixed, nil
}

// Sampler reads a job's GPUs: Read scrapes the exporters of the given nodes (a NodeReader's
// Read, which keeps the exporter pods it found for the job's next samples); Now is the clock.
type Sampler struct {
	Read func(ctx context.Context, nodes []string) ([]GPU, error)
	Now  func() time.Time
}

// Sample scrapes the nodes of pods once. A node that could not be read does not lose the others:
// its error is kept in Snapshot.Err and its pods are Missing.
func (s Sampler) Sample(ctx context.Context, pods []RankPod) Snapshot {
	now := time.Now
	if s.Now != nil {
		now = s.Now
	}
	seen := map[string]bool{}
	var nodes []string
	for _, p := range pods {
		if p.Node != "" && !seen[p.Node] {
			seen[p.Node] = true
			nodes = append(nodes, p.Node)
		}
	}
	sort.Strings(nodes)
	gpus, err := s.Read(ctx, nodes)
	snap := Ranks(gpus, pods, now())
	if err != nil {
		snap.Err = err.Error()
		var ne *NoExporterError
		snap.Final = len(gpus) == 0 && (apierrors.IsForbidden(err) || errors.As(err, &ne) && len(ne.Forbidden) > 0)
	}
	return snap
}

// WriteLines writes Lines, each starting with prefix (the watch loop's indent).
func (s *Snapshot) WriteLines(w io.Writer, prefix string) {
	for _, l := range s.Lines() {
		fmt.Fprintf(w, "%s%s\n", prefix, l)
	}
}

// Lines are what a person reads while the job runs: one line per rank, then the pods without a
// GPU, a read error, and the verdict on the whole, each starting "GPU HH:MM:SS": a rank's
// line its page's read time, the others the sample's end.
func (s *Snapshot) Lines() []string {
	stamp := func(t time.Time) string { return "GPU " + t.UTC().Format("15:04:05") }
	at := stamp(s.At)
	var out []string
	if s.Unmapped {
		out = append(out, at+": the exporter does not label GPUs with pods, so no GPU can be told a rank's (dcgm-exporter's Kubernetes mapping is off)")
	}
	for i := range s.Ranks {
		out = append(out, stamp(cmp.Or(s.Ranks[i].At, s.At))+" "+s.Ranks[i].line())
	}
	for _, p := range s.Missing {
		out = append(out, fmt.Sprintf("%s %s on %s: no GPU of the exporter is mapped to this pod", at, p.Label, p.Node))
	}
	if len(s.NotRunning) > 0 {
		out = append(out, at+" not running, so not read: "+strings.Join(s.NotRunning, ", "))
	}
	if s.Err != "" {
		out = append(out, at+": "+firstLine(s.Err))
	}
	if v := s.Verdict(); v != "" && !s.NoVerdict {
		out = append(out, at+" "+v)
	}
	return out
}

// Verdict words Bound for a person; "" when the snapshot says nothing of the whole.
func (s *Snapshot) Verdict() string {
	every, job := "every rank's", "the job is"
	if len(s.NotRunning) > 0 {
		every, job = "every running rank's", "the running ranks are"
	}
	switch s.Bound {
	case GPUBound:
		return fmt.Sprintf("%s GPUs are busy (%d%%+): %s GPU-bound at this moment", every, busyPct, job)
	case KernelsRunning:
		return fmt.Sprintf("%s GPUs run kernels %d%%+ of the time, but without SM activity (DCGM_FI_PROF_SM_ACTIVE, not in dcgm-exporter's default counters) compute cannot be told from NCCL kernels waiting on the network: add it to the exporter's counters CSV", every, busyPct)
	case Waiting:
		return fmt.Sprintf("%s GPUs are below %d%%: %s waiting on the network, storage or a collective at this moment", every, idlePct, job)
	case Straggler:
		return fmt.Sprintf("%s below %d%% while other ranks work: either they wait on their input or network path, or the busy ranks are slower (a throttled or failing GPU) and these wait for them in a collective; one sample is one moment: see whether the next says the same", strings.Join(s.Idle, ", "), idlePct)
	}
	return ""
}

func (r *RankGPUs) line() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s on %s (%d GPU", r.Pod.Label, r.Pod.Node, r.GPUs)
	if r.GPUs != 1 {
		b.WriteString("s")
	}
	b.WriteString("):")
	fmt.Fprintf(&b, " util %s SM %s tensor %s", num(r.UtilPct, 1, "%.0f%%"), num(r.SMActive, 100, "%.0f%%"), num(r.TensorActive, 100, "%.0f%%"))
	if r.FBUsedMiB != nil {
		fmt.Fprintf(&b, " fb %.1f", *r.FBUsedMiB/1024)
		if r.FBTotalMiB != nil {
			fmt.Fprintf(&b, "/%.1f", *r.FBTotalMiB/1024)
		}
		b.WriteString(" GiB")
	}
	if r.PowerW != nil {
		fmt.Fprintf(&b, " %.0f W", *r.PowerW)
	}
	for _, x := range r.XIDs {
		fmt.Fprintf(&b, " XID %d", x)
		if m := XIDMeaning(x); m != "" {
			fmt.Fprintf(&b, " (%s)", m)
		}
	}
	return b.String()
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}
