package cli

import (
	ucli "github.com/urfave/cli/v2"

	"github.com/ain-hpc/ain/pkg/ainerr"
)

// serveCommand is a placeholder until issue #8 lands.
func (a *App) serveCommand() *ucli.Command {
	return &ucli.Command{
		Name:   "serve",
		Usage:  "(not built yet: issue #8)",
		Hidden: true,
		Action: func(*ucli.Context) error { return ainerr.Usagef("ain serve is not built yet (issue #8)") },
	}
}
