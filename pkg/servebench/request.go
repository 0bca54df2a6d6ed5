package servebench

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/ain-hpc/ain/pkg/openaiclient"
)

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
	// A chunk is stamped with when the bytes that completed it were received, not when the
	// Read returning them did: between the two, the transport's goroutine may have parsed the
	// headers that came with the first chunk and handed the response over (openaiclient's
	// arrival.go).
	tctx, lag := c.TrackArrival(wctx)
	req, err := http.NewRequestWithContext(tctx, http.MethodPost, t.url, bytes.NewReader(body))
	if err != nil {
		rec.err = err
		return
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("X-Request-Id", id)
	c.Authorize(req)
	// Everything the stream needs is allocated before the request is sent: the first chunk of
	// hundreds of streams comes back within a millisecond or two, and allocating then (the
	// read buffer is 8 KiB a stream) starts the garbage collector in that burst, whose assists
	// and pauses land between the chunks' arrival and their timestamps.
	rec.itl = make([]time.Duration, 0, outputLen+4)
	buf := make([]byte, 0, 8<<10)
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
	sse := openaiclient.NewSSEReader(resp.Body, buf, func() time.Time { return now().Add(-lag()) })
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
