package cli

import (
	"io"

	"github.com/ain-hpc/ain/pkg/textout"
)

// table prints rows: a bordered table on a TTY, tab-aligned plain columns otherwise (scriptable).
func (a *App) table(header []string, rows [][]string) {
	textout.Table(a.Streams.Out, a.Streams.IsTTY, header, rows)
}

// tableTo prints a table to w (always plain columns: w is a log stream).
func (a *App) tableTo(w io.Writer, header []string, rows [][]string) {
	textout.Table(w, false, header, rows)
}
