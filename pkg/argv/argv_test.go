package argv

import (
	"slices"
	"strings"
	"testing"
)

// A tree of plain data reorders as the CLI's: globals first, the leaf's flags after its name,
// positionals after --, a nested leaf's --help asked of its parent, a raw command untouched.
func TestReorder(t *testing.T) {
	root := &Command{Flags: map[string]bool{"n": true, "v": false}, Subcommands: []*Command{
		{Names: []string{"serve"}, Flags: map[string]bool{"replicas": true}, Subcommands: []*Command{
			{Names: []string{"delete", "rm"}, Flags: map[string]bool{"yes": false}},
		}},
		{Names: []string{"exec"}, Raw: true},
	}}
	for in, want := range map[string]string{
		"ain serve vllm --replicas 2 -n team":    "ain -n team serve --replicas 2 -- vllm",
		"ain serve rm x --yes -v":                "ain -v serve rm --yes -- x",
		"ain serve delete --help":                "ain serve help delete",
		"ain exec --foo x -n y":                  "ain exec --foo x -n y",
		"ain serve vllm --replicas=3 -- --weird": "ain serve --replicas=3 -- vllm --weird",
	} {
		got, err := Reorder(root, strings.Fields(in))
		if err != nil || !slices.Equal(got, strings.Fields(want)) {
			t.Errorf("%q: %q, %v; want %q", in, got, err, want)
		}
	}
	if _, err := Reorder(root, strings.Fields("ain serve vllm --replicas")); err == nil || err.Error() != "flag --replicas needs a value (e.g. --replicas=VALUE)" {
		t.Errorf("missing value: %v", err)
	}
}
