package servebench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"sort"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/ain-hpc/ain/pkg/openaiclient"
	openai "github.com/sashabaranov/go-openai"
)

// BenchmarkTimingAinVsBareLoop measures, side by side in one run against one simulated server
// with a known schedule (a child process flushing a token every 20 ms after a 50 ms first
// token, recording when it flushed each chunk), how far the timestamps of two clients are from
// the server's: ain's benchmark (Run) and a bare go-openai streaming loop with a warm
// connection pool (one goroutine per stream, Recv until EOF, time.Now() per chunk). For each
// client and 16, 256 and 1024 concurrent streams it reports
//
//   - TTFT error: client time of the first chunk minus the server's flush time (median, p99);
//
//   - ITL error: |client gap - server gap| between consecutive chunks (median, p99).
//
//     go test ./pkg/servebench -run '^$' -bench TimingAinVsBareLoop -benchtime 1x
//
// scripts/bench-ttft.sh runs one stream count many times and prints the medians and ain's p99
// TTFT error over the bare loop's (ain runs under the bounds bench serve sets by default).
//
// Measured 2026-12-03 on the shared 2-core development machine (load average 6-10 from other
// agents' builds; three runs each, which client goes first alternates; the server is warmed
// by an unmeasured pass first). Ranges over the three runs, in ms:
//
//	streams  client   TTFT err p50   TTFT err p99   ITL err p50    ITL err p99
//	16       ain      0.06-0.64      0.21-1.2       0.06-0.14      0.45-6.0
//	16       bare     0.47-0.82      0.87-1.2       0.09-0.11      0.62-1.3
//	256      ain      0.35-8.3       2.4-30         0.05-0.36      2.6-21
//	256      bare     0.39-12        2.1-91         0.004-1.2      2.1-88
//	1024     ain      1.1-2.6        7.3-94         0.90-0.99      8.7-49
//	1024     bare     1.6-20         12-50          1.1-4.1        20-51
//
// ain's errors are no worse than the bare loop's in these runs; both grow with the machine's
// load, which dominates at 256 and 1024 streams on two shared cores.
//
// 2026-12-05, 256 streams, scripts/bench-ttft.sh 10 (ten runs an invocation; load average
// 2-14 from other work), ain's p99 TTFT error over the bare loop's, median of each invocation's
// per-run ratios: 0.42-1.83 (median 1.02 over seven invocations) when ain allocated each
// stream's 8 KiB read buffer after the response came and stamped a chunk when the body's Read
// returned; 0.42-0.81 (median 0.66 over six) with the buffer allocated before sending (no
// garbage collection started in the burst of first chunks) and chunks stamped with when their
// bytes arrived on the connection (openaiclient's arrival.go).
func BenchmarkTimingAinVsBareLoop(b *testing.B) {
	const tokens = 32
	for _, streams := range []int{16, 256, 1024} {
		b.Run(fmt.Sprintf("streams=%d", streams), func(b *testing.B) {
			url, stop := childServer(b, 50*time.Millisecond, 20*time.Millisecond)
			defer stop()
			// A fresh server process is slower on its first requests (goroutine stacks,
			// buffers, the GC's first cycles): a short unmeasured pass warms it for both.
			_, _ = ainTimingErrors(b, url, streams, 4)
			for i := range b.N {
				// Alternate which client goes first, so a change in the machine's load (it is
				// shared) does not always fall on the same one.
				var ainTTFT, ainITL, bareTTFT, bareITL []float64
				if (i+timingRuns)%2 == 0 {
					ainTTFT, ainITL = ainTimingErrors(b, url, streams, tokens)
					bareTTFT, bareITL = bareLoopTimingErrors(b, url, streams, tokens)
				} else {
					bareTTFT, bareITL = bareLoopTimingErrors(b, url, streams, tokens)
					ainTTFT, ainITL = ainTimingErrors(b, url, streams, tokens)
				}
				timingRuns++
				us := func(xs []float64, p float64) float64 { return percentile(xs, p) * 1e6 }
				b.ReportMetric(us(ainTTFT, 50), "ain-ttft-err-p50-µs")
				b.ReportMetric(us(ainTTFT, 99), "ain-ttft-err-p99-µs")
				b.ReportMetric(us(ainITL, 50), "ain-itl-err-p50-µs")
				b.ReportMetric(us(ainITL, 99), "ain-itl-err-p99-µs")
				b.ReportMetric(us(bareTTFT, 50), "bare-ttft-err-p50-µs")
				b.ReportMetric(us(bareTTFT, 99), "bare-ttft-err-p99-µs")
				b.ReportMetric(us(bareITL, 50), "bare-itl-err-p50-µs")
				b.ReportMetric(us(bareITL, 99), "bare-itl-err-p99-µs")
				b.Logf("streams=%d  ain: TTFT err p50 %.0f µs p99 %.0f µs, ITL err p50 %.0f µs p99 %.0f µs | bare go-openai: TTFT err p50 %.0f µs p99 %.0f µs, ITL err p50 %.0f µs p99 %.0f µs",
					streams, us(ainTTFT, 50), us(ainTTFT, 99), us(ainITL, 50), us(ainITL, 99),
					us(bareTTFT, 50), us(bareTTFT, 99), us(bareITL, 50), us(bareITL, 99))
			}
		})
	}
}

var timingRuns int

// serverTimes reads the flush times (Unix ns) the child server recorded for a request.
func serverTimes(tb testing.TB, hc *http.Client, url, id string) []int64 {
	resp, err := hc.Get(url + "/debug/chunk-times?id=" + id)
	if err != nil {
		tb.Fatal(err)
	}
	defer resp.Body.Close()
	var sent []int64
	if err := json.NewDecoder(resp.Body).Decode(&sent); err != nil {
		tb.Fatal(err)
	}
	return sent
}

// errorsOf compares a client's chunk arrival times with the server's flush times.
func errorsOf(tb testing.TB, got, sent []int64, ttft, itl *[]float64) {
	if len(got) != len(sent) || len(got) == 0 {
		tb.Fatalf("client saw %d chunks, server flushed %d", len(got), len(sent))
	}
	*ttft = append(*ttft, float64(got[0]-sent[0])/1e9)
	for k := 1; k < len(got); k++ {
		*itl = append(*itl, math.Abs(float64((got[k]-got[k-1])-(sent[k]-sent[k-1])))/1e9)
	}
}

func ainTimingErrors(tb testing.TB, url string, streams, tokens int) (ttft, itl []float64) {
	// The bounds `ain bench serve` sets by default (--ttfb-timeout 30m, --idle-timeout 5m in
	// internal/cli): each request then runs under the watchdog (openaiclient.Watch), as it does
	// for users.
	c, err := openaiclient.New(openaiclient.Options{Endpoint: url, MaxConns: streams, FirstByteTimeout: 30 * time.Minute, IdleTimeout: 5 * time.Minute})
	if err != nil {
		tb.Fatal(err)
	}
	res, err := Run(context.Background(), c, Config{Model: "test-model", Requests: streams, InputLen: 8, OutputLen: tokens, IgnoreEOS: true, Warmup: 1})
	if err != nil {
		tb.Fatal(err)
	}
	if res.Failed > 0 {
		tb.Fatalf("%d failed: %+v", res.Failed, res.Failures)
	}
	for i, r := range res.records {
		sent := serverTimes(tb, c.HTTPClient(), url, requestID(res.runID, i))
		at := r.start.Add(r.ttft)
		got := []int64{at.UnixNano()}
		for _, d := range r.itl {
			at = at.Add(d)
			got = append(got, at.UnixNano())
		}
		errorsOf(tb, got, sent, &ttft, &itl)
	}
	sort.Float64s(ttft)
	sort.Float64s(itl)
	return ttft, itl
}

// idHeader sets X-Request-Id from the request's context, so the bare loop's requests can be
// matched with the server's records; go-openai has no per-request header option.
type idHeader struct{ next http.RoundTripper }

type idKey struct{}

func (t idHeader) RoundTrip(r *http.Request) (*http.Response, error) {
	if id, ok := r.Context().Value(idKey{}).(string); ok {
		r = r.Clone(r.Context())
		r.Header.Set("X-Request-Id", id)
	}
	return t.next.RoundTrip(r)
}

// bareLoopTimingErrors is the reference: go-openai's stream, one goroutine per stream, a
// connection pool warmed with one request per stream first.
func bareLoopTimingErrors(tb testing.TB, url string, streams, tokens int) (ttft, itl []float64) {
	tr := &http.Transport{MaxIdleConns: streams, MaxIdleConnsPerHost: streams, DisableCompression: true}
	hc := &http.Client{Transport: idHeader{next: tr}}
	cfg := openai.DefaultConfig("")
	cfg.BaseURL = url + "/v1"
	cfg.HTTPClient = hc
	client := openai.NewClientWithConfig(cfg)
	req := openai.ChatCompletionRequest{Model: "test-model", MaxCompletionTokens: tokens, Stream: true,
		Messages: []openai.ChatCompletionMessage{{Role: "user", Content: "one two three four five six seven eight"}}}
	run := func(id string) ([]int64, error) {
		ctx := context.WithValue(context.Background(), idKey{}, id)
		s, err := client.CreateChatCompletionStream(ctx, req)
		if err != nil {
			return nil, err
		}
		defer s.Close()
		var got []int64
		for {
			ch, err := s.Recv()
			if errors.Is(err, io.EOF) {
				return got, nil
			}
			if err != nil {
				return nil, err
			}
			if len(ch.Choices) > 0 {
				got = append(got, time.Now().UnixNano())
			}
		}
	}
	var wg sync.WaitGroup
	for i := 0; i < streams; i++ { // warm the pool: one connection per stream
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			_, _ = run("bare-warm-" + strconv.Itoa(i))
		}(i)
	}
	wg.Wait()
	got := make([][]int64, streams)
	errs := make([]error, streams)
	for i := 0; i < streams; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			got[i], errs[i] = run("bare-" + strconv.Itoa(i))
		}(i)
	}
	wg.Wait()
	for i := range got {
		if errs[i] != nil {
			tb.Fatalf("bare loop stream %d: %v", i, errs[i])
		}
		errorsOf(tb, got[i], serverTimes(tb, hc, url, "bare-"+strconv.Itoa(i)), &ttft, &itl)
	}
	sort.Float64s(ttft)
	sort.Float64s(itl)
	return ttft, itl
}
