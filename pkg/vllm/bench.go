package vllm

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"net/http"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"gonum.org/v1/gonum/stat/distuv"
)

// BenchConfig is one serving benchmark (`ain bench serve`), modelled on `vllm bench serve`.
type BenchConfig struct {
	Model    string
	Requests int // number of measured requests
	// RequestRate is the mean arrival rate (requests/s); +Inf (or 0) sends all at t=0.
	RequestRate float64
	// Burstiness is the Gamma shape of the inter-arrival times; 1 is a Poisson process,
	// lower is burstier, higher more regular.
	Burstiness float64
	// MaxConcurrency caps requests in flight (0: no cap); arrivals wait for a slot, and a
	// request's clock starts when it is sent, as in vLLM.
	MaxConcurrency int
	// Warmup requests run one at a time before measuring; the first must succeed.
	Warmup int
	// InputLen is the prompt length in words of random prompts (about one token each).
	InputLen int
	// OutputLen is max_tokens (vLLM's max_completion_tokens).
	OutputLen int
	// IgnoreEOS asks vLLM to generate exactly OutputLen tokens.
	IgnoreEOS bool
	// Prompts, when set, are used in turn instead of random ones.
	Prompts []string
	Seed    uint64
	SLO     SLO
	// Now is the clock (time.Now by default).
	Now func() time.Time
	// Progress, if set, is called after each measured request ends.
	Progress func(done, failed int)
}

// SLO are goodput targets; a zero field is not checked.
type SLO struct {
	TTFT, TPOT, E2EL time.Duration
}

func (s SLO) set() bool { return s.TTFT > 0 || s.TPOT > 0 || s.E2EL > 0 }

// ParseSLO reads "ttft=MS,tpot=MS,e2el=MS" (any subset, milliseconds).
func ParseSLO(s string) (SLO, error) {
	var slo SLO
	if strings.TrimSpace(s) == "" {
		return slo, nil
	}
	for _, kv := range strings.Split(s, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(kv), "=")
		ms, err := strconv.ParseFloat(strings.TrimSuffix(v, "ms"), 64)
		if !ok || err != nil || ms <= 0 {
			return slo, fmt.Errorf("--slo %q: want ttft=MS,tpot=MS,e2el=MS with positive milliseconds", s)
		}
		d := time.Duration(ms * float64(time.Millisecond))
		switch strings.ToLower(k) {
		case "ttft":
			slo.TTFT = d
		case "tpot":
			slo.TPOT = d
		case "e2el":
			slo.E2EL = d
		default:
			return slo, fmt.Errorf("--slo: unknown metric %q (ttft, tpot, e2el)", k)
		}
	}
	return slo, nil
}

// BenchResult is the outcome, with vLLM's metric definitions:
//   - TTFT: request sent to the first chunk with non-empty choices (vLLM's role-only first
//     chunk counts, as in vllm bench serve; NVIDIA's tools wait for text instead).
//   - ITL: gaps between consecutive chunks with choices, pooled over all requests.
//   - E2EL: request sent to the last chunk before [DONE] (the usage chunk included).
//   - TPOT per request: (E2EL - TTFT) / (output tokens - 1), for requests with > 1 token.
//   - Throughputs and goodput: over the benchmark's duration, first send to last completion.
type BenchResult struct {
	Completed             int       `json:"completed"`
	Failed                int       `json:"failed"`
	DurationS             float64   `json:"durationS"`
	TotalInputTokens      int       `json:"totalInputTokens"`
	TotalOutputTokens     int       `json:"totalOutputTokens"`
	RequestThroughput     float64   `json:"requestThroughput"`
	OutputTokenThroughput float64   `json:"outputTokenThroughput"`
	TotalTokenThroughput  float64   `json:"totalTokenThroughput"`
	RequestGoodput        *float64  `json:"requestGoodput,omitempty"`
	TTFTMs                Stats     `json:"ttftMs"`
	TPOTMs                Stats     `json:"tpotMs"`
	ITLMs                 Stats     `json:"itlMs"`
	E2ELMs                Stats     `json:"e2elMs"`
	Failures              []Failure `json:"failures,omitempty"`
	Config                BenchEcho `json:"config"`

	records []reqRecord
	runID   string
}

// requestID is the X-Request-Id of measured request i.
func requestID(runID string, i int) string { return runID + "-" + strconv.Itoa(i) }

// Failure is one reason requests failed, how many, and the first one's index.
type Failure struct {
	Reason string `json:"reason"`
	Count  int    `json:"count"`
	First  int    `json:"firstRequest"`
}

// BenchEcho repeats the settings a result was measured with.
type BenchEcho struct {
	Endpoint       string  `json:"endpoint"`
	Model          string  `json:"model"`
	Requests       int     `json:"requests"`
	RequestRate    string  `json:"requestRate"`
	Burstiness     float64 `json:"burstiness"`
	MaxConcurrency int     `json:"maxConcurrency"`
	InputLen       int     `json:"inputLen,omitempty"`
	OutputLen      int     `json:"outputLen"`
	Prompts        string  `json:"prompts"`
	SLO            string  `json:"slo,omitempty"`
}

// reqRecord is one request's measurements, filled on the hot path.
type reqRecord struct {
	start        time.Time
	ok           bool
	err          error
	ttft         time.Duration
	latency      time.Duration
	itl          []time.Duration
	outputTokens int // from usage; else one per chunk with choices after the role chunk
	promptTokens int
	chunks       int
}

// RunBench runs the benchmark. A failing first warm-up request aborts it with the explained
// error (wrong key, unreachable, model not served); later failures are counted per reason.
func (c *Client) RunBench(ctx context.Context, cfg BenchConfig) (*BenchResult, error) {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Requests <= 0 {
		return nil, errors.New("bench: --requests must be >= 1")
	}
	if cfg.Burstiness <= 0 {
		cfg.Burstiness = 1
	}
	if cfg.OutputLen <= 0 {
		cfg.OutputLen = 128
	}
	if cfg.InputLen <= 0 && len(cfg.Prompts) == 0 {
		cfg.InputLen = 256
	}
	rng := rand.New(rand.NewPCG(cfg.Seed, 0x61696e))
	// vLLM takes X-Request-Id as its request id: unique per run, so that two benchmarks
	// against one server never collide.
	runID := fmt.Sprintf("ain-bench-%08x", rand.Uint32())
	bodies := make([][]byte, cfg.Requests)
	for i := range bodies {
		bodies[i] = c.benchBody(cfg, benchPrompt(cfg, i, rng))
	}
	for i := 0; i < cfg.Warmup; i++ {
		var rec reqRecord
		c.benchRequest(ctx, cfg.Now, bodies[i%len(bodies)], runID+"-warmup-"+strconv.Itoa(i), &rec, cfg.OutputLen)
		if !rec.ok && i == 0 {
			return nil, fmt.Errorf("warm-up request failed, nothing measured: %w", rec.err)
		}
	}
	if err := ctx.Err(); err != nil {
		return nil, c.explain(err, "bench")
	}
	offsets := arrivals(cfg.Requests, cfg.RequestRate, cfg.Burstiness, rng)
	recs := make([]reqRecord, cfg.Requests)
	var sem chan struct{}
	if cfg.MaxConcurrency > 0 {
		sem = make(chan struct{}, cfg.MaxConcurrency)
	}
	var (
		wg           sync.WaitGroup
		mu           sync.Mutex
		done, failed int
	)
	begin := cfg.Now()
	for i := range recs {
		if d := offsets[i] - cfg.Now().Sub(begin); d > 0 {
			t := time.NewTimer(d)
			select {
			case <-t.C:
			case <-ctx.Done():
				t.Stop()
			}
		}
		if ctx.Err() != nil {
			break
		}
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			if sem != nil {
				select {
				case sem <- struct{}{}:
					defer func() { <-sem }()
				case <-ctx.Done():
					recs[i].err = ctx.Err()
					return
				}
			}
			c.benchRequest(ctx, cfg.Now, bodies[i], requestID(runID, i), &recs[i], cfg.OutputLen)
			if cfg.Progress != nil {
				mu.Lock()
				done++
				if !recs[i].ok {
					failed++
				}
				cfg.Progress(done, failed)
				mu.Unlock()
			}
		}(i)
	}
	wg.Wait()
	dur := cfg.Now().Sub(begin)
	if err := ctx.Err(); err != nil {
		return nil, c.explain(err, "bench")
	}
	res := c.metrics(recs, dur, cfg.SLO)
	res.runID = runID
	res.Config = BenchEcho{Endpoint: c.Endpoint(), Model: cfg.Model, Requests: cfg.Requests, RequestRate: "inf",
		Burstiness: cfg.Burstiness, MaxConcurrency: cfg.MaxConcurrency, InputLen: cfg.InputLen, OutputLen: cfg.OutputLen, Prompts: "random"}
	if !math.IsInf(cfg.RequestRate, 1) && cfg.RequestRate > 0 {
		res.Config.RequestRate = strconv.FormatFloat(cfg.RequestRate, 'g', -1, 64)
	}
	if len(cfg.Prompts) > 0 {
		res.Config.Prompts, res.Config.InputLen = "file", 0
	}
	if cfg.SLO.set() {
		res.Config.SLO = cfg.SLO.String()
	}
	return res, nil
}

// arrivals returns when each request is sent, relative to the start, drawn before the run:
// Gamma(shape=burstiness, rate=rate*burstiness) gaps with mean 1/rate and the first request
// at t=0 (vllm bench serve's get_request); all at 0 for an infinite or zero rate.
func arrivals(n int, rate, burstiness float64, rng *rand.Rand) []time.Duration {
	offsets := make([]time.Duration, n)
	if math.IsInf(rate, 1) || rate <= 0 {
		return offsets
	}
	g := distuv.Gamma{Alpha: burstiness, Beta: rate * burstiness, Src: rng}
	var t float64
	for i := 1; i < n; i++ {
		t += g.Rand()
		offsets[i] = time.Duration(t * float64(time.Second))
	}
	return offsets
}

func (s SLO) String() string {
	var parts []string
	for _, p := range []struct {
		k string
		d time.Duration
	}{{"ttft", s.TTFT}, {"tpot", s.TPOT}, {"e2el", s.E2EL}} {
		if p.d > 0 {
			parts = append(parts, fmt.Sprintf("%s=%gms", p.k, float64(p.d)/float64(time.Millisecond)))
		}
	}
	return strings.Join(parts, ",")
}

// benchBody is the request vllm bench serve sends to /v1/chat/completions.
func (c *Client) benchBody(cfg BenchConfig, prompt string) []byte {
	body := map[string]any{
		"model":                 cfg.Model,
		"messages":              []map[string]string{{"role": "user", "content": prompt}},
		"max_completion_tokens": cfg.OutputLen,
		"stream":                true,
		"stream_options":        map[string]bool{"include_usage": true},
	}
	if cfg.IgnoreEOS {
		body["ignore_eos"] = true
	}
	b, _ := json.Marshal(body)
	return b
}

// benchRequest sends one streaming request and records its timings. Only this function
// and the SSE reader run per token; neither allocates per chunk (the ITL slice is sized for
// the expected output up front).
func (c *Client) benchRequest(ctx context.Context, now func() time.Time, body []byte, id string, rec *reqRecord, outputLen int) {
	const op = "POST /v1/chat/completions"
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.base.String()+"/chat/completions", bytes.NewReader(body))
	if err != nil {
		rec.err = err
		return
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("X-Request-Id", id)
	c.authorize(req)
	rec.itl = make([]time.Duration, 0, outputLen+4)
	rec.start = now()
	resp, err := c.http.Do(req)
	if err != nil {
		rec.err = c.explain(err, op)
		return
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		rec.err = c.explain(statusError(resp), op)
		return
	}
	sse := newSSEReader(resp.Body, make([]byte, 0, 8<<10), now)
	var last time.Time
	usage, texts := -1, 0
	for {
		p, at, err := sse.next()
		if err != nil {
			if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
				err = &StreamCutError{Received: rec.chunks}
			}
			rec.err = c.explain(err, op)
			return
		}
		if string(p) == "[DONE]" {
			break
		}
		ci := classify(p)
		if ci.isError {
			rec.err = fmt.Errorf("%s: error in the stream: %s", op, errorMessage(p))
			return
		}
		if ci.choices {
			if rec.chunks == 0 {
				rec.ttft = at.Sub(rec.start)
			} else {
				rec.itl = append(rec.itl, at.Sub(last))
			}
			rec.chunks++
			if ci.text {
				texts++
			}
		}
		last = at
		if ci.usage >= 0 {
			usage = ci.usage
		}
		if ci.prompt >= 0 {
			rec.promptTokens = ci.prompt
		}
	}
	if rec.chunks == 0 {
		rec.err = fmt.Errorf("%s: the stream carried no choices", op)
		return
	}
	rec.latency = last.Sub(rec.start)
	rec.outputTokens = usage
	if usage < 0 {
		// No usage block (a server ignoring include_usage): one token per chunk with text.
		rec.outputTokens = texts
	}
	rec.ok = true
}

// metrics computes vLLM's figures from the records.
func (c *Client) metrics(recs []reqRecord, dur time.Duration, slo SLO) *BenchResult {
	res := &BenchResult{DurationS: dur.Seconds(), records: recs}
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
	res.TTFTMs, res.TPOTMs, res.ITLMs, res.E2ELMs = summarize(ttfts), summarize(tpots), summarize(itls), summarize(e2els)
	for _, f := range byReason {
		res.Failures = append(res.Failures, *f)
	}
	sort.Slice(res.Failures, func(i, j int) bool { return res.Failures[i].Count > res.Failures[j].Count })
	return res
}

// benchWords is the vocabulary of random prompts: common words, about one token each.
var benchWords = strings.Fields(`the of and to in is was for on are with as at be by this have from or
one had not but what all were when we there can an your which their said if do will each about how up
out them then she many some so these would other into has more her two like him see time could no make
than first been its who now people my made over did down only way find use may water long little very
after words called just where most know get through back much go good new write our used me man too
any day same right look think also around another came come work three word must because does part`)

// benchPrompt returns prompt i: from the file list in turn, else InputLen random words.
func benchPrompt(cfg BenchConfig, i int, rng *rand.Rand) string {
	if len(cfg.Prompts) > 0 {
		return cfg.Prompts[i%len(cfg.Prompts)]
	}
	var b strings.Builder
	for k := 0; k < cfg.InputLen; k++ {
		if k > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(benchWords[rng.IntN(len(benchWords))])
	}
	return b.String()
}

// LoadPrompts reads prompts from a file: JSON Lines with a "prompt" (or "text") field, or
// else one prompt per non-empty line.
func LoadPrompts(path string) ([]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" {
			continue
		}
		if strings.HasPrefix(line, "{") {
			var obj struct {
				Prompt string `json:"prompt"`
				Text   string `json:"text"`
			}
			if err := json.Unmarshal([]byte(line), &obj); err != nil {
				return nil, fmt.Errorf("%s:%d: %v", path, n, err)
			}
			if obj.Prompt == "" {
				obj.Prompt = obj.Text
			}
			if obj.Prompt == "" {
				return nil, fmt.Errorf("%s:%d: no \"prompt\" field", path, n)
			}
			out = append(out, obj.Prompt)
			continue
		}
		out = append(out, line)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %v", path, err)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s: no prompts", path)
	}
	return out, nil
}
