package cli

import (
	ucli "github.com/urfave/cli/v2"

	"github.com/ain-hpc/ain/pkg/ainerr"
)

// benchAllreduceCommand is a placeholder until issue #7 lands.
func (a *App) benchAllreduceCommand() *ucli.Command {
	return &ucli.Command{
		Name:   "allreduce",
		Usage:  "(not built yet: issue #7)",
		Hidden: true,
		Action: func(*ucli.Context) error { return ainerr.Usagef("ain allreduce is not built yet (issue #7)") },
	}
}
