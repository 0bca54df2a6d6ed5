package cli

import (
	ucli "github.com/urfave/cli/v2"

	"github.com/ain-hpc/ain/pkg/ainerr"
)

// renderCommand is a placeholder until issue #2 lands.
func (a *App) renderCommand() *ucli.Command {
	return &ucli.Command{
		Name:   "render",
		Usage:  "(not built yet: issue #2)",
		Hidden: true,
		Action: func(*ucli.Context) error { return ainerr.Usagef("ain render is not built yet (issue #2)") },
	}
}
