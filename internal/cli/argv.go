package cli

import (
	ucli "github.com/urfave/cli/v2"

	"github.com/ain-hpc/ain/pkg/argv"
)

// reorderArgs lets flags follow positional arguments (argv.Reorder) on app's command tree.
func reorderArgs(app *ucli.App, args []string) ([]string, error) {
	return argv.Reorder(&argv.Command{Flags: flagArity(app.Flags), Subcommands: argvCommands(app.Commands)}, args)
}

func argvCommands(cmds []*ucli.Command) []*argv.Command {
	out := make([]*argv.Command, len(cmds))
	for i, c := range cmds {
		out[i] = &argv.Command{Names: c.Names(), Flags: flagArity(c.Flags), Subcommands: argvCommands(c.Subcommands), Raw: c.SkipFlagParsing}
	}
	return out
}

// flagArity maps every flag name and alias to whether it takes a value.
func flagArity(flags []ucli.Flag) map[string]bool {
	m := map[string]bool{}
	for _, f := range flags {
		_, isBool := f.(*ucli.BoolFlag)
		for _, n := range f.Names() {
			m[n] = !isBool
		}
	}
	return m
}
