package vllm

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/ain-hpc/ain/pkg/ainerr"
)

// Message is one chat message.
type Message = openai.ChatCompletionMessage

// ChatRequest is one chat completion.
type ChatRequest struct {
	Model     string
	Messages  []Message
	MaxTokens int // 0: the server's default
	// Temperature, when set, is sent as given, 0 included (greedy decoding): see WithBodyFields.
	// nil leaves the server's default.
	Temperature *float64
	// Seed makes sampling reproducible on servers that honour it.
	Seed *int
	// Stream asks for server-sent events; OnDelta then sees each piece of text as it arrives.
	Stream  bool
	OnDelta func(text string)
}

// ChatResult is the answer and how long it took.
type ChatResult struct {
	Text             string
	FinishReason     string
	PromptTokens     int
	CompletionTokens int
	// TTFT is the time to the first chunk carrying text (streaming only; what the user sees).
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

// Chat sends one chat completion, streamed or not. Errors are explained (*ainerr.Error); a
// model the server does not serve is reported with the list of those it does.
func (c *Client) Chat(ctx context.Context, req ChatRequest, now func() time.Time) (*ChatResult, error) {
	if now == nil {
		now = time.Now
	}
	oreq := openai.ChatCompletionRequest{
		Model:     req.Model,
		Messages:  req.Messages,
		MaxTokens: req.MaxTokens,
		Seed:      req.Seed,
		Stream:    req.Stream,
	}
	if req.Temperature != nil {
		// go-openai would drop 0 (omitempty): set it on the wire instead.
		ctx = WithBodyFields(ctx, map[string]any{"temperature": *req.Temperature})
	}
	const op = "POST /v1/chat/completions"
	start := now()
	res := &ChatResult{}
	if !req.Stream {
		resp, err := c.openai.CreateChatCompletion(ctx, oreq)
		if err != nil {
			return nil, c.chatError(ctx, err, req.Model, op)
		}
		res.Duration = now().Sub(start)
		if len(resp.Choices) > 0 {
			res.Text = resp.Choices[0].Message.Content
			res.FinishReason = string(resp.Choices[0].FinishReason)
		}
		res.PromptTokens, res.CompletionTokens = resp.Usage.PromptTokens, resp.Usage.CompletionTokens
		return res, nil
	}
	oreq.StreamOptions = &openai.StreamOptions{IncludeUsage: true}
	stream, err := c.openai.CreateChatCompletionStream(ctx, oreq)
	if err != nil {
		return nil, c.chatError(ctx, err, req.Model, op)
	}
	defer stream.Close()
	var text []byte
	chunks := 0
	for {
		chunk, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, c.chatError(ctx, err, req.Model, op)
		}
		if chunk.Usage != nil {
			res.PromptTokens, res.CompletionTokens = chunk.Usage.PromptTokens, chunk.Usage.CompletionTokens
		}
		// The usage chunk has no choices; the first chunk usually carries only the role.
		if len(chunk.Choices) == 0 {
			continue
		}
		ch := chunk.Choices[0]
		if ch.FinishReason != "" {
			res.FinishReason = string(ch.FinishReason)
		}
		if ch.Delta.Content == "" {
			continue
		}
		if res.TTFT == 0 {
			res.TTFT = now().Sub(start)
		}
		chunks++
		text = append(text, ch.Delta.Content...)
		if req.OnDelta != nil {
			req.OnDelta(ch.Delta.Content)
		}
	}
	res.Duration = now().Sub(start)
	res.Text = string(text)
	if res.CompletionTokens == 0 {
		res.CompletionTokens = chunks // a server without include_usage: one token per chunk
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
	if errors.Is(err, openai.ErrChatCompletionInvalidModel) || errors.Is(err, openai.ErrReasoningModelMaxTokensDeprecated) {
		return ainerr.New(ainerr.Usage, fmt.Errorf("model %q: %w", model, err),
			"go-openai applies OpenAI's own rules to model names starting o1, o3, o4 or gpt-5: serve the model under another --served-model-name")
	}
	return c.explain(err, op)
}
