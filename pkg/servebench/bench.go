// Package servebench is the serving benchmark (`ain bench serve`): a load generator for
// OpenAI-compatible servers that sends requests on vLLM's arrival schedule and reports vLLM's
// metrics (TTFT, TPOT, ITL, E2EL, goodput) in vLLM's result format, with load sweeps.
package servebench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"net/http"
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
