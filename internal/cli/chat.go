package cli

import (
	ucli "github.com/urfave/cli/v2"

	"github.com/ain-hpc/ain/pkg/ainerr"
)

// chatCommand is a placeholder until issue #8 lands.
func (a *App) chatCommand() *ucli.Command {
	return &ucli.Command{
		Name:   "chat",
		Usage:  "(not built yet: issue #8)",
		Hidden: true,
		Action: func(*ucli.Context) error { return ainerr.Usagef("ain chat is not built yet (issue #8)") },
	}
}
