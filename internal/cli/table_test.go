package cli

import (
	"bytes"
	"strings"
	"testing"

	"github.com/mattn/go-runewidth"
)

// TestTableLayouts: on a terminal a bordered table whose lines are all one display width, with the
// header titled and every cell present; off a terminal plain columns a script can split on spaces.
func TestTableLayouts(t *testing.T) {
	header := []string{"name", "node_count", "state"}
	rows := [][]string{{"qlora-7b", "3", "Running"}, {"nccl", "12", "→ pending"}}

	var tty bytes.Buffer
	(&App{Streams: Streams{Out: &tty, IsTTY: true}}).table(header, rows)
	lines := strings.Split(strings.TrimRight(tty.String(), "\n"), "\n")
	if len(lines) != 6 { // top border, header, rule, two rows, bottom border
		t.Errorf("terminal table has %d lines, want 6:\n%s", len(lines), tty.String())
	}
	width := runewidth.StringWidth(lines[0])
	for _, l := range lines {
		if runewidth.StringWidth(l) != width {
			t.Errorf("line %q is %d wide, the first %d:\n%s", l, runewidth.StringWidth(l), width, tty.String())
		}
	}
	for _, want := range []string{"NAME", "NODE COUNT", "STATE", "qlora-7b", "→ pending", "12"} {
		if !strings.Contains(tty.String(), want) {
			t.Errorf("terminal table lacks %q:\n%s", want, tty.String())
		}
	}

	var plain bytes.Buffer
	(&App{Streams: Streams{Out: &plain}}).table(header, rows)
	want := "name      node_count  state\nqlora-7b  3           Running\nnccl      12          → pending\n"
	if plain.String() != want {
		t.Errorf("plain table:\n%q\nwant\n%q", plain.String(), want)
	}
}
