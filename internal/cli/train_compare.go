package cli

import (
	"context"
	"errors"
	"fmt"
	"io"

	ucli "github.com/urfave/cli/v2"

	"github.com/ain-hpc/ain/internal/ainerr"
	"github.com/ain-hpc/ain/pkg/figure"
	"github.com/ain-hpc/ain/pkg/train"
	"github.com/ain-hpc/ain/pkg/trainlog"
)

type trainCompareOptions struct {
	Output       string
	Plot         string
	Tolerance    float64
	LoggingSteps int
	Run, Archive string
}

func (a *App) trainCompareCommand() *ucli.Command {
	o := &trainCompareOptions{}
	return &ucli.Command{
		Name:      "compare",
		Usage:     "compare a training run's loss with an archived run: side by side, a loss-vs-step plot, a divergence verdict (course 12.2.4)",
		ArgsUsage: "RUN ARCHIVE (each a training log, a JSON-lines log, a trainer_state.json, or a folder holding one or checkpoint-N/; RUN may be a JOB: its rank 0's log is read through the API server)",
		Description: "Reads what Hugging Face Trainer and TRL record: the {'loss': ..., 'learning_rate': ..., 'epoch': ...} dicts printed\n" +
			"every logging_steps (the step from the progress bar before them, else --logging-steps x position, else the\n" +
			"position), JSON lines, or trainer_state.json's log_history; evaluation dicts and the final train_runtime/\n" +
			"train_samples_per_second summary too.\n\n" +
			"Verdict: over the steps both runs logged (the archive's loss interpolated linearly between its steps), the\n" +
			"last max(3, 10%) common steps are averaged in each run. diverged: the run's loss is NaN/Inf, or its average\n" +
			"is more than --tolerance (relative) above the archive's, or the run's loss rose (last window above its first);\n" +
			"better: more than --tolerance below; matches: within; inconclusive: fewer than 3 common steps.\n" +
			"Different learning-rate schedules are pointed out: their losses are not expected to match.\n\n" +
			"Exit status: 0 for matches or better, 5 (check failed) for diverged or inconclusive, 2 on bad arguments,\n" +
			"1 when a file cannot be read or holds no training log.\n\n" +
			"Example:\n  ain train compare logs/qlora-rank0.log /shared/archive/full-ft/ --plot loss.png",
		Flags: []ucli.Flag{
			outputFlag(&o.Output, "text", "output format: text or json", "json"),
			&ucli.StringFlag{Name: "plot", Usage: "write the loss-vs-step plot to `FILE`.png or FILE.svg", Destination: &o.Plot},
			&ucli.Float64Flag{Name: "tolerance", Value: 0.10, Usage: "relative difference of the final loss still counted as a match", Destination: &o.Tolerance},
			&ucli.IntFlag{Name: "logging-steps", Usage: "the run's logging_steps, when its log has neither steps nor a progress bar", Destination: &o.LoggingSteps},
		},
		Action: func(c *ucli.Context) error {
			if c.NArg() != 2 {
				return ainerr.Usagef("give RUN and ARCHIVE (got %d arguments)", c.NArg())
			}
			o.Run, o.Archive = c.Args().Get(0), c.Args().Get(1)
			return a.runTrainCompare(c.Context, o)
		},
	}
}

func (a *App) runTrainCompare(ctx context.Context, o *trainCompareOptions) error {
	if !(o.Tolerance > 0 && o.Tolerance < 10) {
		return ainerr.Usagef("--tolerance: a relative difference such as 0.1 (10%%), got %v", o.Tolerance)
	}
	if o.LoggingSteps < 0 {
		return ainerr.Usagef("--logging-steps: the run's logging_steps (a positive number; 0 leaves it unset), got %d", o.LoggingSteps)
	}
	format := figure.FormatOf(o.Plot)
	if o.Plot != "" && format == "" {
		return ainerr.Usagef("--plot %s: the plot file must end in .png or .svg", o.Plot)
	}
	if o.Run == "-" && o.Archive == "-" {
		return ainerr.Usagef("standard input (-) can be read only once")
	}
	var runs [2]*trainlog.Run
	for i, arg := range []string{o.Run, o.Archive} {
		name := arg
		if job, ok := jobArg([]string{arg}); ok && i == 0 {
			r, err := a.trainRunFromJob(ctx, job, o.LoggingSteps)
			if err != nil {
				return err
			}
			runs[i] = r
			continue
		}
		if arg != "-" {
			p, err := trainlog.Resolve(arg)
			if err != nil {
				return ainerr.New(ainerr.Failure, err, "")
			}
			name = p
		}
		rc, err := a.openInput(ctx, name)
		if err != nil {
			return err
		}
		r, err := trainlog.Parse(rc, inputName(name), trainlog.ParseOptions{LoggingSteps: o.LoggingSteps})
		rc.Close()
		if err != nil {
			return inputError(ctx, name, ainerr.Failure, err)
		}
		if err := readInterrupted(ctx, name); err != nil {
			return err
		}
		if len(r.Entries) == 0 {
			return ainerr.New(ainerr.Failure, fmt.Errorf("%s: no training loss found", inputName(name)),
				"give the log of rank 0 (ain logs JOB > run.log) with its {'loss': ...} lines, or a trainer_state.json")
		}
		runs[i] = r
	}
	c := trainlog.Compare(runs[0], runs[1], o.Tolerance)
	if o.Plot != "" {
		if err := figure.WriteFile(o.Plot, func(w io.Writer) error { return trainlog.Plot(w, c, figure.Options{Format: format}) }); err != nil {
			return ainerr.New(ainerr.Failure, err, "")
		}
		fmt.Fprintf(a.Streams.Err, "wrote %s\n", o.Plot)
	}
	if o.Output == "json" {
		if err := a.writeJSON(c); err != nil {
			return err
		}
	} else {
		c.WriteText(a.Streams.Out, a.Streams.IsTTY)
	}
	if !c.Passed() {
		return checkFailed()
	}
	return nil
}

// trainRunFromJob reads the training log of a job's rank 0 (the PyTorchJob master, else the
// first pod) through the API server.
func (a *App) trainRunFromJob(ctx context.Context, name string, loggingSteps int) (*trainlog.Run, error) {
	_, cl, kind, pods, err := a.jobPods(ctx, &doctorOptions{Output: "text", Files: []string{name}}, name)
	if err != nil {
		return nil, err
	}
	r, err := train.RankZeroRun(ctx, cl, kind, name, pods, trainlog.ParseOptions{LoggingSteps: loggingSteps})
	var nl *train.NoLossError
	if errors.As(err, &nl) {
		return nil, ainerr.New(ainerr.Failure, err, "the job's rank 0 prints {'loss': ...} every logging_steps once training runs")
	}
	if err != nil {
		return nil, ainerr.New(ainerr.Failure, err, "")
	}
	return r, nil
}
