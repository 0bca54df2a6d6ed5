package servebench

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Options are a benchmark as `ain bench serve` is asked for it, before validation: each field
// is the flag of that name, which OptionError names.
type Options struct {
	Model string
	// Requests are the measured requests of each sweep point.
	Requests int
	// Concurrency and RequestRate are comma-separated settings; a list sweeps.
	Concurrency, RequestRate string
	Burstiness               float64
	Warmup                   int
	InputLen, OutputLen      int
	// OutputLenSet: OutputLen was given (with sharegpt it then overrides the replies' lengths,
	// even at its default value).
	OutputLenSet bool
	// Prompts is a prompt file: shorthand for Dataset "prompts" with DatasetPath.
	Prompts              string
	Dataset, DatasetPath string
	API                  string
	RangeRatio           float64
	PrefixLen            int
	IgnoreEOS            bool
	Seed                 int
	// Goodput are the goodput targets in vLLM's syntax (ParseSLO).
	Goodput string
	// Percentiles is a comma-separated list of the percentiles the result JSON reports.
	Percentiles string
	// SaveResult is the file of vLLM's result JSON (a sweep writes one per point); Label its
	// label; Plot the .png or .svg of a sweep.
	SaveResult, Label, Plot string
	// Output is table, json or vllm-json.
	Output string
}

// OptionError is an option (Flag, as `ain bench serve` names it) with a bad value.
type OptionError struct {
	Flag   string
	Reason string
	// Hint, when set, shows a right value.
	Hint string
}

func (e *OptionError) Error() string {
	if e.Flag == "" {
		return e.Reason
	}
	return "--" + e.Flag + " " + e.Reason
}

func optionErr(flag, format string, args ...any) error {
	return &OptionError{Flag: flag, Reason: fmt.Sprintf(format, args...)}
}

// Plan is a validated benchmark: the Config of every point, the settings swept and what the
// user should know before it runs.
type Plan struct {
	Options
	Config        Config
	Rates         []float64
	Concurrencies []float64
	// Notes are remarks on the prompts (a length filter's losses, repeats that prefix caching
	// serves, what random chat prompts are).
	Notes []string
}

// Sweeping says whether more than one setting runs.
func (p *Plan) Sweeping() bool { return len(p.Rates) > 1 || len(p.Concurrencies) > 1 }

// ConcurrencySweep says whether the sweep is over the concurrency (else over the rate).
func (p *Plan) ConcurrencySweep() bool { return len(p.Concurrencies) > 1 }

// Conns is how many connections the run keeps in flight at most.
func (p *Plan) Conns() int {
	conns := 0
	for _, c := range p.Concurrencies {
		conns = max(conns, int(c))
	}
	if conns == 0 {
		conns = p.Requests
	}
	return conns
}

// Plan validates o into a Plan, loading its dataset. Bad values are an OptionError.
func (o Options) Plan() (*Plan, error) {
	cfg, skipped, err := o.config()
	if err != nil {
		return nil, err
	}
	p := &Plan{Options: o, Config: cfg}
	if p.Rates, err = sweepList("request-rate", o.RequestRate, true); err != nil {
		return nil, err
	}
	if p.Concurrencies, err = sweepList("concurrency", o.Concurrency, false); err != nil {
		return nil, err
	}
	if len(p.Rates) > 1 && len(p.Concurrencies) > 1 {
		return nil, optionErr("", "sweep either --request-rate or --concurrency, not both")
	}
	if o.Plot != "" && !p.Sweeping() {
		return nil, optionErr("plot", "draws a sweep: give a list in --request-rate or --concurrency")
	}
	if ext := strings.ToLower(plotFormat(o.Plot)); o.Plot != "" && ext != "png" && ext != "svg" {
		// Checked before the sweep runs, not after minutes of load.
		return nil, optionErr("plot", "%s: name a .png or .svg file", o.Plot)
	}
	if skipped > 0 {
		p.Notes = append(p.Notes, fmt.Sprintf("sharegpt: %d conversation(s) kept, %d left out by vLLM's length filter (prompt and reply of 4-1024 tokens, 2048 in all; lengths estimated at 4 characters a token, without the model's tokenizer)", len(cfg.Dataset), skipped))
	}
	if n := len(cfg.Prompts); n > 0 && n < cfg.Requests {
		p.Notes = append(p.Notes, fmt.Sprintf("note: %d prompts for %d requests: repeats are served from vLLM's prefix cache (automatic prefix caching is on by default), which lowers TTFT; use more prompts, or the random dataset", n, cfg.Requests))
	}
	if cfg.API == APIChat && len(cfg.Prompts) == 0 && len(cfg.Dataset) == 0 {
		p.Notes = append(p.Notes, "note: random chat prompts are words, about one token each (plus the chat template); --api completions sends exact token counts")
	}
	return p, nil
}

// config checks the settings shared by every point and loads the dataset; skipped counts the
// conversations vLLM's length filter left out.
func (o Options) config() (cfg Config, skipped int, err error) {
	cfg = Config{Model: o.Model, Requests: o.Requests, Burstiness: o.Burstiness, Warmup: o.Warmup, InputLen: o.InputLen,
		OutputLen: o.OutputLen, IgnoreEOS: o.IgnoreEOS, Seed: uint64(o.Seed), API: o.API, RangeRatio: o.RangeRatio, PrefixLen: o.PrefixLen}
	switch {
	case o.Requests < 1:
		return cfg, 0, optionErr("requests", "must be >= 1")
	case !(o.Burstiness > 0): // NaN too
		return cfg, 0, optionErr("burstiness", "%g: want a number > 0, or inf", o.Burstiness)
	case o.Warmup < 0:
		return cfg, 0, optionErr("warmup", "must be >= 0")
	case o.OutputLen < 1:
		return cfg, 0, optionErr("output-len", "must be >= 1")
	case o.InputLen < 1:
		return cfg, 0, optionErr("input-len", "must be >= 1")
	case o.RangeRatio < 0 || o.RangeRatio >= 1:
		return cfg, 0, optionErr("random-range-ratio", "%g: want 0 <= r < 1", o.RangeRatio)
	case o.PrefixLen < 0:
		return cfg, 0, optionErr("random-prefix-len", "must be >= 0")
	case o.API != APIChat && o.API != APICompletions:
		return cfg, 0, optionErr("api", "%s: use chat or completions", o.API)
	case o.Output != "table" && o.Output != "json" && o.Output != "vllm-json":
		return cfg, 0, &OptionError{Reason: fmt.Sprintf("-o %s: use table, json or vllm-json", o.Output)}
	}
	if cfg.SLO, err = ParseSLO(strings.TrimSpace(o.Goodput)); err != nil {
		return cfg, 0, &OptionError{Reason: fmt.Sprintf("--goodput: %v", err), Hint: "e.g. --goodput ttft:500 --goodput tpot:50 (milliseconds; ttft, tpot, e2el)"}
	}
	for _, p := range strings.Split(o.Percentiles, ",") {
		v, err := strconv.ParseFloat(strings.TrimSpace(p), 64)
		if err != nil || v <= 0 || v >= 100 {
			return cfg, 0, optionErr("metric-percentiles", "%q: want percentiles between 0 and 100, e.g. 50,90,99", o.Percentiles)
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
			return cfg, 0, optionErr("dataset-path", "goes with --dataset-name sharegpt or prompts, not random")
		}
	case "sharegpt", "prompts":
		if path == "" {
			return cfg, 0, optionErr("dataset-name", "%s needs --dataset-path FILE", name)
		}
		if name == "sharegpt" {
			out := 0
			if o.OutputLenSet {
				out = o.OutputLen // set explicitly: it overrides the replies' lengths
			}
			if cfg.Dataset, skipped, err = LoadShareGPT(path, out, uint64(o.Seed)); err != nil {
				return cfg, 0, &OptionError{Reason: fmt.Sprintf("%s: %v", pathFlag, err)}
			}
		} else if cfg.Prompts, err = LoadPrompts(path); err != nil {
			return cfg, 0, &OptionError{Reason: fmt.Sprintf("%s: %v", pathFlag, err)}
		}
	default:
		return cfg, 0, optionErr("dataset-name", "%s: use random, sharegpt or prompts", name)
	}
	return cfg, skipped, nil
}

// sweepList parses a comma-separated list of settings ("inf" allowed for rates).
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
				return nil, optionErr(flag, "%q: want %s (a comma-separated list sweeps)", s, want)
			}
			if !inf && v != math.Trunc(v) {
				return nil, optionErr(flag, "%q: want whole numbers", s)
			}
			out = append(out, v)
		}
	}
	return out, nil
}
