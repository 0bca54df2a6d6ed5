package cli

import (
	"context"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"

	ucli "github.com/urfave/cli/v2"

	"github.com/ain-hpc/ain/pkg/ainerr"
	"github.com/ain-hpc/ain/pkg/vllm"
)

type benchServeOptions struct {
	endpointOptions
	Model       string
	Requests    int
	Concurrency int
	RequestRate string
	Burstiness  float64
	Warmup      int
	InputLen    int
	OutputLen   int
	Prompts     string
	IgnoreEOS   bool
	Seed        int
	SLO         string
	Output      string
}

func (a *App) benchServeCommand() *ucli.Command {
	o := &benchServeOptions{}
	return &ucli.Command{
		Name:  "serve",
		Usage: "load-test an OpenAI-compatible server (vLLM) with streaming chat requests; TTFT, TPOT, ITL, E2EL, throughput",
		Description: "Metrics follow `vllm bench serve`: TTFT to the first chunk with choices (vLLM's role-only first chunk\n" +
			"counts), TPOT = (E2EL - TTFT) / (output tokens - 1), ITL pooled over all requests, E2EL to the last\n" +
			"chunk; throughputs over the run's duration; goodput counts requests within every --slo target.\n" +
			"Percentiles interpolate linearly (numpy's default). Output tokens come from the usage chunk\n" +
			"(stream_options.include_usage). Failed requests are counted and explained.",
		Flags: append(o.flags(),
			&ucli.StringFlag{Name: "model", Aliases: []string{"m"}, Usage: "served model name (default: the only one served; with several, e.g. LoRA adapters, required)", Destination: &o.Model},
			&ucli.IntFlag{Name: "requests", Value: 200, Usage: "measured requests", Destination: &o.Requests},
			&ucli.IntFlag{Name: "concurrency", Aliases: []string{"max-concurrency"}, Usage: "most requests in flight (0: no limit)", Destination: &o.Concurrency},
			&ucli.StringFlag{Name: "request-rate", Value: "inf", Usage: "mean arrivals per second; inf sends every request at once", Destination: &o.RequestRate},
			&ucli.Float64Flag{Name: "burstiness", Value: 1, Usage: "Gamma shape of the arrival gaps: 1 is Poisson, <1 burstier, >1 more regular", Destination: &o.Burstiness},
			&ucli.IntFlag{Name: "warmup", Value: 1, Usage: "unmeasured requests first (the first must succeed)", Destination: &o.Warmup},
			&ucli.IntFlag{Name: "input-len", Value: 256, Usage: "random prompt length in words (about one token each)", Destination: &o.InputLen},
			&ucli.IntFlag{Name: "output-len", Value: 128, Usage: "max tokens per answer (max_completion_tokens)", Destination: &o.OutputLen},
			&ucli.StringFlag{Name: "prompts", Usage: "file of prompts instead of random ones: JSON Lines with \"prompt\", or one per line", Destination: &o.Prompts},
			&ucli.BoolFlag{Name: "ignore-eos", Usage: "ask vLLM for exactly --output-len tokens (vLLM's ignore_eos)", Destination: &o.IgnoreEOS},
			&ucli.IntFlag{Name: "seed", Usage: "seed of the random prompts and arrivals", Destination: &o.Seed},
			&ucli.StringFlag{Name: "slo", Usage: "goodput targets in ms, e.g. ttft=500,tpot=50 (also e2el)", Destination: &o.SLO},
			outputFlag(&o.Output, "table", "table or json"),
		),
		Action: func(c *ucli.Context) error { return a.runBenchServe(c.Context, o) },
	}
}

func (o *benchServeOptions) config() (vllm.BenchConfig, error) {
	cfg := vllm.BenchConfig{Model: o.Model, Requests: o.Requests, MaxConcurrency: o.Concurrency, Burstiness: o.Burstiness,
		Warmup: o.Warmup, InputLen: o.InputLen, OutputLen: o.OutputLen, IgnoreEOS: o.IgnoreEOS, Seed: uint64(o.Seed)}
	switch {
	case o.Requests < 1:
		return cfg, ainerr.Usagef("--requests must be >= 1")
	case o.Concurrency < 0:
		return cfg, ainerr.Usagef("--concurrency must be >= 0 (0: no limit)")
	case o.Burstiness <= 0:
		return cfg, ainerr.Usagef("--burstiness must be > 0")
	case o.Warmup < 0:
		return cfg, ainerr.Usagef("--warmup must be >= 0")
	case o.OutputLen < 1:
		return cfg, ainerr.Usagef("--output-len must be >= 1")
	case o.InputLen < 1 && o.Prompts == "":
		return cfg, ainerr.Usagef("--input-len must be >= 1")
	case o.Output != "table" && o.Output != "json":
		return cfg, ainerr.Usagef("-o %s: use table or json", o.Output)
	}
	if r := strings.ToLower(strings.TrimSpace(o.RequestRate)); r == "inf" || r == "" {
		cfg.RequestRate = math.Inf(1)
	} else {
		v, err := strconv.ParseFloat(r, 64)
		if err != nil || v <= 0 || math.IsNaN(v) {
			return cfg, ainerr.Usagef("--request-rate %q: want requests per second > 0, or inf", o.RequestRate)
		}
		cfg.RequestRate = v
	}
	slo, err := vllm.ParseSLO(o.SLO)
	if err != nil {
		return cfg, ainerr.New(ainerr.Usage, err, "")
	}
	cfg.SLO = slo
	if o.Prompts != "" {
		if cfg.Prompts, err = vllm.LoadPrompts(o.Prompts); err != nil {
			return cfg, ainerr.New(ainerr.Usage, fmt.Errorf("--prompts: %w", err), "")
		}
	}
	return cfg, nil
}

func (a *App) runBenchServe(ctx context.Context, o *benchServeOptions) error {
	cfg, err := o.config()
	if err != nil {
		return err
	}
	conns := o.Concurrency
	if conns == 0 {
		conns = o.Requests
	}
	c, err := a.modelClient(ctx, &o.endpointOptions, conns)
	if err != nil {
		return err
	}
	if cfg.Model, err = c.ResolveModel(ctx, o.Model); err != nil {
		return err
	}
	cfg.Now = a.Now
	if a.Streams.IsTTY && o.Output == "table" {
		cfg.Progress = func(done, failed int) {
			fmt.Fprintf(a.Streams.Err, "\r%d/%d requests done, %d failed", done, cfg.Requests, failed)
			if done == cfg.Requests {
				fmt.Fprintln(a.Streams.Err)
			}
		}
	}
	res, err := c.RunBench(ctx, cfg)
	if err != nil {
		return err
	}
	if o.Output == "json" {
		if err := a.writeJSON(res); err != nil {
			return err
		}
	} else {
		printServeBench(a.Streams.Out, res)
	}
	if res.Completed == 0 {
		return ainerr.Newf(ainerr.Failure, "all %d requests failed", res.Failed)
	}
	return nil
}

// printServeBench prints the result block with vllm bench serve's headings, so figures can be
// compared line by line.
func printServeBench(w io.Writer, r *vllm.BenchResult) {
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
	line("Total token throughput (tok/s):", r.TotalTokenThroughput)
	for _, m := range []struct {
		title, short string
		s            vllm.Stats
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
