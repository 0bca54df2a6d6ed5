package cli

import (
	ucli "github.com/urfave/cli/v2"

	"github.com/ain-hpc/ain/pkg/ainerr"
)

// profileCommand is a placeholder until issue #2 lands.
func (a *App) profileCommand() *ucli.Command {
	return &ucli.Command{
		Name:   "profile",
		Usage:  "(not built yet: issue #2)",
		Hidden: true,
		Action: func(*ucli.Context) error { return ainerr.Usagef("ain profile is not built yet (issue #2)") },
	}
}
