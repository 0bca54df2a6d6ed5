package servebench

import (
	"fmt"
	"io"
	"strconv"
	"strings"
)

// WriteText writes the result block with vllm bench serve's headings, so figures can be
// compared line by line.
func (r *Result) WriteText(w io.Writer) {
	line := func(k string, v any) {
		switch x := v.(type) {
		case float64:
			fmt.Fprintf(w, "%-40s%.2f\n", k, x)
		default:
			fmt.Fprintf(w, "%-40s%v\n", k, x)
		}
	}
	head := func(title, fill string) {
		pad := 50 - len(title) - 2
		if title == "" {
			fmt.Fprintln(w, strings.Repeat(fill, 50))
			return
		}
		fmt.Fprintf(w, "%s %s %s\n", strings.Repeat(fill, pad/2), title, strings.Repeat(fill, pad-pad/2))
	}
	head("Serving Benchmark Result", "=")
	line("Endpoint:", r.Config.Endpoint)
	line("Model:", r.Config.Model)
	if r.Config.Path == "port-forward" {
		line("Path:", "port-forward to ONE pod (not the serving path)")
	}
	conc := "no limit"
	if r.Config.MaxConcurrency > 0 {
		conc = strconv.Itoa(r.Config.MaxConcurrency)
	}
	line("Request rate (req/s), concurrency:", r.Config.RequestRate+", "+conc)
	line("Successful requests:", r.Completed)
	line("Failed requests:", r.Failed)
	line("Benchmark duration (s):", r.DurationS)
	line("Total input tokens:", r.TotalInputTokens)
	line("Total generated tokens:", r.TotalOutputTokens)
	line("Request throughput (req/s):", r.RequestThroughput)
	if r.RequestGoodput != nil {
		line("Request goodput (req/s):", *r.RequestGoodput)
	}
	line("Output token throughput (tok/s):", r.OutputTokenThroughput)
	line("Peak output token throughput (tok/s):", r.PeakOutputTokensPerS)
	line("Peak concurrent requests:", r.MaxConcurrentRequests)
	line("Peak requests in flight at once:", r.PeakInFlight)
	line("Total token throughput (tok/s):", r.TotalTokenThroughput)
	for _, m := range []struct {
		title, short string
		s            Stats
	}{
		{"Time to First Token", "TTFT", r.TTFTMs},
		{"Time per Output Token (excl. 1st token)", "TPOT", r.TPOTMs},
		{"Inter-token Latency", "ITL", r.ITLMs},
		{"End-to-end Latency", "E2EL", r.E2ELMs},
	} {
		head(m.title, "-")
		line("Mean "+m.short+" (ms):", m.s.Mean)
		line("Median "+m.short+" (ms):", m.s.Median)
		line("P90 "+m.short+" (ms):", m.s.P90)
		line("P99 "+m.short+" (ms):", m.s.P99)
	}
	head("", "=")
	if len(r.Failures) > 0 {
		fmt.Fprintln(w, "Failed requests, by reason:")
		for _, f := range r.Failures {
			fmt.Fprintf(w, "  %d x %s (first: request %d)\n", f.Count, f.Reason, f.First)
		}
	}
}

// WriteSweep writes one row per setting through table (a bordered table on a terminal, plain
// columns otherwise: the caller's choice) and marks the knee; without one it says so on w.
func WriteSweep(w io.Writer, points []SweepPoint, table func(header []string, rows [][]string)) {
	var rows [][]string
	knee := Knee(points)
	for i, p := range points {
		r := p.Result
		good := "-"
		if r.RequestGoodput != nil {
			good = fmt.Sprintf("%.2f", *r.RequestGoodput)
		}
		mark := ""
		if i == knee {
			mark = "<- knee"
		}
		rows = append(rows, []string{rateName(r.Config.RequestRateValue()), concName(r.Config.MaxConcurrency), fmt.Sprint(r.Completed), fmt.Sprint(r.Failed),
			fmt.Sprintf("%.2f", r.RequestThroughput), good, fmt.Sprintf("%.1f", r.OutputTokenThroughput),
			fmt.Sprintf("%.1f", r.TTFTMs.P99), fmt.Sprintf("%.1f", r.ITLMs.P99), mark})
	}
	table([]string{"RATE", "CONCURRENCY", "OK", "FAILED", "REQ/S", "GOODPUT", "OUT TOK/S", "TTFT P99 MS", "ITL P99 MS", ""}, rows)
	if knee < 0 {
		fmt.Fprintln(w, "knee: none; every setting kept up (goodput >= 90% of throughput, or TTFT p99 within 3x the first)")
	}
}
