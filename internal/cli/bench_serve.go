package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	ucli "github.com/urfave/cli/v2"

	"github.com/ain-hpc/ain/internal/ainerr"
	"github.com/ain-hpc/ain/pkg/servebench"
)

type benchServeOptions struct {
	endpointOptions
	Model       string
	Requests    int
	Concurrency string
	RequestRate string
	Burstiness  float64
	Warmup      int
	InputLen    int
	OutputLen   int
	// outputLenSet: --output-len was given (with sharegpt it then overrides the replies'
	// lengths, even at its default value).
	outputLenSet bool
	// shareGPTSkipped counts the conversations vLLM's length filter left out.
	shareGPTSkipped int
	Prompts         string
	Dataset         string
	DatasetPath     string
	API             string
	RangeRatio      float64
	PrefixLen       int
	IgnoreEOS       bool
	Seed            int
	SLO             string
	Goodput         ucli.StringSlice
	Percentiles     string
	SaveResult      string
	Label           string
	Plot            string
	Output          string
}

func (a *App) benchServeCommand() *ucli.Command {
	o := &benchServeOptions{}
	return &ucli.Command{
		Name:  "serve",
		Usage: "load-test an OpenAI-compatible server (vLLM) with streaming requests; TTFT, TPOT, ITL, E2EL, throughput, goodput; vLLM's result JSON",
		Description: "Metrics follow `vllm bench serve` (vllm/benchmarks/serve.py): TTFT to the first chunk with choices\n" +
			"(vLLM's role-only first chunk counts), TPOT = (E2EL - TTFT) / (output tokens - 1), ITL pooled over all\n" +
			"requests, E2EL to the last chunk; throughputs over the run's duration; goodput counts requests within\n" +
			"every --goodput target; peak output tokens/s and peak concurrent requests as vLLM computes them, in\n" +
			"one-second buckets (requests that follow each other within a second count as concurrent), and the\n" +
			"exact peak of requests in flight at once. Percentiles\n" +
			"interpolate linearly (numpy's default). Arrivals are Gamma-distributed and rescaled so the last\n" +
			"request goes at requests/rate, as vLLM does. A warm-up (not measured) runs --warmup requests, then\n" +
			"opens as many connections as the run keeps in flight. --save-result writes vLLM's result JSON (its\n" +
			"key names and per-request arrays), which vLLM's sweep and plot tools read.\n\n" +
			"By default the server is reached through its HTTPS ingress; --port-forward measures ONE pod through\n" +
			"an API-server tunnel instead, and the result says so.\n\n" +
			"A request whose answer has not begun within --ttfb-timeout, or stops for --idle-timeout, is a failed\n" +
			"request, counted with its reason (vLLM's client fails a request on any exception, its own bound\n" +
			"being 6 hours in all).\n\n" +
			"Sweeps: a list in --request-rate (1,2,4,inf) or --concurrency (1,4,16) runs each setting, prints a\n" +
			"table with the knee (the last setting that keeps up) and, with --plot FILE.png|svg, draws TTFT/ITL\n" +
			"p99 and goodput against it.",
		Flags: append(append(o.flags(), o.timeoutFlags(benchTTFBTimeout, benchIdleTimeout)...),
			&ucli.StringFlag{Name: "model", Aliases: []string{"m"}, Usage: "served model name (default: the only one served; with several, e.g. LoRA adapters, required)", Destination: &o.Model},
			&ucli.IntFlag{Name: "requests", Aliases: []string{"num-prompts"}, Value: 200, Usage: "measured requests (per sweep point)", Destination: &o.Requests},
			&ucli.StringFlag{Name: "concurrency", Aliases: []string{"max-concurrency"}, Usage: "most requests in flight (0 or empty: no limit); a list sweeps", Destination: &o.Concurrency},
			&ucli.StringFlag{Name: "request-rate", Value: "inf", Usage: "mean arrivals per second; inf sends every request at once; a list (1,2,4) sweeps", Destination: &o.RequestRate},
			&ucli.Float64Flag{Name: "burstiness", Value: 1, Usage: "Gamma shape of the arrival gaps: 1 is Poisson, <1 burstier, >1 more regular, inf constant gaps of 1/rate", Destination: &o.Burstiness},
			&ucli.IntFlag{Name: "warmup", Aliases: []string{"num-warmups"}, Value: 1, Usage: "unmeasured requests first (the first must succeed)", Destination: &o.Warmup},
			&ucli.StringFlag{Name: "api", Value: servebench.APIChat, Usage: "chat (/v1/chat/completions) or completions (/v1/completions, where random prompts are token IDs of exact length)", Destination: &o.API},
			&ucli.StringFlag{Name: "dataset-name", Aliases: []string{"dataset"}, Value: "random", Usage: "random, sharegpt (--dataset-path: a ShareGPT JSON file) or prompts (--dataset-path: JSON Lines with \"prompt\", or one per line)", Destination: &o.Dataset},
			&ucli.StringFlag{Name: "dataset-path", Usage: "the dataset file of --dataset-name sharegpt or prompts", Destination: &o.DatasetPath},
			&ucli.IntFlag{Name: "input-len", Aliases: []string{"random-input-len"}, Value: 256, Usage: "random prompt length: tokens with --api completions, words (about a token each) with chat", Destination: &o.InputLen},
			&ucli.IntFlag{Name: "output-len", Aliases: []string{"random-output-len"}, Value: 128, Usage: "max tokens per answer; with sharegpt, overrides each conversation's reply length", Destination: &o.OutputLen,
				Action: func(*ucli.Context, int) error { o.outputLenSet = true; return nil }},
			&ucli.Float64Flag{Name: "random-range-ratio", Usage: "random lengths uniform in [L(1-r), L(1+r)] (0: exactly L)", Destination: &o.RangeRatio},
			&ucli.IntFlag{Name: "random-prefix-len", Usage: "a random prefix of this many tokens shared by every random prompt (prefix caching serves it)", Destination: &o.PrefixLen},
			&ucli.StringFlag{Name: "prompts", Usage: "shorthand for --dataset-name prompts --dataset-path FILE", Destination: &o.Prompts},
			&ucli.BoolFlag{Name: "ignore-eos", Usage: "ask vLLM for exactly --output-len tokens (vLLM's ignore_eos)", Destination: &o.IgnoreEOS},
			&ucli.IntFlag{Name: "seed", Usage: "seed of the random prompts and arrivals", Destination: &o.Seed},
			&ucli.StringSliceFlag{Name: "goodput", Usage: "goodput targets in ms, vLLM's syntax: --goodput ttft:500 --goodput tpot:50 (also e2el)", Destination: &o.Goodput},
			&ucli.StringFlag{Name: "slo", Usage: "goodput targets as ttft=500,tpot=50 (same as --goodput)", Destination: &o.SLO},
			&ucli.StringFlag{Name: "metric-percentiles", Value: "99", Usage: "percentiles reported in the result JSON, e.g. 50,90,99,99.9 (the table always shows median, P90, P99)", Destination: &o.Percentiles},
			&ucli.StringFlag{Name: "save-result", Usage: "write vLLM's result JSON to this `FILE` (a sweep writes FILE with -N before the extension per point)", Destination: &o.SaveResult},
			&ucli.StringFlag{Name: "label", Usage: "the label in vLLM's result JSON", Destination: &o.Label},
			&ucli.StringFlag{Name: "plot", Usage: "with a sweep: draw latency p99 and goodput vs the setting to `FILE`.png or .svg", Destination: &o.Plot},
			outputFlag(&o.Output, "table", "table, json (ain's) or vllm-json (vLLM's result format)"),
		),
		Action: func(c *ucli.Context) error { return a.runBenchServe(c.Context, o) },
	}
}

// sweep parses a comma-separated list of settings ("inf" allowed for rates).
func sweepList(flag, s string, inf bool) ([]float64, error) {
	var out []float64
	for _, f := range strings.Split(s, ",") {
		f = strings.ToLower(strings.TrimSpace(f))
		switch {
		case f == "" || f == "0" && !inf:
			out = append(out, 0)
		case f == "inf" && inf:
			out = append(out, math.Inf(1))
		default:
			v, err := strconv.ParseFloat(f, 64)
			if err != nil || v <= 0 || math.IsNaN(v) || math.IsInf(v, 0) {
				want := "requests per second > 0, or inf"
				if !inf {
					want = "a whole number of requests >= 0"
				}
				return nil, ainerr.Usagef("--%s %q: want %s (a comma-separated list sweeps)", flag, s, want)
			}
			if !inf && v != math.Trunc(v) {
				return nil, ainerr.Usagef("--%s %q: want whole numbers", flag, s)
			}
			out = append(out, v)
		}
	}
	return out, nil
}

func (o *benchServeOptions) config() (servebench.Config, error) {
	cfg := servebench.Config{Model: o.Model, Requests: o.Requests, Burstiness: o.Burstiness, Warmup: o.Warmup, InputLen: o.InputLen,
		OutputLen: o.OutputLen, IgnoreEOS: o.IgnoreEOS, Seed: uint64(o.Seed), API: o.API, RangeRatio: o.RangeRatio, PrefixLen: o.PrefixLen}
	switch {
	case o.Requests < 1:
		return cfg, ainerr.Usagef("--requests must be >= 1")
	case !(o.Burstiness > 0): // NaN too
		return cfg, ainerr.Usagef("--burstiness %g: want a number > 0, or inf", o.Burstiness)
	case o.Warmup < 0:
		return cfg, ainerr.Usagef("--warmup must be >= 0")
	case o.OutputLen < 1:
		return cfg, ainerr.Usagef("--output-len must be >= 1")
	case o.InputLen < 1:
		return cfg, ainerr.Usagef("--input-len must be >= 1")
	case o.RangeRatio < 0 || o.RangeRatio >= 1:
		return cfg, ainerr.Usagef("--random-range-ratio %g: want 0 <= r < 1", o.RangeRatio)
	case o.PrefixLen < 0:
		return cfg, ainerr.Usagef("--random-prefix-len must be >= 0")
	case o.API != servebench.APIChat && o.API != servebench.APICompletions:
		return cfg, ainerr.Usagef("--api %s: use chat or completions", o.API)
	case o.Output != "table" && o.Output != "json" && o.Output != "vllm-json":
		return cfg, ainerr.Usagef("-o %s: use table, json or vllm-json", o.Output)
	}
	goodput := strings.TrimSpace(strings.Join(append(o.Goodput.Value(), o.SLO), " "))
	slo, err := servebench.ParseSLO(goodput)
	if err != nil {
		return cfg, ainerr.New(ainerr.Usage, fmt.Errorf("--goodput: %w", err), "e.g. --goodput ttft:500 --goodput tpot:50 (milliseconds; ttft, tpot, e2el)")
	}
	cfg.SLO = slo
	for _, p := range strings.Split(o.Percentiles, ",") {
		v, err := strconv.ParseFloat(strings.TrimSpace(p), 64)
		if err != nil || v <= 0 || v >= 100 {
			return cfg, ainerr.Usagef("--metric-percentiles %q: want percentiles between 0 and 100, e.g. 50,90,99", o.Percentiles)
		}
		cfg.Percentiles = append(cfg.Percentiles, v)
	}
	name, path, pathFlag := o.Dataset, o.DatasetPath, "--dataset-path"
	if o.Prompts != "" {
		name, path, pathFlag = "prompts", o.Prompts, "--prompts"
	}
	switch name {
	case "random":
		if path != "" {
			return cfg, ainerr.Usagef("--dataset-path goes with --dataset-name sharegpt or prompts, not random")
		}
	case "sharegpt", "prompts":
		if path == "" {
			return cfg, ainerr.Usagef("--dataset-name %s needs --dataset-path FILE", name)
		}
		if name == "sharegpt" {
			out := 0
			if o.outputLenSet {
				out = o.OutputLen // set explicitly: it overrides the replies' lengths
			}
			if cfg.Dataset, o.shareGPTSkipped, err = servebench.LoadShareGPT(path, out, uint64(o.Seed)); err != nil {
				return cfg, ainerr.New(ainerr.Usage, fmt.Errorf("%s: %w", pathFlag, err), "")
			}
		} else if cfg.Prompts, err = servebench.LoadPrompts(path); err != nil {
			return cfg, ainerr.New(ainerr.Usage, fmt.Errorf("%s: %w", pathFlag, err), "")
		}
	default:
		return cfg, ainerr.Usagef("--dataset-name %s: use random, sharegpt or prompts", name)
	}
	return cfg, nil
}

func (a *App) runBenchServe(ctx context.Context, o *benchServeOptions) error {
	cfg, err := o.config()
	if err != nil {
		return err
	}
	rates, err := sweepList("request-rate", o.RequestRate, true)
	if err != nil {
		return err
	}
	concs, err := sweepList("concurrency", o.Concurrency, false)
	if err != nil {
		return err
	}
	if len(rates) > 1 && len(concs) > 1 {
		return ainerr.Usagef("sweep either --request-rate or --concurrency, not both")
	}
	sweeping := len(rates) > 1 || len(concs) > 1
	if o.Plot != "" && !sweeping {
		return ainerr.Usagef("--plot draws a sweep: give a list in --request-rate or --concurrency")
	}
	if ext := strings.ToLower(filepath.Ext(o.Plot)); o.Plot != "" && ext != ".png" && ext != ".svg" {
		// Checked before the sweep runs, not after minutes of load.
		return ainerr.Usagef("--plot %s: name a .png or .svg file", o.Plot)
	}
	if o.shareGPTSkipped > 0 {
		fmt.Fprintf(a.Streams.Err, "sharegpt: %d conversation(s) kept, %d left out by vLLM's length filter (prompt and reply of 4-1024 tokens, 2048 in all; lengths estimated at 4 characters a token, without the model's tokenizer)\n", len(cfg.Dataset), o.shareGPTSkipped)
	}
	if n := len(cfg.Prompts); n > 0 && n < cfg.Requests {
		fmt.Fprintf(a.Streams.Err, "note: %d prompts for %d requests: repeats are served from vLLM's prefix cache (automatic prefix caching is on by default), which lowers TTFT; use more prompts, or the random dataset\n", n, cfg.Requests)
	}
	if cfg.API == servebench.APIChat && len(cfg.Prompts) == 0 && len(cfg.Dataset) == 0 {
		fmt.Fprintln(a.Streams.Err, "note: random chat prompts are words, about one token each (plus the chat template); --api completions sends exact token counts")
	}
	maxConc := 0
	for _, c := range concs {
		maxConc = max(maxConc, int(c))
	}
	conns := maxConc
	if conns == 0 {
		conns = o.Requests
	}
	c, err := a.modelClient(ctx, &o.endpointOptions, conns)
	if err != nil {
		return err
	}
	if o.via == "port-forward" {
		fmt.Fprintln(a.Streams.Err, "MEASURING THROUGH A PORT-FORWARD: one pod, through the API server's SPDY tunnel; the figures include that tunnel and leave out the ingress and the Service's balancing. Use the ingress for serving figures.")
	}
	if cfg.Model, err = c.ResolveModel(ctx, o.Model); err != nil {
		return err
	}
	cfg.Now = a.Now
	var points []servebench.SweepPoint
	for i := 0; i < max(len(rates), len(concs)); i++ {
		pc := cfg
		pc.RequestRate, pc.MaxConcurrency = rates[min(i, len(rates)-1)], int(concs[min(i, len(concs)-1)])
		label := fmt.Sprintf("rate %s, concurrency %s", rateName(pc.RequestRate), concName(pc.MaxConcurrency))
		if a.Streams.IsTTY && o.Output == "table" {
			pc.Progress = func(done, failed int) {
				fmt.Fprintf(a.Streams.Err, "\r%s: %d/%d requests done, %d failed", label, done, pc.Requests, failed)
				if done == pc.Requests {
					fmt.Fprintln(a.Streams.Err)
				}
			}
		}
		res, err := servebench.Run(ctx, c, pc)
		if err != nil {
			return err
		}
		res.Config.Path = o.via
		x := pc.RequestRate
		if len(concs) > 1 {
			x = float64(pc.MaxConcurrency)
		}
		if math.IsInf(x, 1) {
			x = 0
		}
		points = append(points, servebench.SweepPoint{X: x, Label: label, Result: res})
		if o.SaveResult != "" {
			file := o.SaveResult
			if sweeping {
				ext := filepath.Ext(file)
				file = strings.TrimSuffix(file, ext) + fmt.Sprintf("-%d", i+1) + ext
			}
			b, _ := json.MarshalIndent(res.VLLMResult(o.Label), "", "  ")
			if err := os.WriteFile(file, append(b, '\n'), 0o644); err != nil {
				return err
			}
			fmt.Fprintf(a.Streams.Err, "wrote %s (vLLM's result format)\n", file)
		}
	}
	switch {
	case o.Output == "json" && !sweeping:
		if err := a.writeJSON(points[0].Result); err != nil {
			return err
		}
	case o.Output == "json":
		if err := a.writeJSON(points); err != nil {
			return err
		}
	case o.Output == "vllm-json" && !sweeping:
		if err := a.writeJSON(points[0].Result.VLLMResult(o.Label)); err != nil {
			return err
		}
	case o.Output == "vllm-json":
		var all []map[string]any
		for _, p := range points {
			all = append(all, p.Result.VLLMResult(o.Label))
		}
		if err := a.writeJSON(all); err != nil {
			return err
		}
	case !sweeping:
		printServeBench(a.Streams.Out, points[0].Result)
	default:
		a.printSweep(points)
	}
	if o.Plot != "" {
		var buf bytes.Buffer
		xName := "request rate (req/s; inf last)"
		if len(concs) > 1 {
			xName = "max concurrency"
		}
		if err := servebench.PlotSweep(&buf, points, xName, strings.TrimPrefix(filepath.Ext(o.Plot), ".")); err != nil {
			return ainerr.New(ainerr.Usage, fmt.Errorf("--plot: %w", err), "")
		}
		if err := os.WriteFile(o.Plot, buf.Bytes(), 0o644); err != nil {
			return err
		}
		fmt.Fprintf(a.Streams.Err, "wrote %s\n", o.Plot)
	}
	for _, p := range points {
		if p.Result.Completed == 0 {
			return ainerr.Newf(ainerr.Failure, "%s: all %d requests failed", p.Label, p.Result.Failed)
		}
	}
	return nil
}

func rateName(r float64) string {
	if math.IsInf(r, 1) || r == 0 {
		return "inf"
	}
	return strconv.FormatFloat(r, 'g', -1, 64)
}

func concName(c int) string {
	if c == 0 {
		return "no limit"
	}
	return strconv.Itoa(c)
}

// printSweep is one row per setting and the knee.
func (a *App) printSweep(points []servebench.SweepPoint) {
	var rows [][]string
	knee := servebench.Knee(points)
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
	a.table([]string{"RATE", "CONCURRENCY", "OK", "FAILED", "REQ/S", "GOODPUT", "OUT TOK/S", "TTFT P99 MS", "ITL P99 MS", ""}, rows)
	if knee < 0 {
		fmt.Fprintln(a.Streams.Out, "knee: none; every setting kept up (goodput >= 90% of throughput, or TTFT p99 within 3x the first)")
	}
}

// printServeBench prints the result block with vllm bench serve's headings, so figures can be
// compared line by line.
func printServeBench(w io.Writer, r *servebench.Result) {
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
		s            servebench.Stats
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
