package cli

import (
	ucli "github.com/urfave/cli/v2"

	"github.com/ain-hpc/ain/pkg/ainerr"
)

// recipesCommand is a placeholder until issue #2 lands.
func (a *App) recipesCommand() *ucli.Command {
	return &ucli.Command{
		Name:   "recipes",
		Usage:  "(not built yet: issue #2)",
		Hidden: true,
		Action: func(*ucli.Context) error { return ainerr.Usagef("ain recipes is not built yet (issue #2)") },
	}
}
