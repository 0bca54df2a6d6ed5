package cli

import (
	ucli "github.com/urfave/cli/v2"

	"github.com/ain-hpc/ain/pkg/ainerr"
)

// benchServeCommand is a placeholder until issue #8 lands.
func (a *App) benchServeCommand() *ucli.Command {
	return &ucli.Command{
		Name:   "serve",
		Usage:  "(not built yet: issue #8)",
		Hidden: true,
		Action: func(*ucli.Context) error { return ainerr.Usagef("ain serve is not built yet (issue #8)") },
	}
}
