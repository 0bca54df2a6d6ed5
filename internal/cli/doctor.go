package cli

import (
	ucli "github.com/urfave/cli/v2"

	"github.com/ain-hpc/ain/pkg/ainerr"
)

// doctorCommand is a placeholder until issue #5 lands.
func (a *App) doctorCommand() *ucli.Command {
	return &ucli.Command{
		Name:   "doctor",
		Usage:  "(not built yet: issue #5)",
		Hidden: true,
		Action: func(*ucli.Context) error { return ainerr.Usagef("ain doctor is not built yet (issue #5)") },
	}
}
