package report

import (
	"fmt"
	"math"
	"strings"

	"github.com/ain-hpc/ain/pkg/bench"
)

// servingRun is what the report reads of a result in vLLM's benchmark format (vllm bench
// serve --save-result, or ain bench serve --save-result, which writes the same keys).
type servingRun struct {
	file              string
	Label             string   `json:"label"`
	Model             string   `json:"model_id"`
	Prompts           int      `json:"num_prompts"`
	MaxConcurrency    *int     `json:"max_concurrency"`
	Completed         int      `json:"completed"`
	Failed            int      `json:"failed"`
	Duration          float64  `json:"duration"`
	RequestThroughput float64  `json:"request_throughput"`
	RequestRate       any      `json:"request_rate"`
	Burstiness        *float64 `json:"burstiness"`
	OutputThroughput  float64  `json:"output_throughput"`
	MedianTTFT        *float64 `json:"median_ttft_ms"`
	P99TTFT           *float64 `json:"p99_ttft_ms"`
	MedianITL         *float64 `json:"median_itl_ms"`
	InputTokens       int      `json:"total_input_tokens"`
}

// name is how the report calls the run: its label, else its file.
func (s servingRun) name() string {
	if s.Label != "" {
		return s.Label
	}
	return s.file
}

// load says the load the run put on the server; two runs compare only under the same load.
func (s servingRun) load() string {
	c := "unbounded concurrency"
	if s.MaxConcurrency != nil {
		c = fmt.Sprintf("concurrency %d", *s.MaxConcurrency)
	}
	rate := "rate inf"
	switch v := s.RequestRate.(type) {
	case float64:
		rate = fmt.Sprintf("rate %g/s", v)
	case string:
		rate = "rate " + v
	}
	if s.Burstiness != nil && *s.Burstiness != 1 {
		rate += fmt.Sprintf(" (burstiness %g)", *s.Burstiness)
	}
	in := ""
	if s.Completed > 0 {
		in = fmt.Sprintf(", ~%d input tokens", s.InputTokens/s.Completed)
	}
	return fmt.Sprintf("%d prompts, %s, %s%s", s.Prompts, c, rate, in)
}

func (b *builder) serve(s servingRun) {
	src := fmt.Sprintf("%s (%s, %s, %s; %d completed, %d failed)", s.file, orDash(s.Label), s.Model, s.load(), s.Completed, s.Failed)
	if s.Completed == 0 {
		// vLLM writes 0 ms latencies when nothing succeeded (np.median(ttfts or 0)): no numbers.
		b.r.Disagreements = append(b.r.Disagreements, fmt.Sprintf("serving run %s completed no request (%d failed): it has no latency or throughput to show", s.name(), s.Failed))
		return
	}
	add := func(measure string, v *float64, unit string) {
		if v != nil {
			b.r.Rows = append(b.r.Rows, Row{Path: Serving, Measure: measure + ", " + s.name(), Value: *v, Unit: unit, Source: src})
		}
	}
	add("TTFT median", s.MedianTTFT, "ms")
	add("TTFT p99", s.P99TTFT, "ms")
	add("ITL median", s.MedianITL, "ms")
	out := s.OutputThroughput
	add("output throughput", &out, "tok/s")
}

// compare derives what two inputs say together, and where they disagree.
func (b *builder) compare() {
	b.compareServing()
	b.compareFabric()
	if len(b.allreduce) == 0 {
		b.r.Missing = append(b.r.Missing, Missing{Path: Training, Measure: "bench allreduce"})
	}
	if len(b.rdma) == 0 {
		b.r.Missing = append(b.r.Missing, Missing{Path: Fabric, Measure: "bench rdma"})
	}
	if len(b.serving) == 0 {
		b.r.Missing = append(b.r.Missing, Missing{Path: Serving, Measure: "bench serve"})
	}
	if b.storage == 0 {
		b.r.Missing = append(b.r.Missing, Missing{Path: Storage, Measure: "preflight --read-throughput"})
	}
}

// compareServing sets each serving run beside the first one of the same model and load (e.g.
// the HTTPS entry against a pod directly); runs of another model or load are said not to compare.
func (b *builder) compareServing() {
	for i, s := range b.serving {
		if s.Completed == 0 {
			continue
		}
		for _, base := range b.serving[:i] {
			if base.Completed == 0 {
				continue
			}
			if base.Model != s.Model {
				b.r.Disagreements = append(b.r.Disagreements, fmt.Sprintf("serving runs %s and %s are of different models (%s, %s): not compared", base.name(), s.name(), base.Model, s.Model))
				continue
			}
			if base.load() != s.load() {
				b.r.Disagreements = append(b.r.Disagreements, fmt.Sprintf("serving runs %s and %s ran under different loads (%s; %s): not compared", base.name(), s.name(), base.load(), s.load()))
				continue
			}
			var parts []string
			if base.MedianTTFT != nil && s.MedianTTFT != nil {
				parts = append(parts, "TTFT median "+delta(*s.MedianTTFT, *base.MedianTTFT, "ms"))
			}
			if base.P99TTFT != nil && s.P99TTFT != nil {
				parts = append(parts, "TTFT p99 "+delta(*s.P99TTFT, *base.P99TTFT, "ms"))
			}
			parts = append(parts, "output throughput "+delta(s.OutputThroughput, base.OutputThroughput, "tok/s"))
			b.r.Comparisons = append(b.r.Comparisons, fmt.Sprintf("serving %s against %s: %s", s.name(), base.name(), strings.Join(parts, ", ")))
			break
		}
	}
}

// delta words v against base: the difference and its share of base.
func delta(v, base float64, unit string) string {
	d := v - base
	s := fmt.Sprintf("%+.4g %s", d, unit)
	if base != 0 && !math.IsInf(d/base, 0) {
		s += fmt.Sprintf(" (%+.0f%%)", 100*d/base)
	}
	return s
}

// compareFabric sets NCCL's busbw beside the two-node RDMA bandwidth of the same fabric, and
// says when the inputs describe different fabrics or line rates.
func (b *builder) compareFabric() {
	fabrics := map[string][]string{}
	rates := map[string][]string{}
	for _, a := range b.allreduce {
		fabrics[a.Fabric] = append(fabrics[a.Fabric], "allreduce "+a.Name)
		if a.LineRateGBps > 0 {
			rate := fmt.Sprintf("%.4g Gb/s", a.LineRateGBps*8)
			rates[rate] = append(rates[rate], "allreduce "+a.Name)
		}
	}
	for _, r := range b.rdma {
		fabrics[r.Fabric] = append(fabrics[r.Fabric], "rdma "+r.Test)
		if r.ExpectedGbps > 0 {
			rate := fmt.Sprintf("%.4g Gb/s", r.ExpectedGbps)
			rates[rate] = append(rates[rate], "rdma "+r.Test)
		}
	}
	if len(fabrics) > 1 {
		b.r.Disagreements = append(b.r.Disagreements, "the inputs ran on different fabrics: "+joinGroups(fabrics))
	}
	if len(rates) > 1 {
		b.r.Disagreements = append(b.r.Disagreements, "the inputs judge against different line rates: "+joinGroups(rates))
	}
	if len(fabrics) > 1 || len(rates) > 1 {
		return
	}
	for _, a := range b.allreduce {
		valid := map[string]bool{}
		for _, v := range a.Variants {
			valid[v.Name] = v.Valid
		}
		var best *bench.Peak
		for i, p := range a.Peaks {
			if valid[p.Variant] && (best == nil || p.Busbw > best.Busbw) {
				best = &a.Peaks[i]
			}
		}
		if a.Nodes < 2 || best == nil {
			continue // one node's busbw never crossed the fabric; an invalid variant proves nothing
		}
		for _, r := range b.rdma {
			if r.RDMAGbps == nil || *r.RDMAGbps == 0 {
				continue
			}
			nics, used := nicsUsed(a)
			nic := best.Busbw * 8 / float64(nics)
			b.r.Comparisons = append(b.r.Comparisons, fmt.Sprintf("NCCL allreduce %s (%s) reaches %.4g Gb/s per NIC (%s), %.0f%% of what %s measured between two nodes (%.4g Gb/s)",
				a.Name, best.Variant, nic, used, 100*nic / *r.RDMAGbps, r.Test, *r.RDMAGbps))
		}
	}
}

func joinGroups(m map[string][]string) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sortStrings(keys)
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s (%s)", k, strings.Join(m[k], ", ")))
	}
	return strings.Join(parts, "; ")
}

// nicsUsed is how many NICs per node the result judged busbw against, in words with why.
func nicsUsed(a *bench.Result) (int, string) {
	n := max(a.NICsPerNode, 1)
	if a.NICsNote != "" {
		return n, a.NICsNote
	}
	return n, fmt.Sprintf("%d NIC(s) per node", n)
}
