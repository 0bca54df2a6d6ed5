package cli

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"unicode"
	"unicode/utf8"

	"github.com/mattn/go-runewidth"
)

// table prints rows: a bordered table on a TTY, tab-aligned plain columns otherwise (scriptable).
func (a *App) table(header []string, rows [][]string) {
	if a.Streams.IsTTY {
		boxTable(a.Streams.Out, header, rows)
		return
	}
	w := tabwriter.NewWriter(a.Streams.Out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, strings.Join(header, "\t"))
	for _, r := range rows {
		fmt.Fprintln(w, strings.Join(r, "\t"))
	}
	w.Flush()
}

// boxTable draws the table tablewriter v1.1.5 draws with its defaults (NewWriter, Header, Append,
// Render), which ain used before: light box borders, one space of padding, the header titled
// (underscores and most dots to spaces, upper case) and centred, cells trimmed and left-aligned,
// a cell's lines on lines of their own. Not tablewriter itself: its width cache is allocated in
// package init (650 KB in every ain process, enough to start a garbage collection during
// `ain render`; issue 16). TestBoxTableMatchesTablewriter and FuzzBoxTable compare the two.
func boxTable(w io.Writer, header []string, rows [][]string) {
	ncol := len(header)
	for _, r := range rows {
		ncol = max(ncol, len(r))
	}
	if ncol == 0 {
		return
	}
	widths := make([]int, ncol)
	split := func(cells []string, head bool) [][]string {
		out := make([][]string, ncol)
		for i := range out {
			c := ""
			if i < len(cells) {
				c = cells[i]
			}
			c = strings.TrimSpace(c)
			if head {
				c = headerTitle(c)
			}
			out[i] = strings.Split(c, "\n")
			for _, l := range out[i] {
				widths[i] = max(widths[i], cellWidth(l))
			}
		}
		return out
	}
	var head [][]string
	if len(header) > 0 {
		head = split(header, true)
	}
	body := make([][][]string, len(rows))
	for i, r := range rows {
		body[i] = split(r, false)
	}
	var b strings.Builder
	rule := func(l, m, r string) {
		b.WriteString(l)
		for i, wd := range widths {
			if i > 0 {
				b.WriteString(m)
			}
			b.WriteString(strings.Repeat("─", wd+2))
		}
		b.WriteString(r + "\n")
	}
	line := func(cells [][]string, center bool) {
		n := 0
		for _, c := range cells {
			n = max(n, len(c))
		}
		for k := range n {
			b.WriteString("│")
			for i, c := range cells {
				if i > 0 {
					b.WriteString("│")
				}
				s := ""
				if k < len(c) {
					s = c[k]
				}
				gap := widths[i] - cellWidth(s)
				left := 0
				if center {
					left = gap / 2
				}
				b.WriteString(" " + strings.Repeat(" ", left) + s + strings.Repeat(" ", gap-left) + " ")
			}
			b.WriteString("│\n")
		}
	}
	rule("┌", "┬", "┐")
	if head != nil {
		line(head, true)
		if len(body) > 0 {
			rule("├", "┼", "┤")
		}
	}
	for _, r := range body {
		line(r, false)
	}
	rule("└", "┴", "┘")
	_, _ = io.WriteString(w, b.String())
}

// headerTitle is tablewriter's header auto-format: the text cut into words where the kind of
// character changes (lower, upper, digit, other; "GPUCount" is "GPU Count"), blank and "_"
// pieces dropped, joined by spaces; then underscores to spaces, dots to spaces unless between
// digits or spaces, trimmed, upper case; a blank header stays one space wide.
func headerTitle(s string) string {
	if utf8.ValidString(s) {
		s = strings.Join(headerWords(s), " ")
	}
	rs := []rune(s)
	numOrSpace := func(j int) bool { return rs[j] == ' ' || ('0' <= rs[j] && rs[j] <= '9') }
	for i, r := range rs {
		switch {
		case r == '_':
			rs[i] = ' '
		case r == '.' && ((i > 0 && !numOrSpace(i-1)) || (i < len(rs)-1 && !numOrSpace(i+1))):
			rs[i] = ' '
		}
	}
	t := strings.TrimSpace(string(rs))
	if t == "" && s != "" {
		t = " "
	}
	return strings.ToUpper(t)
}

func headerWords(s string) []string {
	kind := func(r rune) int {
		switch {
		case unicode.IsLower(r):
			return 1
		case unicode.IsUpper(r):
			return 2
		case unicode.IsDigit(r):
			return 3
		}
		return 4
	}
	var groups [][]rune
	last := 0
	for _, r := range s {
		if k := kind(r); k == last {
			groups[len(groups)-1] = append(groups[len(groups)-1], r)
		} else {
			groups, last = append(groups, []rune{r}), k
		}
	}
	for i := 0; i+1 < len(groups); i++ { // "GPUCount": the capital starts the next word
		if len(groups[i]) > 0 && unicode.IsUpper(groups[i][0]) && unicode.IsLower(groups[i+1][0]) {
			groups[i+1] = append([]rune{groups[i][len(groups[i])-1]}, groups[i+1]...)
			groups[i] = groups[i][:len(groups[i])-1]
		}
	}
	var words []string
	for _, g := range groups {
		if w := string(g); strings.TrimSpace(w) != "" && w != "_" {
			words = append(words, w)
		}
	}
	return words
}

// cellWidth is the columns s takes on a terminal: ANSI colour and hyperlink sequences take none.
func cellWidth(s string) int {
	if !strings.Contains(s, "\x1b") {
		return runewidth.StringWidth(s)
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != 0x1b || i+1 >= len(s) {
			b.WriteByte(s[i])
			continue
		}
		switch s[i+1] {
		case '[': // CSI: parameters, intermediates, one final byte
			j := i + 2
			for j < len(s) && s[j] >= 0x30 && s[j] <= 0x3f {
				j++
			}
			for j < len(s) && s[j] >= 0x20 && s[j] <= 0x2f {
				j++
			}
			if j < len(s) && s[j] >= 0x40 && s[j] <= 0x7e {
				i = j
				continue
			}
		case ']': // OSC: up to BEL or ESC backslash
			if k := strings.IndexAny(s[i+2:], "\x07\x1b"); k >= 0 {
				end := i + 2 + k
				if s[end] == 0x07 {
					i = end
					continue
				}
				if end+1 < len(s) && s[end+1] == '\\' {
					i = end + 1
					continue
				}
			}
		}
		b.WriteByte(s[i])
	}
	return runewidth.StringWidth(b.String())
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
