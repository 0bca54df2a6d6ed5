// Package servebench is the serving benchmark (`ain bench serve`): a load generator for
// OpenAI-compatible servers that sends requests on vLLM's arrival schedule and reports vLLM's
// metrics (TTFT, TPOT, ITL, E2EL, goodput) in vLLM's result format, with load sweeps.
package servebench

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

	"github.com/ain-hpc/ain/pkg/openaiclient"
	"gonum.org/v1/gonum/stat/distuv"
)

// Config is one serving benchmark (`ain bench serve`), modelled on `vllm bench serve`.
type Config struct {
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
	// Prompts, when set, are used in turn instead of random ones (a prompt file).
	Prompts []string
	// Dataset, when set, are the requests, used in turn, each with its own output length
	// (a ShareGPT file); it takes precedence over Prompts.
	Dataset []Request
	// API is "chat" (/v1/chat/completions, the default) or "completions" (/v1/completions,
	// vllm bench serve's default endpoint). Random prompts on completions are token IDs of
	// exactly InputLen tokens; on chat they are InputLen words (about a token each).
	API string
	// RangeRatio spreads random input and output lengths uniformly over
	// [L*(1-r), L*(1+r)] (vLLM's --random-range-ratio); 0 gives every request exactly L.
	RangeRatio float64
	// PrefixLen tokens (words on chat) of one random prefix shared by every random prompt
	// (vLLM's --random-prefix-len), which prefix caching serves from cache.
	PrefixLen int
	// Percentiles are the percentiles reported besides the median (default 90, 99).
	Percentiles []float64
	Seed        uint64
	SLO         SLO
	// Now is the clock (time.Now by default).
	Now func() time.Time
	// Progress, if set, is called after each measured request ends.
	Progress func(done, failed int)
}

// Request is one request of a dataset.
type Request struct {
	Prompt string
	// PromptIDs, when set, is the prompt as token IDs (/v1/completions only).
	PromptIDs []int
	// PromptLen is the prompt length in tokens when known (else counted by the server).
	PromptLen int
	// OutputLen is this request's max tokens (0: Config.OutputLen).
	OutputLen int
}

// API endpoints of the benchmark.
const (
	APIChat        = "chat"
	APICompletions = "completions"
)

// SLO are goodput targets; a zero field is not checked.
type SLO struct {
	TTFT, TPOT, E2EL time.Duration
}

func (s SLO) set() bool { return s.TTFT > 0 || s.TPOT > 0 || s.E2EL > 0 }

// ParseSLO reads goodput targets in milliseconds: vllm bench serve's "ttft:500 tpot:50"
// (--goodput KEY:VALUE pairs, vllm/benchmarks/serve.py parse_goodput) or "ttft=500,tpot=50";
// any subset of ttft, tpot, e2el.
func ParseSLO(s string) (SLO, error) {
	var slo SLO
	if strings.TrimSpace(s) == "" {
		return slo, nil
	}
	for _, kv := range strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ' ' }) {
		kv = strings.Replace(kv, ":", "=", 1)
		k, v, ok := strings.Cut(strings.TrimSpace(kv), "=")
		ms, err := strconv.ParseFloat(strings.TrimSuffix(v, "ms"), 64)
		if !ok || err != nil || ms <= 0 || math.IsInf(ms, 0) {
			return slo, fmt.Errorf("%q: want ttft:MS tpot:MS e2el:MS (or ttft=MS,...) with positive milliseconds", strings.Replace(kv, "=", ":", 1))
		}
		f := map[string]*time.Duration{"ttft": &slo.TTFT, "tpot": &slo.TPOT, "e2el": &slo.E2EL}[strings.ToLower(k)]
		if f == nil {
			return slo, fmt.Errorf("unknown metric %q (ttft, tpot, e2el)", k)
		}
		*f = time.Duration(ms * float64(time.Millisecond))
	}
	return slo, nil
}

// Result is the outcome, with vLLM's metric definitions:
//   - TTFT: request sent to the first chunk with non-empty choices (vLLM's role-only first
//     chunk counts, as in vllm bench serve; NVIDIA's tools wait for text instead).
//   - ITL: gaps between consecutive chunks with choices, pooled over all requests.
//   - E2EL: request sent to the last chunk before [DONE] (the usage chunk included).
//   - TPOT per request: (E2EL - TTFT) / (output tokens - 1), for requests with > 1 token.
//   - Throughputs and goodput: over the benchmark's duration, first send to last completion.
type Result struct {
	Completed             int      `json:"completed"`
	Failed                int      `json:"failed"`
	DurationS             float64  `json:"durationS"`
	TotalInputTokens      int      `json:"totalInputTokens"`
	TotalOutputTokens     int      `json:"totalOutputTokens"`
	RequestThroughput     float64  `json:"requestThroughput"`
	OutputTokenThroughput float64  `json:"outputTokenThroughput"`
	TotalTokenThroughput  float64  `json:"totalTokenThroughput"`
	RequestGoodput        *float64 `json:"requestGoodput,omitempty"`
	TTFTMs                Stats    `json:"ttftMs"`
	TPOTMs                Stats    `json:"tpotMs"`
	ITLMs                 Stats    `json:"itlMs"`
	E2ELMs                Stats    `json:"e2elMs"`
	// PeakOutputTokensPerS is the most output tokens in one second of the run (vLLM's
	// max_output_tokens_per_s); MaxConcurrentRequests the most requests active in one second
	// of it (vLLM's max_concurrent_requests: requests that follow each other within a second
	// count together); PeakInFlight the most requests in flight at one instant.
	PeakOutputTokensPerS  float64   `json:"peakOutputTokensPerS"`
	MaxConcurrentRequests int       `json:"maxConcurrentRequests"`
	PeakInFlight          int       `json:"peakInFlight"`
	Failures              []Failure `json:"failures,omitempty"`
	Config                Echo      `json:"config"`

	records []reqRecord
	runID   string
	begin   time.Time
	pcts    []float64
	slo     SLO
	started time.Time // wall clock at the start, for vLLM's "date"
}

// requestID is the X-Request-Id of measured request i.
func requestID(runID string, i int) string { return runID + "-" + strconv.Itoa(i) }

// Failure is one reason requests failed, how many, and the first one's index.
type Failure struct {
	Reason string `json:"reason"`
	Count  int    `json:"count"`
	First  int    `json:"firstRequest"`
}

// Echo repeats the settings a result was measured with.
type Echo struct {
	Endpoint       string `json:"endpoint"`
	Model          string `json:"model"`
	Requests       int    `json:"requests"`
	RequestRate    string `json:"requestRate"`
	Burstiness     Shape  `json:"burstiness"`
	MaxConcurrency int    `json:"maxConcurrency"`
	InputLen       int    `json:"inputLen,omitempty"`
	OutputLen      int    `json:"outputLen"`
	Prompts        string `json:"prompts"`
	API            string `json:"api"`
	SLO            string `json:"slo,omitempty"`
	// Path says how the endpoint was reached (ingress, port-forward, endpoint): a
	// port-forward measures one pod through the API server, not the serving path.
	Path string `json:"path,omitempty"`
}

// Shape is a Gamma shape that may be infinite (constant gaps). JSON has no infinity: +Inf is
// written "inf", as an infinite request rate is in vLLM's result JSON.
type Shape float64

// MarshalJSON writes the number, or "inf".
func (s Shape) MarshalJSON() ([]byte, error) {
	if math.IsInf(float64(s), 1) {
		return []byte(`"inf"`), nil
	}
	return json.Marshal(float64(s))
}

// RequestRateValue is RequestRate as a number (+Inf for "inf").
func (e Echo) RequestRateValue() float64 {
	v, err := strconv.ParseFloat(e.RequestRate, 64)
	if err != nil {
		return math.Inf(1)
	}
	return v
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
	queued       time.Duration // waiting for a --max-concurrency slot before being sent
}

// Run runs the benchmark. A failing first warm-up request aborts it with the explained
// error (wrong key, unreachable, model not served); later failures are counted per reason.
func Run(ctx context.Context, c *openaiclient.Client, cfg Config) (*Result, error) {
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
	if cfg.API == "" {
		cfg.API = APIChat
	}
	rng := rand.New(rand.NewPCG(cfg.Seed, 0x61696e))
	// vLLM takes X-Request-Id as its request id: unique per run, so that two benchmarks
	// against one server never collide.
	runID := fmt.Sprintf("ain-bench-%08x", rand.Uint32())
	reqs := benchRequests(cfg, rng)
	bodies := make([][]byte, cfg.Requests)
	outLens := make([]int, cfg.Requests)
	for i := range bodies {
		bodies[i], outLens[i] = benchBody(cfg, reqs[i])
	}
	target := newBenchTarget(c, cfg.API)
	// Warm-up, not measured: the requests one at a time, the first of which must succeed (a
	// wrong key or model stops here, explained; vLLM's "initial test run" does the same, then
	// sends its --num-warmups concurrently); then as many connections as the run keeps in
	// flight are opened, so that no measured TTFT pays a TCP or TLS handshake.
	for i := 0; i < cfg.Warmup; i++ {
		var rec reqRecord
		benchRequest(ctx, c, cfg.Now, target, bodies[i%len(bodies)], runID+"-warmup-"+strconv.Itoa(i), &rec, outLens[i%len(bodies)])
		if !rec.ok && i == 0 {
			return nil, fmt.Errorf("warm-up request failed, nothing measured: %w", rec.err)
		}
	}
	inFlight := cfg.Requests
	if cfg.MaxConcurrency > 0 && cfg.MaxConcurrency < inFlight {
		inFlight = cfg.MaxConcurrency
	}
	warmPool(ctx, c, inFlight)
	if err := ctx.Err(); err != nil {
		return nil, c.Explain(err, "bench")
	}
	offsets := arrivals(cfg.Requests, cfg.RequestRate, cfg.Burstiness, rng)
	recs := make([]reqRecord, cfg.Requests)
	var (
		wg           sync.WaitGroup
		mu           sync.Mutex
		done, failed int
	)
	run := func(i int) {
		benchRequest(ctx, c, cfg.Now, target, bodies[i], requestID(runID, i), &recs[i], outLens[i])
		if cfg.Progress != nil {
			mu.Lock()
			done++
			if !recs[i].ok {
				failed++
			}
			cfg.Progress(done, failed)
			mu.Unlock()
		}
	}
	// Under --max-concurrency, arrivals queue and start in arrival order, as in vLLM's
	// benchmark (an asyncio.Semaphore, whose waiters are woken first come, first served): a
	// fixed pool of workers takes them from one queue in order. Goroutines blocked on a
	// semaphore of their own would start in no particular order.
	type arrival struct {
		i  int
		at time.Time
	}
	var queue chan arrival
	if cfg.MaxConcurrency > 0 {
		queue = make(chan arrival, cfg.Requests)
		for range cfg.MaxConcurrency {
			wg.Go(func() {
				for a := range queue {
					if ctx.Err() != nil {
						recs[a.i].err = ctx.Err()
						continue
					}
					recs[a.i].queued = cfg.Now().Sub(a.at)
					run(a.i)
				}
			})
		}
	}
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
		if queue != nil {
			queue <- arrival{i, cfg.Now()}
			continue
		}
		wg.Go(func() { run(i) })
	}
	if queue != nil {
		close(queue)
	}
	wg.Wait()
	dur := cfg.Now().Sub(begin)
	if err := ctx.Err(); err != nil {
		return nil, c.Explain(err, "bench")
	}
	res := metrics(recs, dur, cfg.SLO, cfg.Percentiles)
	res.runID, res.begin, res.started = runID, begin, time.Now().Add(-dur)
	res.Config = Echo{Endpoint: c.Endpoint(), Model: cfg.Model, Requests: cfg.Requests, RequestRate: "inf",
		Burstiness: Shape(cfg.Burstiness), MaxConcurrency: cfg.MaxConcurrency, InputLen: cfg.InputLen, OutputLen: cfg.OutputLen, Prompts: "random", API: cfg.API}
	if !math.IsInf(cfg.RequestRate, 1) && cfg.RequestRate > 0 {
		res.Config.RequestRate = strconv.FormatFloat(cfg.RequestRate, 'g', -1, 64)
	}
	switch {
	case len(cfg.Dataset) > 0:
		res.Config.Prompts, res.Config.InputLen = "dataset", 0
	case len(cfg.Prompts) > 0:
		res.Config.Prompts, res.Config.InputLen = "file", 0
	case cfg.API == APIChat:
		res.Config.Prompts = "random words"
	default:
		res.Config.Prompts = "random token ids"
	}
	if cfg.SLO.set() {
		res.Config.SLO = cfg.SLO.String()
	}
	return res, nil
}

// arrivals returns when each request is sent, relative to the start, drawn before the run as
// vllm bench serve's get_request does (vllm/benchmarks/serve.py): one Gamma(shape=burstiness,
// scale=1/(rate*burstiness)) delay per request (constant 1/rate for an infinite burstiness), mean 1/rate, accumulated, then rescaled so
// the last request is sent at exactly n/rate ("to close the 1-2% gap ... for stabilizing the
// throughput data from different random seeds"); all at 0 for an infinite or zero rate.
func arrivals(n int, rate, burstiness float64, rng *rand.Rand) []time.Duration {
	offsets := make([]time.Duration, n)
	if math.IsInf(rate, 1) || rate <= 0 || n == 0 {
		return offsets
	}
	if math.IsInf(burstiness, 1) {
		// vLLM: "when burstiness tends to infinity, the delay time becomes constant and tends
		// to the inverse of the request rate" (get_request); the rescaling to n/rate then
		// changes nothing. gonum's Gamma sampler never returns for an infinite shape.
		for i := range offsets {
			offsets[i] = time.Duration(float64(i+1) / rate * float64(time.Second))
		}
		return offsets
	}
	g := distuv.Gamma{Alpha: burstiness, Beta: rate * burstiness, Src: rng}
	cum := make([]float64, n)
	var t float64
	for i := range cum {
		t += g.Rand()
		cum[i] = t
	}
	scale := 1.0
	if t > 0 {
		scale = float64(n) / rate / t
	}
	for i, c := range cum {
		offsets[i] = time.Duration(c * scale * float64(time.Second))
	}
	return offsets
}

// warmPool opens n connections to the server (concurrent GET /v1/models, released together)
// and leaves them idle in the pool for the measured requests.
func warmPool(ctx context.Context, c *openaiclient.Client, n int) {
	if n > c.MaxConns() && c.MaxConns() > 0 {
		n = c.MaxConns()
	}
	if n <= 1 {
		return
	}
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			wctx, wrap, done := c.Watch(ctx)
			defer done()
			req, err := http.NewRequestWithContext(wctx, http.MethodGet, c.Endpoint()+"/models", nil)
			if err != nil {
				return
			}
			c.Authorize(req)
			if resp, err := c.HTTPClient().Do(req); err == nil {
				_, _ = io.Copy(io.Discard, wrap(resp.Body))
				resp.Body.Close()
			}
		}()
	}
	close(start)
	wg.Wait()
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

// benchBody is the request vllm bench serve sends: to /v1/chat/completions a user message
// and max_completion_tokens, to /v1/completions a prompt (text or token IDs) and max_tokens;
// both streamed with include_usage. It returns the body and the request's output length.
func benchBody(cfg Config, r Request) ([]byte, int) {
	out := r.OutputLen
	if out <= 0 {
		out = cfg.OutputLen
	}
	body := map[string]any{
		"model":          cfg.Model,
		"stream":         true,
		"stream_options": map[string]bool{"include_usage": true},
	}
	if cfg.API == APICompletions {
		if len(r.PromptIDs) > 0 {
			body["prompt"] = r.PromptIDs
		} else {
			body["prompt"] = r.Prompt
		}
		body["max_tokens"] = out
	} else {
		body["messages"] = []map[string]string{{"role": "user", "content": r.Prompt}}
		body["max_completion_tokens"] = out
	}
	if cfg.IgnoreEOS {
		body["ignore_eos"] = true
	}
	b, _ := json.Marshal(body)
	return b, out
}

// benchTarget is the URL the benchmark posts to and its name in errors, built once per run
// rather than per request.
type benchTarget struct{ op, url string }

func newBenchTarget(c *openaiclient.Client, api string) benchTarget {
	if api == APICompletions {
		return benchTarget{"POST /v1/completions", c.Endpoint() + "/completions"}
	}
	return benchTarget{"POST /v1/chat/completions", c.Endpoint() + "/chat/completions"}
}

// benchRequest sends one streaming request and records its timings. Only this function
// and the SSE reader run per token; neither allocates per chunk (the ITL slice is sized for
// the expected output up front).
func benchRequest(ctx context.Context, c *openaiclient.Client, now func() time.Time, t benchTarget, body []byte, id string, rec *reqRecord, outputLen int) {
	op := t.op
	wctx, wrap, done := c.Watch(ctx)
	defer done()
	req, err := http.NewRequestWithContext(wctx, http.MethodPost, t.url, bytes.NewReader(body))
	if err != nil {
		rec.err = err
		return
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("X-Request-Id", id)
	c.Authorize(req)
	rec.itl = make([]time.Duration, 0, outputLen+4)
	rec.start = now()
	resp, err := c.HTTPClient().Do(req)
	if err != nil {
		rec.err = c.Explain(openaiclient.Stalled(wctx, err), op)
		return
	}
	resp.Body = wrap(resp.Body)
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		rec.err = c.Explain(openaiclient.StatusError(resp), op)
		return
	}
	if err := openaiclient.CheckEventStream(resp); err != nil {
		rec.err = c.Explain(err, op)
		return
	}
	sse := openaiclient.NewSSEReader(resp.Body, make([]byte, 0, 8<<10), now)
	var last time.Time
	usage, texts, chunksSeen := -1, 0, 0
	for {
		p, at, err := sse.Next()
		if err != nil {
			err = openaiclient.Stalled(wctx, err)
			if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
				err = &openaiclient.StreamCutError{Received: rec.chunks}
			}
			rec.err = c.Explain(err, op)
			return
		}
		if string(p) == "[DONE]" {
			break
		}
		chunksSeen++
		// vLLM's client json.loads every data: line, and a line that is not JSON fails the
		// request (vllm/benchmarks/lib/endpoint_request_func.py): a proxy's text in the
		// stream is not an answer. json.Valid allocates nothing.
		if !json.Valid(p) {
			rec.err = c.Explain(openaiclient.NotJSON(fmt.Sprintf("chunk %d", chunksSeen), p), op)
			return
		}
		ci := classify(p)
		if ci.isError {
			rec.err = c.Explain(&openaiclient.AnswerError{Fault: openaiclient.FaultReported, Detail: openaiclient.ErrorMessage(p)}, op)
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
		rec.err = c.Explain(openaiclient.NoAnswer(chunksSeen), op)
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

// benchWords is the vocabulary of random prompts: common words, about one token each.
var benchWords = strings.Fields(`the of and to in is was for on are with as at be by this have from or
one had not but what all were when we there can an your which their said if do will each about how up
out them then she many some so these would other into has more her two like him see time could no make
than first been its who now people my made over did down only way find use may water long little very
after words called just where most know get through back much go good new write our used me man too
any day same right look think also around another came come work three word must because does part`)

// benchRequests returns the run's requests: the dataset or prompt file in turn, else random
// prompts. A random prompt on /v1/completions is token IDs, so its length in tokens is exact
// without a tokenizer here (vLLM accepts a list of token IDs as the prompt); on chat it is
// words of about one token each (the chat template adds a few). Lengths vary uniformly by
// RangeRatio around InputLen and OutputLen, after PrefixLen shared tokens.
func benchRequests(cfg Config, rng *rand.Rand) []Request {
	out := make([]Request, cfg.Requests)
	switch {
	case len(cfg.Dataset) > 0:
		for i := range out {
			out[i] = cfg.Dataset[i%len(cfg.Dataset)]
		}
		return out
	case len(cfg.Prompts) > 0:
		for i := range out {
			out[i] = Request{Prompt: cfg.Prompts[i%len(cfg.Prompts)]}
		}
		return out
	}
	span := func(l int) int {
		if cfg.RangeRatio <= 0 || l <= 0 {
			return l
		}
		lo, hi := int(math.Floor(float64(l)*(1-cfg.RangeRatio))), int(math.Ceil(float64(l)*(1+cfg.RangeRatio)))
		if lo < 1 {
			lo = 1
		}
		return lo + rng.IntN(hi-lo+1)
	}
	// Token IDs from a range every current vocabulary has (Llama 3 128k, Qwen2.5 151k,
	// Mistral 32k), away from the special tokens at the start.
	const idLo, idHi = 1000, 30000
	prefixIDs := make([]int, cfg.PrefixLen)
	prefixWords := make([]string, cfg.PrefixLen)
	for k := range prefixIDs {
		prefixIDs[k] = idLo + rng.IntN(idHi-idLo)
		prefixWords[k] = benchWords[rng.IntN(len(benchWords))]
	}
	for i := range out {
		in := span(cfg.InputLen)
		r := Request{OutputLen: span(cfg.OutputLen), PromptLen: cfg.PrefixLen + in}
		if cfg.API == APICompletions {
			r.PromptIDs = append(append(make([]int, 0, cfg.PrefixLen+in), prefixIDs...), make([]int, in)...)
			for k := cfg.PrefixLen; k < len(r.PromptIDs); k++ {
				r.PromptIDs[k] = idLo + rng.IntN(idHi-idLo)
			}
		} else {
			words := append(append(make([]string, 0, cfg.PrefixLen+in), prefixWords...), make([]string, in)...)
			for k := cfg.PrefixLen; k < len(words); k++ {
				words[k] = benchWords[rng.IntN(len(benchWords))]
			}
			r.Prompt = strings.Join(words, " ")
		}
		out[i] = r
	}
	return out
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

// LoadShareGPT reads a ShareGPT-format file (a JSON array of {"conversations": [{"from":
// "human", "value": ...}, {"from": "gpt", "value": ...}]}) as vLLM's ShareGPTDataset does:
// the conversations in an order shuffled by seed (vLLM shuffles with Python's random.seed;
// ain's order is its own, reproducible for a seed), each one's first turn a prompt and the
// second turn's length that request's output length unless outputLen > 0 overrides it, and
// vLLM's length filter (vllm/benchmarks/datasets is_valid_sequence: a prompt or reply under 4
// tokens, a prompt over 1024, or both over 2048 are skipped; the reply's minimum only when
// outputLen is not given). Lengths are estimated at 4 characters a token: ain has no tokenizer,
// where vLLM counts with the model's. skipped counts the conversations the filter left out
// (one-turn and blank-prompt ones are not counted).
func LoadShareGPT(path string, outputLen int, seed uint64) (reqs []Request, skipped int, err error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, 0, err
	}
	var convs []struct {
		Conversations []struct {
			From  string `json:"from"`
			Value string `json:"value"`
		} `json:"conversations"`
	}
	if err := json.Unmarshal(b, &convs); err != nil {
		// Where and what, not the decoder's Go type dump.
		var se *json.SyntaxError
		var te *json.UnmarshalTypeError
		switch {
		case errors.As(err, &se):
			err = fmt.Errorf("line %d: %v", 1+bytes.Count(b[:se.Offset], []byte("\n")), se)
		case errors.As(err, &te):
			where := "the top level"
			if te.Field != "" {
				where = strings.TrimPrefix(te.Field, ".")
			}
			err = fmt.Errorf("line %d: %s is a JSON %s", 1+bytes.Count(b[:min(int(te.Offset), len(b))], []byte("\n")), where, te.Value)
		}
		return nil, 0, fmt.Errorf("%s: not a ShareGPT file (a JSON array of {\"conversations\": [{\"from\": \"human\", \"value\": ...}, ...]}): %v", path, err)
	}
	rng := rand.New(rand.NewPCG(seed, 0x73686172))
	rng.Shuffle(len(convs), func(i, j int) { convs[i], convs[j] = convs[j], convs[i] })
	estimate := func(s string) int { return (len(s) + 3) / 4 }
	for _, c := range convs {
		if len(c.Conversations) < 2 || strings.TrimSpace(c.Conversations[0].Value) == "" {
			continue
		}
		in, ol := estimate(c.Conversations[0].Value), outputLen
		if ol <= 0 {
			ol = estimate(c.Conversations[1].Value)
		}
		if in < shareGPTMinLen || (outputLen <= 0 && ol < shareGPTMinLen) || in > shareGPTMaxPrompt || in+ol > shareGPTMaxTotal {
			skipped++
			continue
		}
		reqs = append(reqs, Request{Prompt: c.Conversations[0].Value, OutputLen: ol})
	}
	if len(reqs) == 0 {
		return nil, skipped, fmt.Errorf("%s: no conversation with a prompt and a reply within vLLM's length filter (%d skipped: prompt and reply of %d to %d tokens, %d in all)",
			path, skipped, shareGPTMinLen, shareGPTMaxPrompt, shareGPTMaxTotal)
	}
	return reqs, skipped, nil
}

// vLLM's is_valid_sequence defaults for ShareGPT (min_len, max_prompt_len, max_total_len).
const (
	shareGPTMinLen    = 4
	shareGPTMaxPrompt = 1024
	shareGPTMaxTotal  = 2048
)
