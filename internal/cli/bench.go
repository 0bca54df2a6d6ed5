package cli

import ucli "github.com/urfave/cli/v2"

// benchCommand groups the measurement commands; each subcommand lives in its own file.
func (a *App) benchCommand() *ucli.Command {
	return &ucli.Command{
		Name:  "bench",
		Usage: "measure the fabric (nccl-tests) and serving endpoints",
		Subcommands: []*ucli.Command{
			a.benchAllreduceCommand(),
			a.benchCompareCommand(), a.benchPlotCommand(),
			a.benchParseCommand(),
			a.benchRDMACommand(),
			a.benchModelCommand(),
			a.benchServeCommand(),
		},
	}
}
