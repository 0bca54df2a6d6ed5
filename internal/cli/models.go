package cli

import (
	ucli "github.com/urfave/cli/v2"

	"github.com/ain-hpc/ain/pkg/ainerr"
)

// modelsCommand is a placeholder until issue #8 lands.
func (a *App) modelsCommand() *ucli.Command {
	return &ucli.Command{
		Name:   "models",
		Usage:  "(not built yet: issue #8)",
		Hidden: true,
		Action: func(*ucli.Context) error { return ainerr.Usagef("ain models is not built yet (issue #8)") },
	}
}
