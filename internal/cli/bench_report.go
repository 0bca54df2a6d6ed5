package cli

import (
	"github.com/ain-hpc/ain/pkg/bench"
)

// printBenchReport prints a bench result (bench.Result.WriteText) with the suggested commands
// worded as ain's.
func (a *App) printBenchReport(res *bench.Result, files []string) {
	res.WriteText(a.Streams.Out, bench.TextOptions{TTY: a.Streams.IsTTY, Next: runText, Saved: files})
}
