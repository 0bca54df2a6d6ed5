package openaiclient

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"strings"
	"time"
)

// Session is a conversation with one model (`ain chat`): the history kept between questions,
// and how each is asked. It prints nothing: each step is a ChatEvent given to Event.
type Session struct {
	Client *Client
	Model  string
	// System, when set, is the system prompt, kept by Reset.
	System    string
	MaxTokens int
	// Temperature is sent when >= 0 (0 included: greedy); below, the server's default.
	Temperature float64
	// Stream asks for the answer as it is generated (ChatDelta, ChatReasoning).
	Stream bool
	Now    func() time.Time
	// Event receives each step, from the calling goroutine. nil: none.
	Event func(ChatEvent)

	history []Message
}

// ChatEventKind says which step a ChatEvent reports.
type ChatEventKind int

// The steps of a question.
const (
	ChatReasoning ChatEventKind = iota // a piece of a reasoning model's thinking (Text), streaming
	ChatDelta                          // a piece of the answer (Text), streaming
	ChatAnswered                       // the answer and its timing (Result)
	ChatFailed                         // the question failed (Err)
	ChatReset                          // the conversation was forgotten
)

// ChatEvent is one step of a Session; Streamed says whether the answer came in pieces.
type ChatEvent struct {
	Kind     ChatEventKind
	Text     string
	Result   *ChatResult
	Streamed bool
	Err      error
}

func (s *Session) emit(e ChatEvent) {
	if s.Event != nil {
		s.Event(e)
	}
}

// Reset forgets the conversation (the system prompt stays).
func (s *Session) Reset() {
	s.history = nil
	s.emit(ChatEvent{Kind: ChatReset})
}

// Ask asks question after the conversation so far and returns the answer, which the
// conversation then holds; a failed question is dropped from it.
func (s *Session) Ask(ctx context.Context, question string) (string, error) {
	var msgs []Message
	if s.System != "" {
		msgs = append(msgs, Message{Role: "system", Content: s.System})
	}
	msgs = append(append(msgs, s.history...), Message{Role: "user", Content: question})
	req := ChatRequest{Model: s.Model, Messages: msgs, MaxTokens: s.MaxTokens, Stream: s.Stream}
	if s.Temperature >= 0 {
		t := s.Temperature
		req.Temperature = &t
	}
	if req.Stream {
		req.OnReasoning = func(t string) { s.emit(ChatEvent{Kind: ChatReasoning, Text: t, Streamed: true}) }
		req.OnDelta = func(t string) { s.emit(ChatEvent{Kind: ChatDelta, Text: t, Streamed: true}) }
	}
	res, err := s.Client.Chat(ctx, req, s.Now)
	if err != nil {
		s.emit(ChatEvent{Kind: ChatFailed, Err: err, Streamed: req.Stream})
		return "", err
	}
	s.emit(ChatEvent{Kind: ChatAnswered, Result: res, Streamed: req.Stream})
	s.history = append(s.history, Message{Role: "user", Content: question}, Message{Role: "assistant", Content: res.Text})
	return res.Text, nil
}

// Converse holds the conversation on in, a question a line, writing the prompt "> " to prompt:
// /exit, /quit or the end of in ends it, /reset forgets it. A failed question is given to
// failed, whose error ends the conversation (nil: it goes on); an interrupt (ctx's end) ends
// it with the question's error.
func (s *Session) Converse(ctx context.Context, in io.Reader, prompt io.Writer, failed func(error) error) error {
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for {
		fmt.Fprint(prompt, "> ")
		if !sc.Scan() {
			fmt.Fprintln(prompt)
			return sc.Err()
		}
		line := strings.TrimSpace(sc.Text())
		switch line {
		case "":
			continue
		case "/exit", "/quit":
			return nil
		case "/reset":
			s.Reset()
			continue
		}
		if _, err := s.Ask(ctx, line); err != nil {
			if ctx.Err() != nil {
				return err
			}
			if err := failed(err); err != nil {
				return err
			}
		}
	}
}

// ChatPrinter renders a Session's events: the answer on Out (as it streams), a reasoning
// model's thinking and the timing on Err, so that Out holds the answers only.
type ChatPrinter struct {
	Out, Err io.Writer
	// MaxTokensFlag names the limit a cut answer reached ("--max-tokens").
	MaxTokensFlag string

	thinking, answering bool
}

// Event renders e.
func (p *ChatPrinter) Event(e ChatEvent) {
	switch e.Kind {
	case ChatReasoning:
		if !p.thinking {
			fmt.Fprint(p.Err, "[thinking] ")
			p.thinking = true
		}
		fmt.Fprint(p.Err, e.Text)
	case ChatDelta:
		if p.thinking && !p.answering {
			fmt.Fprintln(p.Err)
		}
		p.answering = true
		fmt.Fprint(p.Out, e.Text)
	case ChatFailed:
		p.thinking, p.answering = false, false
		if e.Streamed {
			fmt.Fprintln(p.Out)
		}
	case ChatAnswered:
		p.thinking, p.answering = false, false
		p.answered(e.Result, e.Streamed)
	case ChatReset:
		fmt.Fprintln(p.Err, "(conversation forgotten)")
	}
}

// answered ends the answer and writes its timing: TTFT when streamed, tokens, tokens/s.
func (p *ChatPrinter) answered(res *ChatResult, streamed bool) {
	if streamed {
		fmt.Fprintln(p.Out)
	} else {
		if res.Reasoning != "" {
			fmt.Fprintf(p.Err, "[thinking] %s\n", strings.TrimSpace(res.Reasoning))
		}
		fmt.Fprintln(p.Out, res.Text)
	}
	var parts []string
	if streamed {
		parts = append(parts, fmt.Sprintf("TTFT %.0f ms", res.TTFT.Seconds()*1000))
		if res.Reasoning != "" {
			parts = append(parts, "(first token of the reasoning)")
		}
	}
	parts = append(parts, fmt.Sprintf("%d tokens in %.2f s", res.CompletionTokens, res.Duration.Seconds()))
	if tps := res.TokensPerSecond(); tps > 0 {
		parts = append(parts, fmt.Sprintf("%.1f tokens/s", tps))
	}
	if res.FinishReason == "length" {
		parts = append(parts, "cut at "+p.MaxTokensFlag)
	}
	fmt.Fprintf(p.Err, "[%s]\n", strings.Join(parts, " · "))
}
