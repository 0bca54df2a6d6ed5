package openaiclient

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"
	"time"

	openai "github.com/sashabaranov/go-openai"
)

// Message is one chat message.
type Message = openai.ChatCompletionMessage

// ChatRequest is one chat completion.
type ChatRequest struct {
	Model     string
	Messages  []Message
	MaxTokens int // 0: the server's default
	// Temperature, when set, is sent as given, 0 included (greedy decoding). nil leaves the
	// server's default (with vLLM's --generation-config auto, the model's own).
	Temperature *float64
	// Seed makes sampling reproducible on servers that honour it.
	Seed *int
	// Extra are more request fields sent as given (top_p, top_k, repetition_penalty...):
	// per-request sampling instead of a server-wide setting.
	Extra map[string]any
	// Stream asks for server-sent events; OnDelta then sees each piece of the answer and
	// OnReasoning each piece of a reasoning model's thinking, as they arrive.
	Stream      bool
	OnDelta     func(text string)
	OnReasoning func(text string)
}

// ChatResult is the answer and how long it took.
type ChatResult struct {
	Text string
	// Reasoning is what a reasoning model thought before answering (vLLM's "reasoning"
	// field, "reasoning_content" before vLLM renamed it).
	Reasoning        string
	FinishReason     string
	PromptTokens     int
	CompletionTokens int
	// TTFT is the time to the first chunk carrying any generated text, reasoning included
	// (streaming only): a reasoning model's first token is a thinking token.
	TTFT time.Duration
	// Duration is from sending the request to the last byte.
	Duration time.Duration
}

// TokensPerSecond is the decode rate: tokens after the first over the time after the first
// (the whole duration when not streaming). 0 when it cannot be told.
func (r *ChatResult) TokensPerSecond() float64 {
	n, d := float64(r.CompletionTokens), r.Duration
	if r.TTFT > 0 && r.CompletionTokens > 1 {
		n, d = n-1, r.Duration-r.TTFT
	}
	if d <= 0 || n <= 0 {
		return 0
	}
	return n / d.Seconds()
}

// StreamCutError is a stream that ended without its closing "data: [DONE]": the answer is
// incomplete, whatever arrived before.
type StreamCutError struct {
	Received int // chunks that arrived
}

func (e *StreamCutError) Error() string {
	return fmt.Sprintf("the stream ended before data: [DONE] after %d chunk(s): the answer is incomplete", e.Received)
}

// AnswerError is a 200 answer that is not an answer. The server may report an error inside it:
// vLLM catches an exception raised while generating and streams it as one data: line, then
// data: [DONE] (vllm/entrypoints/openai/chat_completion/serving.py, create_streaming_error_response
// in engine/serving.py), shaped {"error": {"message", "type", "param", "code"}} since vLLM's
// ErrorResponse nests ErrorInfo (engine/protocol.py) and {"object": "error", "message", ...} (its
// older flat ErrorResponse) before. Something in front of the server may answer instead of it
// (a login or error page). Or the stream ends properly without a chunk carrying choices, which
// vLLM's benchmark client fails too ("Never received a valid chunk").
type AnswerError struct {
	Fault  AnswerFault
	Detail string
}

// AnswerFault says how an answer failed.
type AnswerFault int

// The ways a 200 answer fails.
const (
	FaultReported       AnswerFault = iota // an error object in the answer; Detail is its message
	FaultNotEventStream                    // a streamed request answered otherwise; Detail: type and start
	FaultNotJSON                           // a chunk or answer that is not JSON; Detail: which and its start
	FaultNoAnswer                          // [DONE] without a chunk carrying choices; Detail: chunks seen
)

func (e *AnswerError) Error() string {
	switch e.Fault {
	case FaultReported:
		return "the server reported an error in the answer: " + e.Detail
	case FaultNotEventStream:
		return "the answer is not an event stream (" + e.Detail + ")"
	case FaultNotJSON:
		return e.Detail
	}
	return "the stream ended with data: [DONE] but carried no answer (" + e.Detail + ")"
}

// hint says where to look next.
func (e *AnswerError) hint() string {
	switch e.Fault {
	case FaultReported:
		return "the model server's log (kubectl logs of its pod) has the exception behind it"
	case FaultNoAnswer:
		return "is the endpoint a vLLM (OpenAI-compatible) server? Its log may say why it generated nothing"
	}
	return "something in front of the model server answered instead of it (a login or error page of a proxy): check --endpoint"
}

// NotJSON is the error for a chunk or answer that does not parse; what names it.
func NotJSON(what string, p []byte) *AnswerError {
	start := strings.Join(strings.Fields(string(p[:min(len(p), 200)])), " ")
	return &AnswerError{Fault: FaultNotJSON, Detail: fmt.Sprintf("%s is not JSON: %q", what, start)}
}

// NoAnswer is the error for a stream that carried no choices in its chunks.
func NoAnswer(chunks int) *AnswerError {
	return &AnswerError{Fault: FaultNoAnswer, Detail: fmt.Sprintf("%d chunk(s), none with choices", chunks)}
}

// CheckEventStream returns an *AnswerError when resp says it is something other than
// an event stream (vLLM's StreamingResponse is media_type "text/event-stream"). A missing
// Content-Type is let through: the chunks themselves are checked.
func CheckEventStream(resp *http.Response) error {
	ct := resp.Header.Get("Content-Type")
	if ct == "" {
		return nil
	}
	if mt, _, err := mime.ParseMediaType(ct); err == nil && mt == "text/event-stream" {
		return nil
	}
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 200))
	return &AnswerError{Fault: FaultNotEventStream, Detail: fmt.Sprintf("Content-Type %s, not text/event-stream: %q", ct, strings.Join(strings.Fields(string(b)), " "))}
}

// chatChunk is what ain reads of a chat completion (chunk): vLLM's delta carries the answer
// in content and a reasoning model's thinking in reasoning (vllm/entrypoints/openai/engine/
// protocol.py DeltaMessage) or, before vLLM PR #27752, reasoning_content.
type chatChunk struct {
	Choices []struct {
		Delta   chatDelta  `json:"delta"`
		Message *chatDelta `json:"message"`
		Finish  *string    `json:"finish_reason"`
	} `json:"choices"`
	Usage *struct {
		PromptTokens     int `json:"prompt_tokens"`
		CompletionTokens int `json:"completion_tokens"`
	} `json:"usage"`
	Error  json.RawMessage `json:"error"`
	Object string          `json:"object"`
}

// failed reports whether the chunk (or answer) is an error object in either of vLLM's shapes.
func (ch *chatChunk) failed() bool {
	return len(ch.Error) > 0 && string(ch.Error) != "null" || ch.Object == "error"
}

type chatDelta struct {
	Content          string `json:"content"`
	Reasoning        string `json:"reasoning"`
	ReasoningContent string `json:"reasoning_content"`
}

func (d *chatDelta) reasoning() string {
	if d.Reasoning != "" {
		return d.Reasoning
	}
	return d.ReasoningContent
}

// Chat sends one chat completion, streamed or not. Errors are explained (*CallError); a
// model the server does not serve is reported with the list of those it does; a stream cut
// before [DONE] is an error.
func (c *Client) Chat(ctx context.Context, req ChatRequest, now func() time.Time) (*ChatResult, error) {
	if now == nil {
		now = time.Now
	}
	const op = "POST /v1/chat/completions"
	body := map[string]any{"model": req.Model, "messages": req.Messages}
	for k, v := range req.Extra {
		body[k] = v
	}
	if req.MaxTokens > 0 {
		body["max_tokens"] = req.MaxTokens
	}
	if req.Temperature != nil {
		body["temperature"] = *req.Temperature
	}
	if req.Seed != nil {
		body["seed"] = *req.Seed
	}
	if req.Stream {
		body["stream"] = true
		body["stream_options"] = map[string]bool{"include_usage": true}
	}
	b, err := json.Marshal(body)
	if err != nil {
		return nil, err
	}
	wctx, wrap, done := c.Watch(ctx)
	defer done()
	hreq, err := http.NewRequestWithContext(wctx, http.MethodPost, c.base.String()+"/chat/completions", bytes.NewReader(b))
	if err != nil {
		return nil, err
	}
	hreq.Header.Set("Content-Type", "application/json")
	c.Authorize(hreq)
	start := now()
	resp, err := c.http.Do(hreq)
	if err != nil {
		return nil, c.Explain(Stalled(wctx, err), op)
	}
	resp.Body = wrap(resp.Body)
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, c.chatError(ctx, StatusError(resp), req.Model, op)
	}
	res := &ChatResult{}
	if !req.Stream {
		var ch chatChunk
		body, err := io.ReadAll(resp.Body)
		if err != nil {
			return nil, c.Explain(Stalled(wctx, err), op)
		}
		if err := json.Unmarshal(body, &ch); err != nil {
			return nil, c.Explain(NotJSON("the answer (Content-Type "+resp.Header.Get("Content-Type")+")", body), op)
		}
		if ch.failed() {
			return nil, c.Explain(&AnswerError{Fault: FaultReported, Detail: ErrorMessage(body)}, op)
		}
		if len(ch.Choices) == 0 {
			return nil, c.Explain(NoAnswer(0), op)
		}
		res.Duration = now().Sub(start)
		if len(ch.Choices) > 0 && ch.Choices[0].Message != nil {
			res.Text, res.Reasoning = ch.Choices[0].Message.Content, ch.Choices[0].Message.reasoning()
			if f := ch.Choices[0].Finish; f != nil {
				res.FinishReason = *f
			}
		}
		if ch.Usage != nil {
			res.PromptTokens, res.CompletionTokens = ch.Usage.PromptTokens, ch.Usage.CompletionTokens
		}
		return res, nil
	}
	if err := CheckEventStream(resp); err != nil {
		return nil, c.Explain(err, op)
	}
	sse := NewSSEReader(resp.Body, make([]byte, 0, 4<<10), now)
	var text, thought []byte
	chunks, pieces, answered := 0, 0, false
	for {
		p, at, err := sse.Next()
		if err != nil {
			err = Stalled(wctx, err)
		}
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			// Clean EOF or a connection closed mid-chunk: either way no [DONE].
			return nil, c.Explain(&StreamCutError{Received: chunks}, op)
		}
		if err != nil {
			return nil, c.Explain(err, op)
		}
		if string(p) == "[DONE]" {
			break
		}
		chunks++
		var ch chatChunk
		if err := json.Unmarshal(p, &ch); err != nil {
			return nil, c.Explain(NotJSON(fmt.Sprintf("chunk %d", chunks), p), op)
		}
		if ch.failed() {
			return nil, c.Explain(&AnswerError{Fault: FaultReported, Detail: ErrorMessage(p)}, op)
		}
		if ch.Usage != nil {
			res.PromptTokens, res.CompletionTokens = ch.Usage.PromptTokens, ch.Usage.CompletionTokens
		}
		// The usage chunk has no choices; the first chunk usually carries only the role.
		if len(ch.Choices) == 0 {
			continue
		}
		answered = true
		d := ch.Choices[0].Delta
		if f := ch.Choices[0].Finish; f != nil && *f != "" {
			res.FinishReason = *f
		}
		r := d.reasoning()
		if d.Content == "" && r == "" {
			continue
		}
		if res.TTFT == 0 {
			res.TTFT = at.Sub(start)
		}
		pieces++
		if r != "" {
			thought = append(thought, r...)
			if req.OnReasoning != nil {
				req.OnReasoning(r)
			}
		}
		if d.Content != "" {
			text = append(text, d.Content...)
			if req.OnDelta != nil {
				req.OnDelta(d.Content)
			}
		}
	}
	if !answered {
		return nil, c.Explain(NoAnswer(chunks), op)
	}
	res.Duration = now().Sub(start)
	res.Text, res.Reasoning = string(text), string(thought)
	if res.CompletionTokens == 0 {
		res.CompletionTokens = pieces // a server without include_usage: one token per chunk
	}
	return res, nil
}

// chatError explains err; for a 404 about the model it lists the served models.
func (c *Client) chatError(ctx context.Context, err error, model, op string) error {
	if he, ok := asHTTPError(err); ok && he.StatusCode == 404 {
		if models, merr := c.Models(ctx); merr == nil && len(models) > 0 {
			found := false
			for _, m := range models {
				found = found || m.ID == model
			}
			if !found {
				return modelNotFound(model, models)
			}
		}
	}
	return c.Explain(err, op)
}
