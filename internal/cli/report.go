package cli

import (
	"errors"
	"fmt"

	ucli "github.com/urfave/cli/v2"

	"github.com/ain-hpc/ain/internal/ainerr"
	"github.com/ain-hpc/ain/pkg/report"
)

func (a *App) reportCommand() *ucli.Command {
	var output, plotFile string
	return &ucli.Command{
		Name:      "report",
		Usage:     "put the measured paths of a course run side by side: training (allreduce busbw, bytes per HCA), fabric (perftest, TCP), serving (TTFT, throughput: entry vs direct)",
		ArgsUsage: "RESULT.json|DIR ...",
		Description: "Reads the results ain wrote: `ain bench allreduce` folders (result.json), `ain bench rdma -o json` output and\n" +
			"`ain bench serve --save-result` files (vLLM's format, also vLLM's own). Each number names its file; two serving\n" +
			"runs of one model under one load are compared (label them, e.g. --label entry and --label direct); inputs\n" +
			"of different fabrics, line rates, models or loads are said to disagree instead of being compared (course 12.4.1).\n\n" +
			"Example:\n  ain report ./ain-results rdma.json serve-entry.json serve-direct.json",
		Flags: []ucli.Flag{outputFlag(&output, "text", "text, or json", "json"),
			&ucli.StringFlag{Name: "plot", Usage: "also draw each measurement against its line rate to `FILE`.png or FILE.svg", Destination: &plotFile}},
		Action: func(c *ucli.Context) error {
			if c.NArg() == 0 {
				return ainerr.Usagef("give the result files or folders to report on")
			}
			if _, err := report.PlotFormat(plotFile); plotFile != "" && err != nil {
				return ainerr.Usagef("--plot %v", err)
			}
			files, err := report.Files(c.Args().Slice())
			if err != nil {
				return ainerr.New(ainerr.Usage, err, "")
			}
			r, err := report.Build(files)
			var ie *report.InputError
			switch {
			case errors.As(err, &ie):
				return ainerr.New(ainerr.Failure, err, "")
			case errors.Is(err, report.ErrNoResults):
				_ = r.WriteText(a.Streams.Err, measureHint)
				return ainerr.New(ainerr.Failure, err, "")
			case err != nil:
				return err
			}
			if plotFile != "" {
				if err := r.PlotFile(plotFile); err != nil {
					return ainerr.New(ainerr.Failure, err, "")
				}
				fmt.Fprintf(a.Streams.Err, "wrote %s\n", plotFile)
			}
			if output == "json" {
				return a.writeJSON(r)
			}
			return r.WriteText(a.Streams.Out, measureHint)
		},
	}
}

// measureHint words the command that measures a path the inputs lack.
func measureHint(m report.Missing) string {
	switch m.Path {
	case report.Training:
		return "no result; run `ain bench allreduce --out DIR` and give DIR"
	case report.Fabric:
		return "no result; run `ain bench rdma --tcp -o json > rdma.json`"
	case report.Serving:
		return "no result; run `ain bench serve --label entry --save-result entry.json` (and with --endpoint at a pod, --label direct)"
	case report.Storage:
		return "no result; run `ain preflight RECIPE --read-throughput 1G --save-result storage.json` (a probe pod reads the model's weight files from the shared volume)"
	}
	return "no result; run `ain " + m.Measure + "`"
}
