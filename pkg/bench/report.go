package bench

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/ain-hpc/ain/pkg/nccl"
)

// Kind is the "kind" of a saved result file.
const Kind = "ain.dev/v1alpha1/AllReduceBench"

// Thresholds of the verdict, in percent of line rate at the reference size (1 GiB, else the peak).
const (
	HealthyPct  = 80.0 // a healthy RDMA fabric reaches 80-95% of line rate on large messages
	DegradedPct = 50.0 // below this the fabric, not tuning, is the suspect
	// ModelFromBytes is the smallest size where the cost model's deviation is judged: the model
	// knows only the Simple protocol, so it is pessimistic for small, latency-bound messages.
	ModelFromBytes = 1 << 20
	// RefBytes is the size the verdict quotes the line-rate percentage at.
	RefBytes = 1 << 30
	// ModelTolerance is how far (relative) a large-message measurement may be from the model
	// for the verdict to say the model holds.
	ModelTolerance = 0.2
)

// Result is a whole benchmark: its setup, every variant's measurement and output, and what
// Summarize derives from them. It is what result.json holds.
type Result struct {
	Kind      string    `json:"kind"`
	Name      string    `json:"name"`
	Recipe    string    `json:"recipe"`
	Namespace string    `json:"namespace,omitempty"`
	Started   time.Time `json:"started"`
	Finished  time.Time `json:"finished"`
	Seconds   float64   `json:"seconds"`

	Fabric       string  `json:"fabric"`
	LineRate     string  `json:"lineRate"`     // the NIC rate percentages are of, e.g. 200Gb
	LineRateGBps float64 `json:"lineRateGBps"` // one NIC: its rate / 8, in GB/s
	// LineRateSource is "probe" when LineRate is the rate the IB port probe saw on the
	// benchmark's nodes, "profile" when it is the profile's lineRate (see UseProbedRate).
	LineRateSource   string `json:"lineRateSource,omitempty"`
	ProfileLineRate  string `json:"profileLineRate,omitempty"`
	LineRateMismatch bool   `json:"lineRateMismatch,omitempty"`
	LineRateNote     string `json:"lineRateNote,omitempty"`
	// NICsPerNode is how many NICs NCCL spreads a node's traffic over (the profile's HCAs when
	// listed, else one per GPU, as on rail-optimised GPU nodes); 0 before Summarize.
	NICsPerNode int `json:"nicsPerNode"`
	// PlannedNICs is the NICs per node of the plan (the profile's HCAs, else one per GPU);
	// NICsNote says when the limit counts another number, and why.
	PlannedNICs int    `json:"plannedNICsPerNode,omitempty"`
	NICsNote    string `json:"nicsNote,omitempty"`
	// LimitGBps is the busbw the network allows: NICsPerNode x LineRateGBps (with one GPU and one
	// NIC per node, the course's "NIC rate / 8 per rank"). "% of line rate" is busbw over it.
	LimitGBps   float64  `json:"limitGBps"`
	Nodes       int      `json:"nodes"`
	GPUsPerNode int      `json:"gpusPerNode"`
	Ranks       int      `json:"ranks"`
	Command     []string `json:"command,omitempty"`
	// SameNodes is true when every variant ran on the first variant's nodes.
	SameNodes bool `json:"sameNodes"`

	Variants []*VariantResult `json:"variants"`

	// Derived by Summarize.
	Model     *nccl.ModelResult `json:"model,omitempty"`
	Sizes     []SizeRow         `json:"sizes"`
	Peaks     []Peak            `json:"peaks"`
	Deviation *Deviation        `json:"largestDeviation,omitempty"`
	// AtLargest compares the model with the bandwidth-bound end of the curve: the largest size
	// of the ring variant (else the first variant NCCL chose for), where the model is meant to hold.
	AtLargest *Deviation       `json:"modelAtLargestSize,omitempty"`
	Crossover *CrossoverResult `json:"crossover,omitempty"`
	Valid     bool             `json:"valid"`
	Problems  []string         `json:"problems"`
	Verdict   string           `json:"verdict"`

	// Interrupted is set when an interrupt (Ctrl-C) stopped the bench: the result is not valid
	// (it is not the measurement asked for), and the variant it cut short is not among Variants
	// (a partial run is no result). InterruptedNote says where it stopped.
	Interrupted     bool   `json:"interrupted,omitempty"`
	InterruptedNote string `json:"interruptedNote,omitempty"`
}

// Judged is what the verdict judges a run by: its best peak, and the busbw, size and % of line
// rate it is judged at (the reference size when the peak reaches it); ok is false with no peak.
func (res *Result) Judged() (best Peak, ref float64, refSize int64, pct *float64, ok bool) {
	if len(res.Peaks) == 0 {
		return Peak{}, 0, 0, nil, false
	}
	best = res.Peaks[0]
	for _, p := range res.Peaks[1:] {
		if p.Busbw > best.Busbw {
			best = p
		}
	}
	ref, refSize, pct = best.Busbw, best.Size, best.PctLineRate
	if best.AtRef != nil {
		ref, refSize, pct = *best.AtRef, RefBytes, best.AtRefPct
	}
	return best, ref, refSize, pct, true
}

// SizeRow is one message size with a cell per variant (in Variants order; nil where the
// variant has no row for it).
type SizeRow struct {
	Size  int64   `json:"size"`
	Cells []*Cell `json:"cells"`
}

// Cell is one variant's measurement at one size (out-of-place, as nccl-tests' headline numbers).
type Cell struct {
	Variant     string   `json:"variant"`
	TimeUs      float64  `json:"timeUs"`
	Algbw       float64  `json:"algbw"`
	Busbw       float64  `json:"busbw"`
	PctLineRate *float64 `json:"pctLineRate"`
	ModelBusbw  *float64 `json:"modelBusbw"`
	// Deviation is measured/predicted - 1 (busbw), e.g. -0.06 for 6% below the model.
	Deviation *float64 `json:"deviation"`
	Algo      string   `json:"algo,omitempty"` // NCCL's TUNING choice, when printed
	Proto     string   `json:"proto,omitempty"`
}

// Peak is a variant's highest busbw and where it is reached.
type Peak struct {
	Variant     string   `json:"variant"`
	Busbw       float64  `json:"busbw"`
	Size        int64    `json:"size"`
	PctLineRate *float64 `json:"pctLineRate"`
	// AtRef is busbw at RefBytes (1 GiB), when measured.
	AtRef    *float64 `json:"busbwAt1GiB"`
	AtRefPct *float64 `json:"pctLineRateAt1GiB"`
}

// Deviation is the largest gap between the cost model and a measurement (sizes >= 1 MiB).
type Deviation struct {
	Variant   string  `json:"variant"`
	Size      int64   `json:"size"`
	Measured  float64 `json:"measuredBusbw"`
	Predicted float64 `json:"predictedBusbw"`
	Deviation float64 `json:"deviation"`
}

// CrossoverResult compares the measured ring/tree crossover with the model's.
type CrossoverResult struct {
	Ring string `json:"ring"`
	Tree string `json:"tree"`
	// Measured is the smallest size from which ring is at least as fast as tree at every larger
	// size; nil when tree is faster at the largest size. TreeWinsBelow is the largest size
	// below it where tree was faster (nil: ring wins everywhere).
	Measured      *int64 `json:"measured"`
	TreeWinsBelow *int64 `json:"treeWinsBelow"`
	// Predicted is the model's crossover (nil: tree always faster; 0: ring always faster).
	Predicted *int64 `json:"predicted"`
}

// Summarize derives the tables, peaks, model comparison, crossover, validity and verdict.
func (res *Result) Summarize() {
	res.Kind = Kind
	if res.Ranks == 0 {
		res.Ranks = res.Nodes * max(res.GPUsPerNode, 1)
	}
	res.Problems = []string{}
	for _, v := range res.Variants {
		for _, p := range v.Problems {
			res.Problems = append(res.Problems, v.Name+": "+p)
		}
	}
	if res.Interrupted {
		res.Problems = append(res.Problems, "interrupted "+res.InterruptedNote)
	}
	res.Valid = len(res.Problems) == 0 && len(res.Variants) > 0
	if res.PlannedNICs <= 0 {
		res.PlannedNICs = res.NICsPerNode
		if res.PlannedNICs <= 0 {
			res.PlannedNICs = max(res.GPUsPerNode, 1)
		}
	}
	res.NICsPerNode, res.NICsNote = res.PlannedNICs, ""
	if g := res.GPUsPerNode; g > 0 && g < res.PlannedNICs {
		// A rank sends over the NIC nearest its GPU; NCCL spreads one GPU over several NICs
		// only when they are as near (the same PCIe switch), so with fewer GPUs than NICs the
		// limit counts one NIC per GPU unless the port counters show more carried traffic.
		res.NICsPerNode = g
		res.NICsNote = fmt.Sprintf("%d GPU(s) per node drive %d of the node's %d NICs (each rank's nearest): the busbw limit counts %d", g, g, res.PlannedNICs, g)
	}
	if used, ports := WireNICs(res.Variants); used > res.NICsPerNode {
		// Bytes on the ports are the proof: the traffic crossed that many NICs.
		res.NICsNote = fmt.Sprintf("the port counters show traffic on %d NICs per node (%s): the busbw limit counts %d", used, strings.Join(ports, ", "), used)
		res.NICsPerNode = used
	} else if used > 0 && used < res.NICsPerNode {
		// Fewer than expected carried it: a rail down, NCCL_IB_HCA narrower than the profile,
		// or a NIC farther from the GPUs. The limit stays: that bandwidth is missing.
		res.NICsNote = fmt.Sprintf("the port counters show traffic on only %d of the %d NICs per node expected (%s): a NIC that should carry it did not (a port down, NCCL_IB_HCA narrower than the profile's HCAs, or a NIC farther from the GPUs than planned)",
			used, res.NICsPerNode, strings.Join(ports, ", "))
	}
	res.LimitGBps = float64(res.NICsPerNode) * res.LineRateGBps
	res.model()
	res.table()
	res.peaks()
	res.deviation()
	res.crossover()
	res.Verdict = res.verdict()
}

func (res *Result) model() {
	res.Model = nil
	var lo, hi int64
	for _, v := range res.Variants {
		if v.Perf == nil {
			continue
		}
		for _, r := range v.Perf.Rows {
			if lo == 0 || r.Size < lo {
				lo = r.Size
			}
			hi = max(hi, r.Size)
		}
	}
	if lo == 0 || res.Nodes < 2 || !(res.LineRateGBps > 0) {
		return
	}
	m, err := nccl.AllReduceModel(nccl.ModelParams{Nodes: res.Nodes, GPUsPerNode: max(res.GPUsPerNode, 1), NICsPerNode: res.NICsPerNode, LinkGbps: res.LineRateGBps * 8}, lo, hi, 2, "both")
	if err != nil {
		return
	}
	m.Rows = nil // predictions are kept per cell, at the measured sizes
	res.Model = m
}

// predict is the model's busbw for a variant at size: ring or tree when the variant forces
// one, else the faster of the two (what NCCL's tuner would pick).
func (res *Result) predict(v *VariantResult, size int64) *float64 {
	if res.Model == nil {
		return nil
	}
	n := float64(res.Model.NRanks)
	busFactor := 2 * (n - 1) / n
	t := 0.0
	switch v.Algo() {
	case AlgoRing:
		t = res.Model.Ring.Time(float64(size))
	case AlgoTree:
		t = res.Model.Tree.Time(float64(size))
	default:
		t = math.Min(res.Model.Ring.Time(float64(size)), res.Model.Tree.Time(float64(size)))
	}
	b := float64(size) / (1000 * t) * busFactor
	return &b
}

func (res *Result) pct(busbw float64) *float64 {
	if !(res.LimitGBps > 0) {
		return nil
	}
	p := 100 * busbw / res.LimitGBps
	return &p
}

func (res *Result) table() {
	sizes := map[int64]bool{}
	for _, v := range res.Variants {
		if v.Perf != nil {
			for _, r := range v.Perf.Rows {
				sizes[r.Size] = true
			}
		}
	}
	list := make([]int64, 0, len(sizes))
	for s := range sizes {
		list = append(list, s)
	}
	sort.Slice(list, func(i, j int) bool { return list[i] < list[j] })
	res.Sizes = make([]SizeRow, 0, len(list))
	for _, s := range list {
		row := SizeRow{Size: s, Cells: make([]*Cell, len(res.Variants))}
		for i, v := range res.Variants {
			row.Cells[i] = res.cell(v, s)
		}
		res.Sizes = append(res.Sizes, row)
	}
}

func (res *Result) cell(v *VariantResult, size int64) *Cell {
	if v.Perf == nil {
		return nil
	}
	for _, r := range v.Perf.Rows {
		if r.Size != size || r.OOP == nil {
			continue
		}
		c := &Cell{Variant: v.Name, TimeUs: r.OOP.TimeUs, Algbw: r.OOP.Algbw, Busbw: r.OOP.Busbw, PctLineRate: res.pct(r.OOP.Busbw)}
		if p := res.predict(v, size); p != nil {
			c.ModelBusbw = p
			if *p > 0 {
				d := r.OOP.Busbw / *p - 1
				c.Deviation = &d
			}
		}
		for _, t := range v.Tuning {
			if t.Size == size {
				c.Algo, c.Proto = t.Algo, t.Proto
			}
		}
		return c
	}
	return nil
}

func (res *Result) peaks() {
	res.Peaks = []Peak{}
	for i, v := range res.Variants {
		var pk *Peak
		for _, row := range res.Sizes {
			c := row.Cells[i]
			if c == nil {
				continue
			}
			if pk == nil || c.Busbw > pk.Busbw {
				pk = &Peak{Variant: v.Name, Busbw: c.Busbw, Size: row.Size, PctLineRate: c.PctLineRate}
			}
		}
		if pk == nil {
			continue
		}
		for _, row := range res.Sizes {
			if c := row.Cells[i]; c != nil && row.Size == RefBytes {
				b := c.Busbw
				pk.AtRef, pk.AtRefPct = &b, c.PctLineRate
			}
		}
		res.Peaks = append(res.Peaks, *pk)
	}
}

func (res *Result) deviation() {
	res.Deviation, res.AtLargest = nil, nil
	ref := -1
	for i, v := range res.Variants {
		if ref < 0 && v.Perf != nil && (v.Algo() == AlgoRing || v.Algo() == "") {
			ref = i
		}
		if v.Perf != nil && v.Algo() == AlgoRing && res.Variants[max(ref, 0)].Algo() != AlgoRing {
			ref = i
		}
	}
	if ref >= 0 && len(res.Sizes) > 0 {
		for k := len(res.Sizes) - 1; k >= 0; k-- {
			if c := res.Sizes[k].Cells[ref]; c != nil && c.Deviation != nil {
				res.AtLargest = &Deviation{Variant: c.Variant, Size: res.Sizes[k].Size, Measured: c.Busbw, Predicted: *c.ModelBusbw, Deviation: *c.Deviation}
				break
			}
		}
	}
	for i, v := range res.Variants {
		for _, row := range res.Sizes {
			c := row.Cells[i]
			if c == nil || c.Deviation == nil || row.Size < ModelFromBytes {
				continue
			}
			if res.Deviation == nil || math.Abs(*c.Deviation) > math.Abs(res.Deviation.Deviation) {
				res.Deviation = &Deviation{Variant: v.Name, Size: row.Size, Measured: c.Busbw, Predicted: *c.ModelBusbw, Deviation: *c.Deviation}
			}
		}
	}
}

// crossover finds the measured ring/tree crossover between a ring and a tree variant that
// differ in nothing else.
func (res *Result) crossover() {
	res.Crossover = nil
	ri, ti := -1, -1
	for i, v := range res.Variants {
		rest := func(x *VariantResult) string {
			var s []string
			for _, k := range slices.Sorted(maps.Keys(x.Env)) {
				if k != "NCCL_ALGO" {
					s = append(s, k+"="+x.Env[k])
				}
			}
			return strings.Join(s, ",")
		}
		for j, w := range res.Variants {
			if ri < 0 && v.Algo() == AlgoRing && w.Algo() == AlgoTree && rest(v) == rest(w) {
				ri, ti = i, j
			}
		}
	}
	if ri < 0 {
		return
	}
	var sizes []int64
	var ring, tree []float64
	for _, row := range res.Sizes {
		r, t := row.Cells[ri], row.Cells[ti]
		if r == nil || t == nil {
			continue
		}
		sizes = append(sizes, row.Size)
		ring = append(ring, r.TimeUs)
		tree = append(tree, t.TimeUs)
	}
	cr := &CrossoverResult{Ring: res.Variants[ri].Name, Tree: res.Variants[ti].Name}
	cr.Measured, cr.TreeWinsBelow = MeasuredCrossover(sizes, ring, tree)
	if res.Model != nil {
		c := nccl.Crossover(res.Model.Ring, res.Model.Tree)
		if c >= 0 {
			cr.Predicted = &c
		}
	}
	res.Crossover = cr
}

// MeasuredCrossover returns the smallest size from which ring's time is at most tree's at every
// larger size (nil when tree is faster at the largest size), and the largest size below it where
// tree was faster (nil when ring is never slower). Sizes must be ascending.
func MeasuredCrossover(sizes []int64, ringUs, treeUs []float64) (from, treeBelow *int64) {
	n := len(sizes)
	if n == 0 || n != len(ringUs) || n != len(treeUs) {
		return nil, nil
	}
	k := n
	for k > 0 && ringUs[k-1] <= treeUs[k-1] {
		k--
	}
	if k == n {
		return nil, nil // tree wins at the largest size
	}
	f := sizes[k]
	from = &f
	if k > 0 {
		b := sizes[k-1]
		treeBelow = &b
	}
	return from, treeBelow
}

// verdict writes the paragraph in the course's words.
func (res *Result) verdict() string {
	var s []string
	if len(res.Variants) == 0 {
		if res.Interrupted {
			return "Interrupted " + res.InterruptedNote + ": nothing was measured."
		}
		return "No variant ran: nothing was measured."
	}
	if res.Interrupted {
		// What was measured is kept in the result, but an interrupted run judges nothing: the
		// steps that make the judgement fair (the ports' real rate, the later variants) did not run.
		return "Interrupted " + res.InterruptedNote + ": no verdict; the variants measured are recorded, not judged."
	}
	if res.LineRateMismatch {
		s = append(s, res.LineRateNote)
	}
	for _, v := range res.Variants {
		for _, p := range v.Problems {
			if strings.HasPrefix(p, ProblemSocketFallback) {
				s = append(s, fmt.Sprintf("INVALID: in variant %s NCCL fell back to TCP sockets, so these numbers measure the Ethernet/TCP path, not the RDMA fabric; fix the transport first (RDMA resource, IPC_LOCK, NCCL_IB_HCA, an ACTIVE port: the variant's next commands check them), then measure again.", v.Name))
				break
			}
		}
	}
	if len(s) == 0 && !res.Valid {
		s = append(s, "INVALID: "+res.Problems[0]+".")
	}
	if c := res.Crossover; c != nil {
		pred := ""
		switch {
		case c.Predicted == nil:
			pred = "the model predicts tree at every size"
		case *c.Predicted == 0:
			pred = "the model predicts ring at every size"
		default:
			pred = "the model predicts the crossover at " + approxSize(*c.Predicted)
		}
		switch {
		case c.Measured == nil:
			s = append(s, fmt.Sprintf("Tree is faster even at the largest size (%s); %s.", pred, "ring should win on large messages: check the ring's channels and NCCL_IB_QPS_PER_CONNECTION"))
		case c.TreeWinsBelow == nil:
			s = append(s, fmt.Sprintf("Ring is at least as fast as tree at every size (%s).", pred))
		default:
			s = append(s, fmt.Sprintf("Tree wins below %s, ring from %s on (%s).", SizeLabel(*c.Measured), SizeLabel(*c.Measured), pred))
		}
	}
	if best, ref, refSize, pct, ok := res.Judged(); ok {
		line := fmt.Sprintf("Peak busbw %.2f GB/s at %s (%s)", best.Busbw, SizeLabel(best.Size), best.Variant)
		switch {
		case pct == nil:
			s = append(s, line+"; no line rate in the profile to judge it against.")
		case res.Fabric == "socket":
			s = append(s, fmt.Sprintf("%s; %.0f%% of the %s line rate at %s over TCP sockets: this is the baseline RDMA must beat (a healthy RDMA fabric reaches %.0f-95%%).", line, *pct, res.LineRate, SizeLabel(refSize), HealthyPct))
		case !res.Valid:
			s = append(s, fmt.Sprintf("%s, %.0f%% of line rate at %s, but the run is invalid: do not quote it.", line, *pct, SizeLabel(refSize)))
		case *pct >= HealthyPct:
			s = append(s, fmt.Sprintf("%s; %.0f%% of line rate at %s (%.2f of %s): the fabric is healthy.", line, *pct, SizeLabel(refSize), ref, res.limitText()))
		case *pct >= DegradedPct:
			s = append(s, fmt.Sprintf("%s; only %.0f%% of line rate at %s (%.2f of %s): the fabric works but is below the %.0f%% a healthy one reaches; check GPUDirect RDMA, NCCL_IB_QPS_PER_CONNECTION, PCIe placement (NIC and GPU on the same switch) and congestion/adaptive routing.", line, *pct, SizeLabel(refSize), ref, res.limitText(), HealthyPct))
		default:
			s = append(s, fmt.Sprintf("%s; %.0f%% of line rate at %s (%.2f of %s): far below what the fabric can do; suspect the fabric (link speed/width, errors, a wrong NCCL_IB_HCA, GDR off) or a wrong lineRate in the profile.", line, *pct, SizeLabel(refSize), ref, res.limitText()))
		}
	}
	if l := res.AtLargest; l != nil && res.Fabric != "socket" {
		m := fmt.Sprintf("(%s at %s: %.2f measured, %.2f predicted GB/s, %+.0f%%)", l.Variant, SizeLabel(l.Size), l.Measured, l.Predicted, l.Deviation*100)
		switch {
		case math.Abs(l.Deviation) <= ModelTolerance:
			s = append(s, "The cost model holds on large messages "+m+".")
		case l.Deviation < 0:
			s = append(s, "Large messages are slower than the cost model predicts "+m+": something between the GPUs and the wire costs bandwidth (GDR, PCIe placement, QPs, congestion).")
		default:
			s = append(s, "Large messages are faster than the cost model predicts "+m+": the profile's lineRate is probably too low, or NCCL uses more NICs than GPUs.")
		}
		if d := res.Deviation; d != nil && (d.Variant != l.Variant || d.Size != l.Size) && math.Abs(d.Deviation) > ModelTolerance {
			why := "the model is optimistic there"
			if d.Deviation > 0 {
				why = "the model is pessimistic there: it knows only the Simple protocol"
				if c := res.cellAt(d.Variant, d.Size); c != nil && c.Proto != "" && !strings.EqualFold(c.Proto, "SIMPLE") {
					why += " and NCCL used " + c.Proto
				}
				if res.variant(d.Variant) != nil && res.variant(d.Variant).Algo() == AlgoTree {
					why += ", and its tree bandwidth (0.46 x the node's) is conservative"
				}
			}
			s = append(s, fmt.Sprintf("Its largest gap from 1 MiB on is %+.0f%% (%s at %s): %s.", d.Deviation*100, d.Variant, SizeLabel(d.Size), why))
		}
	}
	return strings.Join(s, " ")
}

func (res *Result) variant(name string) *VariantResult {
	for _, v := range res.Variants {
		if v.Name == name {
			return v
		}
	}
	return nil
}

func (res *Result) cellAt(variant string, size int64) *Cell {
	for _, row := range res.Sizes {
		if row.Size != size {
			continue
		}
		for _, c := range row.Cells {
			if c != nil && c.Variant == variant {
				return c
			}
		}
	}
	return nil
}

// limitText says what the line-rate limit is made of: "25.00 GB/s" or "100.00 GB/s = 2 NICs x 50.00".
func (res *Result) limitText() string {
	if res.NICsPerNode <= 1 {
		return fmt.Sprintf("%.2f GB/s", res.LimitGBps)
	}
	return fmt.Sprintf("%.2f GB/s = %d NICs x %.2f", res.LimitGBps, res.NICsPerNode, res.LineRateGBps)
}

// approxSize prints a size that need not be a power of two: 813 KiB, 1.5 MiB.
func approxSize(n int64) string {
	f := float64(n)
	units := []string{"B", "KiB", "MiB", "GiB", "TiB"}
	i := 0
	for f >= 1024 && i < len(units)-1 {
		f /= 1024
		i++
	}
	if f >= 100 || f == math.Trunc(f) {
		return fmt.Sprintf("%.0f %s", f, units[i])
	}
	return fmt.Sprintf("%.1f %s", f, units[i])
}

// OutOfBoundsText is the variant's out-of-bounds check as the report shows it: "0 OK", the
// count of wrong values, or "-" when nccl-tests printed no check.
func (v *VariantResult) OutOfBoundsText() string {
	switch {
	case v.OutOfBoundsOK:
		return "0 OK"
	case v.Perf != nil && v.Perf.OutOfBounds != nil:
		return strconv.FormatInt(*v.Perf.OutOfBounds, 10)
	}
	return "-"
}

// Describe words the crossover for the report: where ring starts to win as measured, and as
// the model predicts.
func (c *CrossoverResult) Describe() (measured, predicted string) {
	switch {
	case c.Measured == nil:
		measured = "none: tree is faster at the largest size"
	case c.TreeWinsBelow == nil:
		measured = "none: ring is at least as fast at every size"
	default:
		measured = fmt.Sprintf("%s (tree faster up to %s)", SizeLabel(*c.Measured), SizeLabel(*c.TreeWinsBelow))
	}
	switch {
	case c.Predicted == nil:
		predicted = "none (tree always faster)"
	case *c.Predicted == 0:
		predicted = "none (ring always faster)"
	default:
		predicted = fmt.Sprintf("%d bytes (%.0f KiB)", *c.Predicted, float64(*c.Predicted)/1024)
	}
	return measured, predicted
}

// WireNICs is the most NICs of one node that carried a variant's traffic, by the port counters
// (a port counts when it sent at least a tenth of what its node sent), with their ports; 0 when no
// variant has counters.
func WireNICs(vs []*VariantResult) (int, []string) {
	best, ports := 0, []string(nil)
	for _, v := range vs {
		if v.Wire == nil {
			continue
		}
		for _, n := range v.Wire.Nodes {
			if n.Err != "" || n.Sent == 0 {
				continue
			}
			var busy []string
			for port, t := range n.Ports {
				if t.XmitBytes*10 >= n.Sent {
					busy = append(busy, port)
				}
			}
			if len(busy) > best {
				best, ports = len(busy), busy
			}
		}
	}
	sort.Strings(ports)
	return best, ports
}
