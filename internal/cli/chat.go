package cli

import (
	"context"
	"fmt"
	"io"
	"strings"

	ucli "github.com/urfave/cli/v2"

	"github.com/ain-hpc/ain/internal/ainerr"
	"github.com/ain-hpc/ain/pkg/answers"
	"github.com/ain-hpc/ain/pkg/openaiclient"
)

type chatOptions struct {
	endpointOptions
	openaiclient.Session
	NoStream bool
}

func (o *chatOptions) flags() []ucli.Flag {
	return append(append(o.endpointOptions.flags(), o.timeoutFlags(chatTTFBTimeout, chatIdleTimeout)...),
		&ucli.StringFlag{Name: "model", Aliases: []string{"m"}, Usage: "served model name (default: the only one served; with several, e.g. LoRA adapters, required)", Destination: &o.Model},
		&ucli.StringFlag{Name: "system", Usage: "system prompt", Destination: &o.System},
		&ucli.IntFlag{Name: "max-tokens", Value: 512, Usage: "longest answer in tokens", Destination: &o.MaxTokens},
		&ucli.Float64Flag{Name: "temperature", Value: -1, Usage: "sampling temperature; 0 is greedy (sent even though go-openai omits zero); default: the server's", Destination: &o.Temperature},
		&ucli.BoolFlag{Name: "no-stream", Usage: "wait for the whole answer instead of printing tokens as they arrive", Destination: &o.NoStream},
	)
}

type chatTestOptions struct {
	endpointOptions
	answers.CheckOptions
	JudgeEndpoint string
	Output        string
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
			Description: "The file (YAML or JSON, see recipes/qa/course-qa.yaml) lists cases checked as evaluation harnesses\n" +
				"check answers: multiple choice (choices, answer: the letter the model picks, lm-evaluation-harness\n" +
				"style), or a reference answer graded by a judge model that is not the model under test with the\n" +
				"fact-comparison rubric of OpenAI evals / promptfoo's factuality ((D) disagreement fails), or compared\n" +
				"by embeddings (the file's semantic.mode; the judge or embedding model must be named). Keyword checks\n" +
				"(required / forbidden facts, numbers, regex, exact; whole tokens after Unicode normalisation) cannot\n" +
				"tell a statement from its negation and are reported as a smoke test. Sampling is sent with every\n" +
				"request (temperature 0, top_p 1, top_k -1, seed 0, unless the file asks for several samples at a\n" +
				"temperature). --save archives the answers (model, date, sampling, hashes of the questions); a later\n" +
				"--compare asks again and reports each changed answer, judged against the archived one when there is\n" +
				"a judge (course 12.3.4). Exits 5 when the pass rate is below --min-pass or an answer changed.",
			Flags: append(append(t.flags(), t.timeoutFlags(chatTTFBTimeout, chatIdleTimeout)...),
				&ucli.StringFlag{Name: "golden", Aliases: []string{"f"}, Usage: "answer-check file (YAML or JSON)", Required: true, Destination: &t.Golden},
				&ucli.StringFlag{Name: "model", Aliases: []string{"m"}, Usage: "served model name (default: the file's, else the only one served)", Destination: &t.Model},
				&ucli.Float64Flag{Name: "min-pass", Value: 1, Usage: "lowest pass rate (0..1) that succeeds", Destination: &t.MinPass},
				&ucli.StringFlag{Name: "judge-model", Usage: "judge model for reference answers (default: the file's semantic.model); never the model under test", Destination: &t.JudgeModel},
				&ucli.StringFlag{Name: "judge-endpoint", Usage: "base URL of the server of the judge or embedding model (default: the endpoint under test); its API key from AIN_JUDGE_API_KEY", Destination: &t.JudgeEndpoint},
				&ucli.StringFlag{Name: "embeddings-model", Usage: "embedding model for semantic.mode embeddings (default: the file's semantic.model)", Destination: &t.EmbeddingsModel},
				&ucli.StringFlag{Name: "save", Usage: "archive the answers in `FILE` (JSON) for a later --compare", Destination: &t.Save},
				&ucli.StringFlag{Name: "compare", Usage: "compare the answers with those archived in `FILE` by --save, answer by answer", Destination: &t.Compare},
				outputFlag(&t.Output, "text", "text or json", "json"),
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
	s := &o.Session
	if s.Model, err = c.ResolveModel(ctx, s.Model); err != nil {
		return err
	}
	p := &openaiclient.ChatPrinter{Out: a.Streams.Out, Err: a.Streams.Err, MaxTokensFlag: "--max-tokens"}
	s.Client, s.Stream, s.Now, s.Event = c, !o.NoStream, a.Now, p.Event
	question := strings.TrimSpace(strings.Join(args, " "))
	if question == "" && !a.Streams.InTTY {
		b, err := io.ReadAll(a.Streams.In)
		if err != nil {
			return err
		}
		if question = strings.TrimSpace(string(b)); question == "" {
			return ainerr.Usagef("no question: give one as an argument or on stdin")
		}
	}
	if question != "" {
		_, err := s.Ask(ctx, question)
		return err
	}
	fmt.Fprintf(a.Streams.Err, "Chatting with %s at %s. /exit or Ctrl-D to end, /reset to forget the conversation.\n", s.Model, c.Endpoint())
	return s.Converse(ctx, a.Streams.In, a.Streams.Out, func(err error) error {
		if err = exitError(err); ainerr.CodeOf(err) == ainerr.Cancelled {
			return err
		}
		// The conversation goes on; the failed question is dropped.
		fmt.Fprintf(a.Streams.Err, "error: %v\n", err)
		if h := ainerr.HintOf(err); h != "" {
			fmt.Fprintf(a.Streams.Err, "hint: %s\n", h)
		}
		return nil
	})
}

func (a *App) runChatTest(ctx context.Context, o *chatTestOptions) error {
	o.CheckOptions.JudgeEndpoint, o.Now = o.JudgeEndpoint != "", a.Now
	if o.Output == "text" {
		o.Progress = func(r answers.QAResult) { r.WriteText(a.Streams.Out) }
	}
	k, err := answers.NewChecker(o.CheckOptions)
	if err != nil {
		return err
	}
	c, err := a.modelClient(ctx, &o.endpointOptions, 0)
	if err != nil {
		return err
	}
	if o.JudgeEndpoint != "" {
		jc, err := openaiclient.New(a.connector(&o.endpointOptions, 0, nil, nil).Options.ForServer(o.JudgeEndpoint, a.Getenv("AIN_JUDGE_API_KEY")))
		if err != nil {
			return endpointError(err)
		}
		k.Suite.SetJudge(jc, "")
	}
	out, err := k.Run(ctx, c)
	if err != nil {
		return err
	}
	if o.Output == "json" {
		if err := a.writeJSON(out); err != nil {
			return err
		}
	} else {
		out.WriteText(a.Streams.Out)
	}
	if err := out.Err(); err != nil {
		return ainerr.New(ainerr.CheckFailed, err, "")
	}
	return nil
}
