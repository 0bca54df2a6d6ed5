package cli

import "github.com/ain-hpc/ain/pkg/textout"

// table prints rows: a bordered table on a TTY, tab-aligned plain columns otherwise (scriptable).
func (a *App) table(header []string, rows [][]string) {
	textout.Table(a.Streams.Out, a.Streams.IsTTY, header, rows)
}
