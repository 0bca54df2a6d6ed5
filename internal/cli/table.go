package cli

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/olekukonko/tablewriter"
)

// table prints rows: a bordered table on a TTY, tab-aligned plain columns otherwise (scriptable).
func (a *App) table(header []string, rows [][]string) {
	if a.Streams.IsTTY {
		t := tablewriter.NewWriter(a.Streams.Out)
		t.Header(toAny(header)...)
		for _, r := range rows {
			_ = t.Append(toAny(r)...)
		}
		_ = t.Render()
		return
	}
	w := tabwriter.NewWriter(a.Streams.Out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, strings.Join(header, "\t"))
	for _, r := range rows {
		fmt.Fprintln(w, strings.Join(r, "\t"))
	}
	w.Flush()
}

func toAny(s []string) []any {
	out := make([]any, len(s))
	for i, v := range s {
		out[i] = v
	}
	return out
}

// tableTo prints a table to w (always plain columns: w is a log stream).
func (a *App) tableTo(w io.Writer, header []string, rows [][]string) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, strings.Join(header, "\t"))
	for _, r := range rows {
		fmt.Fprintln(tw, strings.Join(r, "\t"))
	}
	tw.Flush()
}
