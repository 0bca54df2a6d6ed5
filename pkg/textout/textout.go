// Package textout holds what ain's text reports share: one table layout (bordered on a
// terminal, tab-aligned plain columns for scripts and logs) and the small formatters of values.
package textout

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/olekukonko/tablewriter"
)

// Table writes rows under header to w: a bordered table when tty, tab-aligned plain columns
// otherwise (scriptable).
func Table(w io.Writer, tty bool, header []string, rows [][]string) {
	if tty {
		t := tablewriter.NewWriter(w)
		t.Header(toAny(header)...)
		for _, r := range rows {
			_ = t.Append(toAny(r)...)
		}
		_ = t.Render()
		return
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, strings.Join(header, "\t"))
	for _, r := range rows {
		fmt.Fprintln(tw, strings.Join(r, "\t"))
	}
	tw.Flush()
}

func toAny(s []string) []any {
	out := make([]any, len(s))
	for i, v := range s {
		out[i] = v
	}
	return out
}

// OrDash is s, or "-" when it is empty.
func OrDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// G prints v with the digits it has (23.49, 8, 0.5).
func G(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }

// Size prints a byte count the way nccl-tests' -b/-e take it: 8, 1K, 64M, 8G (binary units).
func Size(n int64) string {
	units := []string{"", "K", "M", "G", "T", "P"}
	i := 0
	for n >= 1024 && n%1024 == 0 && i < len(units)-1 {
		n /= 1024
		i++
	}
	return strconv.FormatInt(n, 10) + units[i]
}
