package servebench

import (
	"sort"
	"strconv"
	"time"
)

// metrics computes vLLM's figures from the records.
func metrics(recs []reqRecord, dur time.Duration, slo SLO, pcts []float64) *Result {
	res := &Result{DurationS: dur.Seconds(), records: recs, pcts: pcts, slo: slo}
	var ttfts, tpots, allTPOTs, itls, e2els []float64
	byReason := map[string]*Failure{}
	for i := range recs {
		r := &recs[i]
		if !r.ok {
			res.Failed++
			reason := "not sent (cancelled)"
			if r.err != nil {
				reason = r.err.Error()
			}
			if f, ok := byReason[reason]; ok {
				f.Count++
			} else {
				byReason[reason] = &Failure{Reason: reason, Count: 1, First: i}
			}
			continue
		}
		res.Completed++
		res.TotalOutputTokens += r.outputTokens
		res.TotalInputTokens += r.promptTokens
		tpot := 0.0 // as in vLLM: 0 for goodput when output <= 1 token, left out of TPOT stats
		if r.outputTokens > 1 {
			tpot = (r.latency - r.ttft).Seconds() / float64(r.outputTokens-1)
			tpots = append(tpots, tpot)
		}
		allTPOTs = append(allTPOTs, tpot)
		for _, d := range r.itl {
			itls = append(itls, d.Seconds())
		}
		ttfts = append(ttfts, r.ttft.Seconds())
		e2els = append(e2els, r.latency.Seconds())
	}
	if s := dur.Seconds(); s > 0 {
		res.RequestThroughput = float64(res.Completed) / s
		res.OutputTokenThroughput = float64(res.TotalOutputTokens) / s
		res.TotalTokenThroughput = float64(res.TotalInputTokens+res.TotalOutputTokens) / s
		if slo.set() {
			good := 0
			for i := range ttfts {
				if (slo.TTFT == 0 || ttfts[i] <= slo.TTFT.Seconds()) &&
					(slo.TPOT == 0 || allTPOTs[i] <= slo.TPOT.Seconds()) &&
					(slo.E2EL == 0 || e2els[i] <= slo.E2EL.Seconds()) {
					good++
				}
			}
			g := float64(good) / s
			res.RequestGoodput = &g
		}
	}
	res.TTFTMs, res.TPOTMs, res.ITLMs, res.E2ELMs = summarize(ttfts, pcts), summarize(tpots, pcts), summarize(itls, pcts), summarize(e2els, pcts)
	res.PeakOutputTokensPerS, res.MaxConcurrentRequests, res.PeakInFlight = peaks(recs)
	for _, f := range byReason {
		res.Failures = append(res.Failures, *f)
	}
	sort.Slice(res.Failures, func(i, j int) bool { return res.Failures[i].Count > res.Failures[j].Count })
	return res
}

// peaks are vLLM's max_output_tokens_per_s and max_concurrent_requests as released vLLM
// computes them (vllm/benchmarks/serve.py calculate_metrics; main at d86257e, 2026-09-12, per
// vllm-project/vllm#56653), and the exact peak in flight. Both count in one-second buckets from
// the first successful request's start: a chunk (start + TTFT + ITLs) in the bucket it
// arrived in; a request in every bucket from int(start) to int(end), both included, so
// requests that follow each other within a second count as concurrent. The exact peak is the
// most successful requests in flight at once over half-open [start, start+E2EL) intervals, a
// departure before an arrival at the same instant (what open vLLM PRs #56647 and #56678
// propose instead).
func peaks(recs []reqRecord) (tokPerS float64, perSecond, inFlight int) {
	var first time.Time
	for i := range recs {
		if recs[i].ok && (first.IsZero() || recs[i].start.Before(first)) {
			first = recs[i].start
		}
	}
	if first.IsZero() {
		return 0, 0, 0
	}
	tokens, active := map[int]int{}, map[int]int{}
	type event struct {
		at    time.Duration
		delta int
	}
	var events []event
	for i := range recs {
		r := &recs[i]
		if !r.ok {
			continue
		}
		at := r.start.Sub(first) + r.ttft
		tokens[int(at/time.Second)]++
		for _, d := range r.itl {
			at += d
			tokens[int(at/time.Second)]++
		}
		s := r.start.Sub(first)
		for sec := int(s / time.Second); sec <= int((s+r.latency)/time.Second); sec++ {
			active[sec]++
		}
		events = append(events, event{s, 1}, event{s + r.latency, -1})
	}
	for _, n := range tokens {
		tokPerS = max(tokPerS, float64(n))
	}
	for _, n := range active {
		perSecond = max(perSecond, n)
	}
	sort.Slice(events, func(i, j int) bool {
		if events[i].at != events[j].at {
			return events[i].at < events[j].at
		}
		return events[i].delta < events[j].delta // a departure before an arrival at the same time
	})
	cur := 0
	for _, e := range events {
		cur += e.delta
		inFlight = max(inFlight, cur)
	}
	return tokPerS, perSecond, inFlight
}

// VLLMResult is the result in vllm bench serve's JSON format (vllm/benchmarks/serve.py,
// the result dict of benchmark() merged into main's result_json), so vLLM's own sweep and
// plot tools read it: its key names, the per-request arrays (seconds), mean/median/std and
// p{N}_{metric}_ms for every reported percentile of ttft, tpot, itl and e2el. ain does not
// keep the generated texts on its hot path: generated_texts holds empty strings.
func (r *Result) VLLMResult(label string) map[string]any {
	out := map[string]any{
		"date":                    r.started.Format("20060102-150405"),
		"endpoint_type":           "openai-chat",
		"backend":                 "openai-chat",
		"label":                   label,
		"model_id":                r.Config.Model,
		"tokenizer_id":            r.Config.Model,
		"num_prompts":             r.Config.Requests,
		"request_rate":            any("inf"),
		"burstiness":              r.Config.Burstiness,
		"max_concurrency":         nil,
		"duration":                r.DurationS,
		"completed":               r.Completed,
		"failed":                  r.Failed,
		"total_input_tokens":      r.TotalInputTokens,
		"total_output_tokens":     r.TotalOutputTokens,
		"request_throughput":      r.RequestThroughput,
		"request_goodput":         nil,
		"output_throughput":       r.OutputTokenThroughput,
		"total_token_throughput":  r.TotalTokenThroughput,
		"max_output_tokens_per_s": r.PeakOutputTokensPerS,
		"max_concurrent_requests": r.MaxConcurrentRequests,
	}
	if r.Config.API == APICompletions {
		out["endpoint_type"], out["backend"] = "openai", "openai"
	}
	if r.Config.RequestRate != "inf" {
		v, _ := strconv.ParseFloat(r.Config.RequestRate, 64)
		out["request_rate"] = v
	}
	if r.Config.MaxConcurrency > 0 {
		out["max_concurrency"] = r.Config.MaxConcurrency
	}
	if r.RequestGoodput != nil {
		out["request_goodput"] = *r.RequestGoodput
	}
	n := len(r.records)
	inputLens, outputLens := make([]int, n), make([]int, n)
	ttfts, latencies, starts := make([]float64, n), make([]float64, n), make([]float64, n)
	itls, texts, errs, queued := make([][]float64, n), make([]string, n), make([]string, n), make([]float64, n)
	for i := range r.records {
		rec := &r.records[i]
		inputLens[i] = rec.promptTokens
		itls[i] = []float64{}
		queued[i] = rec.queued.Seconds()
		if !rec.ok {
			if rec.err != nil {
				errs[i] = rec.err.Error()
			} else {
				errs[i] = "not sent (cancelled)"
			}
			continue
		}
		outputLens[i] = rec.outputTokens
		ttfts[i], latencies[i] = rec.ttft.Seconds(), rec.latency.Seconds()
		starts[i] = rec.start.Sub(r.begin).Seconds()
		for _, d := range rec.itl {
			itls[i] = append(itls[i], d.Seconds())
		}
	}
	out["input_lens"], out["output_lens"], out["ttfts"], out["itls"] = inputLens, outputLens, ttfts, itls
	out["latencies"], out["start_times"], out["generated_texts"], out["errors"] = latencies, starts, texts, errs
	// Seconds each request waited for a --max-concurrency slot (vLLM's client_queue_time).
	out["queue_times"] = queued
	pcts := r.pcts
	if len(pcts) == 0 {
		pcts = []float64{99}
	}
	for _, m := range []struct {
		name string
		s    Stats
	}{{"ttft", r.TTFTMs}, {"tpot", r.TPOTMs}, {"itl", r.ITLMs}, {"e2el", r.E2ELMs}} {
		out["mean_"+m.name+"_ms"], out["median_"+m.name+"_ms"], out["std_"+m.name+"_ms"] = m.s.Mean, m.s.Median, m.s.Std
		for _, p := range pcts {
			v, ok := m.s.Percentiles[PercentileName(p)]
			if !ok {
				switch p {
				case 90:
					v = m.s.P90
				case 99:
					v = m.s.P99
				}
			}
			out["p"+PercentileName(p)+"_"+m.name+"_ms"] = v
		}
	}
	return out
}
