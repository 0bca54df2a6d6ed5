package cli

import (
	"bufio"
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
	Model       string
	System      string
	MaxTokens   int
	Temperature float64
	NoStream    bool
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
	Golden          string
	Model           string
	MinPass         float64
	Output          string
	JudgeModel      string
	JudgeEndpoint   string
	EmbeddingsModel string
	Save            string
	Compare         string
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
	var history []openaiclient.Message
	if o.System != "" {
		history = append(history, openaiclient.Message{Role: "system", Content: o.System})
	}
	question := strings.TrimSpace(strings.Join(args, " "))
	if question != "" {
		_, err := a.ask(ctx, c, o, model, append(history, openaiclient.Message{Role: "user", Content: question}))
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
		_, err = a.ask(ctx, c, o, model, append(history, openaiclient.Message{Role: "user", Content: question}))
		return err
	}
	return a.converse(ctx, c, o, model, history)
}

// converse is the interactive mode: a conversation kept in history.
func (a *App) converse(ctx context.Context, c *openaiclient.Client, o *chatOptions, model string, history []openaiclient.Message) error {
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
		history = append(history, openaiclient.Message{Role: "user", Content: line})
		answer, err := a.ask(ctx, c, o, model, history)
		if err != nil {
			err = exitError(err)
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
		history = append(history, openaiclient.Message{Role: "assistant", Content: answer})
	}
}

// ask sends the messages, prints the answer (as it streams) on stdout and the timing on
// stderr, and returns the answer.
func (a *App) ask(ctx context.Context, c *openaiclient.Client, o *chatOptions, model string, msgs []openaiclient.Message) (string, error) {
	req := openaiclient.ChatRequest{Model: model, Messages: msgs, MaxTokens: o.MaxTokens, Stream: !o.NoStream}
	if o.Temperature >= 0 {
		t := o.Temperature
		req.Temperature = &t
	}
	if req.Stream {
		// A reasoning model thinks first (vLLM's reasoning / reasoning_content deltas): shown
		// on stderr as it arrives, so the answer on stdout stays the answer.
		thinking, answering := false, false
		req.OnReasoning = func(s string) {
			if !thinking {
				fmt.Fprint(a.Streams.Err, "[thinking] ")
				thinking = true
			}
			fmt.Fprint(a.Streams.Err, s)
		}
		req.OnDelta = func(s string) {
			if thinking && !answering {
				fmt.Fprintln(a.Streams.Err)
			}
			answering = true
			fmt.Fprint(a.Streams.Out, s)
		}
	}
	res, err := c.Chat(ctx, req, a.Now)
	if err != nil {
		if req.Stream {
			fmt.Fprintln(a.Streams.Out)
		}
		return "", err
	}
	if req.Stream {
		fmt.Fprintln(a.Streams.Out)
	} else {
		if res.Reasoning != "" {
			fmt.Fprintf(a.Streams.Err, "[thinking] %s\n", strings.TrimSpace(res.Reasoning))
		}
		fmt.Fprintln(a.Streams.Out, res.Text)
	}
	var parts []string
	if req.Stream {
		parts = append(parts, fmt.Sprintf("TTFT %s", fmtMs(res.TTFT.Seconds()*1000)))
		if res.Reasoning != "" {
			parts = append(parts, "(first token of the reasoning)")
		}
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
	suite, err := answers.LoadQA(o.Golden)
	if err != nil {
		return ainerr.New(ainerr.Usage, err, "")
	}
	var archive *answers.QAArchive
	if o.Save != "" || o.Compare != "" {
		if err := suite.Archivable(); err != nil {
			return err
		}
	}
	if o.Compare != "" {
		if archive, err = answers.LoadQAArchive(o.Compare); err != nil {
			return ainerr.New(ainerr.Usage, err, "")
		}
	}
	if sm := suite.Semantic; sm != nil {
		if sm.Mode == answers.SemanticJudge && o.JudgeModel != "" {
			sm.Model = o.JudgeModel
		}
		if sm.Mode == answers.SemanticEmbeddings && o.EmbeddingsModel != "" {
			sm.Model = o.EmbeddingsModel
		}
	} else if o.JudgeModel != "" || o.EmbeddingsModel != "" || o.JudgeEndpoint != "" {
		return ainerr.Usagef("--judge-model, --judge-endpoint and --embeddings-model need reference answers and the file's semantic: {mode: judge|embeddings}")
	}
	c, err := a.modelClient(ctx, &o.endpointOptions, 0)
	if err != nil {
		return err
	}
	if o.JudgeEndpoint != "" {
		jc, err := openaiclient.New(judgeOptions(&o.endpointOptions, o.JudgeEndpoint, a.Getenv("AIN_JUDGE_API_KEY")))
		if err != nil {
			return endpointError(err)
		}
		suite.SetJudge(jc, "")
	}
	want := o.Model
	if want == "" {
		want = suite.Model
	}
	model, err := c.ResolveModel(ctx, want)
	if err != nil {
		return err
	}
	var progress func(answers.QAResult)
	if o.Output == "text" {
		progress = func(r answers.QAResult) { a.printQAResult(r) }
	}
	rep, err := answers.Run(ctx, c, suite, model, o.MinPass, a.Now, progress)
	if err != nil {
		return err
	}
	var cmp *answers.QAComparison
	if archive != nil {
		if cmp, err = answers.Compare(ctx, c, suite, rep, archive, o.Compare, a.Now); err != nil {
			return err
		}
	}
	if o.Save != "" {
		if err := answers.NewQAArchive(suite, rep, o.Golden, a.Now()).Save(o.Save); err != nil {
			return err
		}
	}
	if o.Output == "json" {
		out := struct {
			*answers.QAReport
			Comparison *answers.QAComparison `json:"comparison,omitempty"`
		}{rep, cmp}
		if err := a.writeJSON(out); err != nil {
			return err
		}
	} else {
		smoke := 0
		for _, r := range rep.Results {
			if r.Method == "keywords" {
				smoke++
			}
		}
		verdict := "OK"
		if !rep.OK {
			verdict = "FAILED"
		}
		sampling := fmt.Sprintf("temperature %g, seed %d", rep.Temperature, answers.QASeed)
		if rep.Samples > 1 {
			sampling = fmt.Sprintf("%d samples at temperature %g (seeds %d..%d), a case passes with %.0f%% of them", rep.Samples, rep.Temperature, answers.QASeed, answers.QASeed+rep.Samples-1, rep.PassThreshold*100)
		}
		if rep.Judge != "" {
			sampling += fmt.Sprintf(", %s %s", rep.Semantic, rep.Judge)
		}
		fmt.Fprintf(a.Streams.Out, "\n%d/%d passed (%.0f%%), --min-pass %.0f%%: %s  [model %s, %s]\n",
			rep.Passed, rep.Total, rep.PassRate*100, o.MinPass*100, verdict, model, sampling)
		if smoke > 0 {
			fmt.Fprintf(a.Streams.Out, "%d of the %d cases are keyword checks, a smoke test only: keywords cannot tell a statement from its negation.\n", smoke, rep.Total)
		}
		if cmp != nil {
			a.printQAComparison(cmp)
		}
		if o.Save != "" {
			fmt.Fprintf(a.Streams.Out, "answers archived in %s (compare a later run with --compare %s)\n", o.Save, o.Save)
		}
	}
	if !rep.OK {
		return ainerr.New(ainerr.CheckFailed, fmt.Errorf("answer checks: pass rate %.0f%% is below --min-pass %.0f%%", rep.PassRate*100, o.MinPass*100), "")
	}
	if cmp != nil && cmp.Regressions > 0 {
		return ainerr.New(ainerr.CheckFailed, fmt.Errorf("answer checks: %d answers changed since the archive %s", cmp.Regressions, o.Compare), "")
	}
	return nil
}

// printQAComparison lists, answer by answer, what changed since the archive.
func (a *App) printQAComparison(cmp *answers.QAComparison) {
	w := a.Streams.Out
	fmt.Fprintf(w, "\ncompared with %s (model %s, %s): %d of %d answers differ, %d changed\n", cmp.Archive, cmp.ModelBefore,
		cmp.ArchiveDate.Format("2006-01-02 15:04 MST"), cmp.Changed, len(cmp.Changes), cmp.Regressions)
	for _, ch := range cmp.Changes {
		if ch.Status == answers.ChangeSame {
			continue
		}
		mark := "  "
		if ch.Regression {
			mark = "! "
		}
		fmt.Fprintf(w, "%s%s  %s\n", mark, ch.Status, ch.Name)
		if ch.Before != "" {
			fmt.Fprintf(w, "      before: %s\n", oneLine(ch.Before, 200))
		}
		if ch.After != "" {
			fmt.Fprintf(w, "      now:    %s\n", oneLine(ch.After, 200))
		}
		if ch.Verdict != "" {
			fmt.Fprintf(w, "      %s\n", oneLine(ch.Verdict, 200))
		}
	}
}

// printQAResult prints a case's verdict and, per check, what it found: the excerpt that
// matched, or the failure with its evidence.
func (a *App) printQAResult(r answers.QAResult) {
	w := a.Streams.Out
	verdict := "PASS"
	if !r.Pass {
		verdict = "FAIL"
	}
	how := map[string]string{"choice": "multiple choice", "judge": "judged", "embeddings": "embeddings", "keywords": "keywords: smoke test only"}[r.Method]
	if len(r.Samples) > 1 {
		fmt.Fprintf(w, "%s  %s  [%s]  (%d/%d samples passed)\n", verdict, r.Name, how, r.Passed, len(r.Samples))
	} else {
		fmt.Fprintf(w, "%s  %s  [%s]\n", verdict, r.Name, how)
	}
	if !r.Pass {
		fmt.Fprintf(w, "      question: %s\n", r.Question)
		if r.Error == "" {
			fmt.Fprintf(w, "      answer:   %s\n", oneLine(r.Answer, 300))
		}
		for _, f := range r.Failures {
			fmt.Fprintf(w, "      - %s\n", f)
		}
		return
	}
	if len(r.Samples) > 0 {
		for _, ck := range r.Samples[0].Checks {
			if ck.Kind == "forbidden" {
				continue
			}
			fmt.Fprintf(w, "      %s %s: %s\n", ck.Kind, ck.Expect, oneLine(ck.Evidence, 120))
		}
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

// judgeOptions are the judge server's client options: --insecure and --connect-to are about the
// endpoint under test (its self-signed ingress, its controller's address) and must not send
// AIN_JUDGE_API_KEY to an unverified server or to the ingress; --ca-file only adds trust and the
// timeouts bound any server, so those carry over.
func judgeOptions(o *endpointOptions, endpoint, key string) openaiclient.Options {
	return openaiclient.Options{Endpoint: endpoint, APIKey: key, CAFile: o.CAFile, FirstByteTimeout: o.TTFBTimeout, IdleTimeout: o.IdleTimeout}
}
