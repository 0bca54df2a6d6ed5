package cli

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"strings"

	ucli "github.com/urfave/cli/v2"

	"github.com/ain-hpc/ain/pkg/ainerr"
	"github.com/ain-hpc/ain/pkg/vllm"
)

type chatOptions struct {
	endpointOptions
	Model       string
	System      string
	MaxTokens   int
	Temperature float64
	NoStream    bool
}

func (o *chatOptions) flags() []ucli.Flag {
	return append(o.endpointOptions.flags(),
		&ucli.StringFlag{Name: "model", Aliases: []string{"m"}, Usage: "served model name (default: the only one served; with several, e.g. LoRA adapters, required)", Destination: &o.Model},
		&ucli.StringFlag{Name: "system", Usage: "system prompt", Destination: &o.System},
		&ucli.IntFlag{Name: "max-tokens", Value: 512, Usage: "longest answer in tokens", Destination: &o.MaxTokens},
		&ucli.Float64Flag{Name: "temperature", Value: -1, Usage: "sampling temperature; 0 is greedy (sent even though go-openai omits zero); default: the server's", Destination: &o.Temperature},
		&ucli.BoolFlag{Name: "no-stream", Usage: "wait for the whole answer instead of printing tokens as they arrive", Destination: &o.NoStream},
	)
}

type chatTestOptions struct {
	endpointOptions
	Golden  string
	Model   string
	MinPass float64
	Output  string
}

func (a *App) chatCommand() *ucli.Command {
	o := &chatOptions{}
	t := &chatTestOptions{}
	return &ucli.Command{
		Name:      "chat",
		Usage:     "ask a served model (OpenAI-compatible, e.g. vLLM): one question, or a conversation on a terminal",
		ArgsUsage: "[QUESTION]",
		Description: "With a question, prints the answer as it streams, then TTFT, tokens and tokens/s on stderr.\n" +
			"Without one, on a terminal, holds a conversation (/exit or Ctrl-D to end, /reset to forget);\n" +
			"otherwise reads the question from stdin.",
		Flags:  o.flags(),
		Action: func(c *ucli.Context) error { return a.runChat(c.Context, o, c.Args().Slice()) },
		Subcommands: []*ucli.Command{{
			Name:  "test",
			Usage: "answer checks: ask the questions of a golden file deterministically and check the answers",
			Description: "The file (YAML or JSON) lists cases with contains / notContains / regex / exact expectations\n" +
				"(see recipes/qa/course-qa.yaml). Answers are sampled greedily: temperature 0 on the wire, seed 0.\n" +
				"Exits 5 when the pass rate is below --min-pass.",
			Flags: append(t.flags(),
				&ucli.StringFlag{Name: "golden", Aliases: []string{"f"}, Usage: "answer-check file (YAML or JSON)", Required: true, Destination: &t.Golden},
				&ucli.StringFlag{Name: "model", Aliases: []string{"m"}, Usage: "served model name (default: the file's, else the only one served)", Destination: &t.Model},
				&ucli.Float64Flag{Name: "min-pass", Value: 1, Usage: "lowest pass rate (0..1) that succeeds", Destination: &t.MinPass},
				outputFlag(&t.Output, "text", "text or json"),
			),
			Action: func(c *ucli.Context) error { return a.runChatTest(c.Context, t) },
		}},
	}
}

func (a *App) runChat(ctx context.Context, o *chatOptions, args []string) error {
	if o.MaxTokens < 1 {
		return ainerr.Usagef("--max-tokens must be >= 1")
	}
	c, err := a.modelClient(ctx, &o.endpointOptions, 0)
	if err != nil {
		return err
	}
	model, err := c.ResolveModel(ctx, o.Model)
	if err != nil {
		return err
	}
	var history []vllm.Message
	if o.System != "" {
		history = append(history, vllm.Message{Role: "system", Content: o.System})
	}
	question := strings.TrimSpace(strings.Join(args, " "))
	if question != "" {
		_, err := a.ask(ctx, c, o, model, append(history, vllm.Message{Role: "user", Content: question}))
		return err
	}
	if !a.Streams.InTTY {
		b, err := io.ReadAll(a.Streams.In)
		if err != nil {
			return err
		}
		if question = strings.TrimSpace(string(b)); question == "" {
			return ainerr.Usagef("no question: give one as an argument or on stdin")
		}
		_, err = a.ask(ctx, c, o, model, append(history, vllm.Message{Role: "user", Content: question}))
		return err
	}
	return a.converse(ctx, c, o, model, history)
}

// converse is the interactive mode: a conversation kept in history.
func (a *App) converse(ctx context.Context, c *vllm.Client, o *chatOptions, model string, history []vllm.Message) error {
	fmt.Fprintf(a.Streams.Err, "Chatting with %s at %s. /exit or Ctrl-D to end, /reset to forget the conversation.\n", model, c.Endpoint())
	base := len(history)
	in := bufio.NewScanner(a.Streams.In)
	in.Buffer(make([]byte, 64<<10), 1<<20)
	for {
		fmt.Fprint(a.Streams.Out, "> ")
		if !in.Scan() {
			fmt.Fprintln(a.Streams.Out)
			return in.Err()
		}
		line := strings.TrimSpace(in.Text())
		switch line {
		case "":
			continue
		case "/exit", "/quit":
			return nil
		case "/reset":
			history = history[:base]
			fmt.Fprintln(a.Streams.Err, "(conversation forgotten)")
			continue
		}
		history = append(history, vllm.Message{Role: "user", Content: line})
		answer, err := a.ask(ctx, c, o, model, history)
		if err != nil {
			if ainerr.CodeOf(err) == ainerr.Cancelled || ctx.Err() != nil {
				return err
			}
			// Keep the conversation going; the failed question is dropped.
			history = history[:len(history)-1]
			fmt.Fprintf(a.Streams.Err, "error: %v\n", err)
			if h := ainerr.HintOf(err); h != "" {
				fmt.Fprintf(a.Streams.Err, "hint: %s\n", h)
			}
			continue
		}
		history = append(history, vllm.Message{Role: "assistant", Content: answer})
	}
}

// ask sends the messages, prints the answer (as it streams) on stdout and the timing on
// stderr, and returns the answer.
func (a *App) ask(ctx context.Context, c *vllm.Client, o *chatOptions, model string, msgs []vllm.Message) (string, error) {
	req := vllm.ChatRequest{Model: model, Messages: msgs, MaxTokens: o.MaxTokens, Stream: !o.NoStream}
	if o.Temperature >= 0 {
		t := o.Temperature
		req.Temperature = &t
	}
	if req.Stream {
		req.OnDelta = func(s string) { fmt.Fprint(a.Streams.Out, s) }
	}
	res, err := c.Chat(ctx, req, a.Now)
	if err != nil {
		return "", err
	}
	if req.Stream {
		fmt.Fprintln(a.Streams.Out)
	} else {
		fmt.Fprintln(a.Streams.Out, res.Text)
	}
	var parts []string
	if req.Stream {
		parts = append(parts, fmt.Sprintf("TTFT %s", fmtMs(res.TTFT.Seconds()*1000)))
	}
	parts = append(parts, fmt.Sprintf("%d tokens in %.2f s", res.CompletionTokens, res.Duration.Seconds()))
	if tps := res.TokensPerSecond(); tps > 0 {
		parts = append(parts, fmt.Sprintf("%.1f tokens/s", tps))
	}
	if res.FinishReason == "length" {
		parts = append(parts, "cut at --max-tokens")
	}
	fmt.Fprintf(a.Streams.Err, "[%s]\n", strings.Join(parts, " · "))
	return res.Text, nil
}

func fmtMs(ms float64) string { return fmt.Sprintf("%.0f ms", ms) }

func (a *App) runChatTest(ctx context.Context, o *chatTestOptions) error {
	if o.Output != "text" && o.Output != "json" {
		return ainerr.Usagef("-o %s: use text or json", o.Output)
	}
	if o.MinPass < 0 || o.MinPass > 1 {
		return ainerr.Usagef("--min-pass %g: want a fraction between 0 and 1", o.MinPass)
	}
	suite, err := vllm.LoadQA(o.Golden)
	if err != nil {
		return ainerr.New(ainerr.Usage, err, "")
	}
	c, err := a.modelClient(ctx, &o.endpointOptions, 0)
	if err != nil {
		return err
	}
	want := o.Model
	if want == "" {
		want = suite.Model
	}
	model, err := c.ResolveModel(ctx, want)
	if err != nil {
		return err
	}
	var progress func(vllm.QAResult)
	if o.Output == "text" {
		progress = func(r vllm.QAResult) { a.printQAResult(r) }
	}
	rep, err := c.RunQA(ctx, suite, model, o.MinPass, a.Now, progress)
	if err != nil {
		return err
	}
	if o.Output == "json" {
		if err := a.writeJSON(rep); err != nil {
			return err
		}
	} else {
		verdict := "OK"
		if !rep.OK {
			verdict = "FAILED"
		}
		fmt.Fprintf(a.Streams.Out, "\n%d/%d passed (%.0f%%), --min-pass %.0f%%: %s  [model %s, temperature 0, seed %d]\n",
			rep.Passed, rep.Total, rep.PassRate*100, o.MinPass*100, verdict, model, vllm.QASeed)
	}
	if !rep.OK {
		return ainerr.New(ainerr.CheckFailed, fmt.Errorf("answer checks: pass rate %.0f%% is below --min-pass %.0f%%", rep.PassRate*100, o.MinPass*100), "")
	}
	return nil
}

func (a *App) printQAResult(r vllm.QAResult) {
	w := a.Streams.Out
	if r.Pass {
		fmt.Fprintf(w, "PASS  %s\n", r.Name)
		return
	}
	fmt.Fprintf(w, "FAIL  %s\n", r.Name)
	fmt.Fprintf(w, "      question: %s\n", r.Question)
	if r.Error == "" {
		fmt.Fprintf(w, "      answer:   %s\n", oneLine(r.Answer, 300))
	}
	for _, f := range r.Failures {
		fmt.Fprintf(w, "      - %s\n", f)
	}
}

// oneLine folds whitespace and shortens s to at most n runes.
func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > n {
		return string(r[:n]) + "…"
	}
	return s
}
