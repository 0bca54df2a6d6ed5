package cli

import (
	"bytes"
	"testing"

	"github.com/olekukonko/tablewriter"
)

// tablewriterTable is what ain drew on a terminal before boxTable: tablewriter v1.1.5's defaults.
func tablewriterTable(header []string, rows [][]string) string {
	var b bytes.Buffer
	t := tablewriter.NewWriter(&b)
	anys := func(s []string) []any {
		out := make([]any, len(s))
		for i, v := range s {
			out[i] = v
		}
		return out
	}
	if len(header) > 0 {
		t.Header(anys(header)...)
	}
	for _, r := range rows {
		_ = t.Append(anys(r)...)
	}
	_ = t.Render()
	return b.String()
}

func ownTable(header []string, rows [][]string) string {
	var b bytes.Buffer
	boxTable(&b, header, rows)
	return b.String()
}

// boxTableCases are tables ain prints (jobs list, models, bench comparison, doctor findings) and
// the cell shapes that change a table's layout.
var boxTableCases = []struct {
	header []string
	rows   [][]string
}{
	{[]string{"NAME", "API", "STATUS", "AGE"}, [][]string{{"qlora-7b", "trainer.kubeflow.org/v1alpha1", "Running", "3m"}, {"nccl", "kubeflow.org/v2beta1", "Succeeded", "1h"}}},
	{[]string{"name", "node_count", "Status Ok", ""}, [][]string{{"a", "12", "Running", "x"}, {"longer-name", "3.5", "", "y"}}},
	{[]string{"algo", "size", "busbw GB/s", "vs. base", "v1.2"}, [][]string{{"ring", "1 GiB", "182.4", "+3.1%", ""}}},
	{[]string{"check", "result"}, [][]string{{"GPUDirect RDMA", "ok\nnv_peer_mem loaded"}, {"  padded  ", "\ttab"}, {"two\nlines\nhere", ""}}},
	{[]string{"a", "b"}, nil},
	{[]string{"a", "b", "c"}, [][]string{{"1"}, {"1", "2", "3"}}},
	{[]string{"model", "state"}, [][]string{{"\x1b[32mready\x1b[0m", "✓"}, {"qwen", "→ pending"}}},
	{[]string{"_x_", "a.b", "1.2", "a. b", ".", "_"}, [][]string{{"1", "2", "3", "4", "5", "6"}}},
}

// TestBoxTableMatchesTablewriter: boxTable draws what tablewriter drew, character for character.
func TestBoxTableMatchesTablewriter(t *testing.T) {
	for _, c := range boxTableCases {
		if got, want := ownTable(c.header, c.rows), tablewriterTable(c.header, c.rows); got != want {
			t.Errorf("header %q rows %q:\n%s\ntablewriter:\n%s", c.header, c.rows, got, want)
		}
	}
}

// FuzzBoxTable: on any two-column table of printable text, spaces and newlines, boxTable and
// tablewriter agree.
func FuzzBoxTable(f *testing.F) {
	f.Add("name", "state", "qlora", "Running\nsince 3m", " x ", "")
	f.Add("a_b", "v.1", "1.5", "→", "", "y")
	f.Fuzz(func(t *testing.T, h1, h2, a, b, c, d string) {
		for _, s := range []string{h1, h2, a, b, c, d} {
			for _, r := range s {
				if (r < 0x20 && r != '\n') || r == 0x7f || r > 0x7e && r != '→' && r != '✓' && r != '✗' {
					t.Skip("outside what ain prints")
				}
			}
		}
		header, rows := []string{h1, h2}, [][]string{{a, b}, {c, d}}
		if got, want := ownTable(header, rows), tablewriterTable(header, rows); got != want {
			t.Errorf("header %q rows %q:\n%s\ntablewriter:\n%s", header, rows, got, want)
		}
	})
}
