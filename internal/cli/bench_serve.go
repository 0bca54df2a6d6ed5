package cli

import (
	"context"
	"errors"
	"fmt"
	"strings"

	ucli "github.com/urfave/cli/v2"

	"github.com/ain-hpc/ain/internal/ainerr"
	"github.com/ain-hpc/ain/pkg/servebench"
)

type benchServeOptions struct {
	endpointOptions
	servebench.Options
	Goodput ucli.StringSlice
	SLO     string
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
				Action: func(*ucli.Context, int) error { o.OutputLenSet = true; return nil }},
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

func (a *App) runBenchServe(ctx context.Context, o *benchServeOptions) error {
	o.Options.Goodput = strings.Join(append(o.Goodput.Value(), o.SLO), " ")
	plan, err := o.Plan()
	if err != nil {
		return benchServeError(err)
	}
	for _, n := range plan.Notes {
		fmt.Fprintln(a.Streams.Err, n)
	}
	c, err := a.modelClient(ctx, &o.endpointOptions, plan.Conns())
	if err != nil {
		return err
	}
	if o.via == "port-forward" {
		fmt.Fprintln(a.Streams.Err, "MEASURING THROUGH A PORT-FORWARD: one pod, through the API server's SPDY tunnel; the figures include that tunnel and leave out the ingress and the Service's balancing. Use the ingress for serving figures.")
	}
	model, err := c.ResolveModel(ctx, o.Model)
	if err != nil {
		return err
	}
	ro := servebench.RunOptions{Via: o.via, Now: a.Now, Wrote: func(file, what string) { fmt.Fprintf(a.Streams.Err, "wrote %s%s\n", file, what) }}
	if a.Streams.IsTTY && o.Output == "table" {
		ro.Progress = servebench.TerminalProgress(a.Streams.Err)
	}
	points, err := plan.Run(ctx, c, model, ro)
	if err != nil {
		return err
	}
	switch {
	case o.Output != "table":
		if err := a.writeJSON(plan.Output(points)); err != nil {
			return err
		}
	case !plan.Sweeping():
		points[0].Result.WriteText(a.Streams.Out)
	default:
		servebench.WriteSweep(a.Streams.Out, points, a.table)
	}
	return benchServeError(plan.Finish(points, ro))
}

// benchServeError maps servebench's typed errors to exit codes.
func benchServeError(err error) error {
	var oe *servebench.OptionError
	var af *servebench.AllFailedError
	switch {
	case errors.As(err, &oe):
		return ainerr.New(ainerr.Usage, err, oe.Hint)
	case errors.As(err, &af):
		return ainerr.New(ainerr.Failure, err, "")
	}
	return err
}
