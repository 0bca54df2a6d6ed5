package cli

import (
	ucli "github.com/urfave/cli/v2"

	"github.com/ain-hpc/ain/internal/ainerr"
	"github.com/ain-hpc/ain/pkg/bench"
)

// benchCompareOptions are the flags of `ain bench compare`.
type benchCompareOptions struct {
	Output string
	Files  []string
}

func (a *App) benchCompareCommand() *ucli.Command {
	o := &benchCompareOptions{}
	return &ucli.Command{
		Name:      "compare",
		Usage:     "put saved `ain bench allreduce` runs side by side: busbw per size and its ratio to the first",
		ArgsUsage: "RESULT.json|DIR RESULT.json|DIR ...",
		Description: "Every variant of every file is a column; the first one is the baseline, and each other column gets its\n" +
			"busbw divided by the baseline's at the same size (1.25 = 25% faster). A single file with several variants\n" +
			"(--algo all) compares its variants.\n\n" +
			"Examples:\n  ain bench compare results/ring.json results/tree.json\n  ain bench compare ain-results/*-ib ain-results/*-socket -o csv",
		Flags: []ucli.Flag{outputFlag(&o.Output, "text", "text, json or csv", "json", "csv")},
		Action: func(c *ucli.Context) error {
			o.Files = c.Args().Slice()
			return a.runBenchCompare(o)
		},
	}
}

// loadBenchResults reads saved results; problems are usage errors naming the file.
func loadBenchResults(files []string) ([]*bench.Result, error) {
	var out []*bench.Result
	for _, f := range files {
		r, err := bench.Load(f)
		if err != nil {
			return nil, ainerr.New(ainerr.Usage, err, "give result.json files (or their folders) written by `ain bench allreduce`")
		}
		out = append(out, r)
	}
	return out, nil
}

func (a *App) runBenchCompare(o *benchCompareOptions) error {
	if len(o.Files) == 0 {
		return ainerr.Usagef("give two or more saved results (result.json or their folders), or one with several variants")
	}
	results, err := loadBenchResults(o.Files)
	if err != nil {
		return err
	}
	cmp, err := bench.Compare(bench.SeriesOf(results, o.Files))
	if err != nil {
		return ainerr.Usagef("%v", err)
	}
	switch o.Output {
	case "json":
		return a.writeJSON(cmp)
	case "csv":
		return cmp.WriteCSV(a.Streams.Out)
	}
	return cmp.WriteText(a.Streams.Out, a.Streams.IsTTY)
}
