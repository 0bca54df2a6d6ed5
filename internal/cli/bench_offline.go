package cli

import (
	ucli "github.com/urfave/cli/v2"

	"github.com/ain-hpc/ain/pkg/ainerr"
)

// benchParseCommand is a placeholder until issue #5 lands.
func (a *App) benchParseCommand() *ucli.Command {
	return &ucli.Command{
		Name:   "parse",
		Usage:  "(not built yet: issue #5)",
		Hidden: true,
		Action: func(*ucli.Context) error { return ainerr.Usagef("ain parse is not built yet (issue #5)") },
	}
}

// benchModelCommand is a placeholder until issue #5 lands.
func (a *App) benchModelCommand() *ucli.Command {
	return &ucli.Command{Name: "model", Hidden: true, Action: func(*ucli.Context) error { return ainerr.Usagef("not built yet (issue #5)") }}
}
