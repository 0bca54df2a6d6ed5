package cli

import (
	ucli "github.com/urfave/cli/v2"

	"github.com/ain-hpc/ain/pkg/ainerr"
)

// sandboxCommand is a placeholder until issue #3 lands.
func (a *App) sandboxCommand() *ucli.Command {
	return &ucli.Command{
		Name:   "sandbox",
		Usage:  "(not built yet: issue #3)",
		Hidden: true,
		Action: func(*ucli.Context) error { return ainerr.Usagef("ain sandbox is not built yet (issue #3)") },
	}
}
