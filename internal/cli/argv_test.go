package cli

import (
	"reflect"
	"strings"
	"testing"

	ucli "github.com/urfave/cli/v2"
)

// argvApp is a small command tree with the shapes ain has: global flags with and without a
// value, a leaf with flags, a nested leaf, and a command that parses its own flags.
func argvApp() *ucli.App {
	return &ucli.App{
		Flags: []ucli.Flag{
			&ucli.StringFlag{Name: "namespace", Aliases: []string{"n"}},
			&ucli.BoolFlag{Name: "verbose", Aliases: []string{"v"}},
		},
		Commands: []*ucli.Command{
			{Name: "render", Aliases: []string{"r"}, Flags: []ucli.Flag{
				&ucli.StringFlag{Name: "output", Aliases: []string{"o"}},
				&ucli.StringSliceFlag{Name: "set"},
				&ucli.BoolFlag{Name: "quiet"},
			}},
			{Name: "doctor", Subcommands: []*ucli.Command{
				{Name: "nccl-log", Flags: []ucli.Flag{&ucli.StringFlag{Name: "output", Aliases: []string{"o"}}}},
			}},
			{Name: "exec", SkipFlagParsing: true},
		},
	}
}

func TestReorderArgs(t *testing.T) {
	for _, c := range []struct {
		name    string
		in      string
		want    string
		wantErr string
	}{
		{"no command", "ain", "ain", ""},
		{"flags after the positional", "ain render qlora -o yaml", "ain render -o yaml -- qlora", ""},
		{"global flag after the leaf", "ain render qlora -n team --quiet", "ain -n team render --quiet -- qlora", ""},
		{"global flag before the command", "ain -n team render qlora", "ain -n team render -- qlora", ""},
		{"bool global among commands", "ain -v render qlora", "ain -v render -- qlora", ""},
		{"flag=value form", "ain render qlora --set=nodes=2 --output=json", "ain render --set=nodes=2 --output=json -- qlora", ""},
		{"repeated slice flag", "ain render --set a=1 qlora --set b=2", "ain render --set a=1 --set b=2 -- qlora", ""},
		{"alias of a command", "ain r qlora -o json", "ain r -o json -- qlora", ""},
		{"after -- everything is positional", "ain render -o yaml -- -weird --set", "ain render -o yaml -- -weird --set", ""},
		{"a lone dash is positional", "ain render -", "ain render -- -", ""},
		{"unknown flag is left for the parser", "ain render qlora --bogus", "ain render --bogus -- qlora", ""},
		{"nested leaf", "ain doctor nccl-log f.log -o json", "ain doctor nccl-log -o json -- f.log", ""},
		{"nested leaf help", "ain doctor nccl-log --help", "ain doctor help nccl-log", ""},
		{"top-level help", "ain render --help", "ain render --help", ""},
		{"command parsing its own flags", "ain exec -o x -- y", "ain exec -o x -- y", ""},
		{"unknown command", "ain frobnicate -o x", "ain frobnicate -o x", ""},
		{"leaf flag missing its value", "ain render qlora -o", "", "flag -o needs a value (e.g. -o=VALUE)"},
		{"global flag missing its value", "ain render -n", "", "flag -n needs a value (e.g. -n=VALUE)"},
		{"global flag first missing its value", "ain --namespace", "", "flag --namespace needs a value (e.g. --namespace=VALUE)"},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := reorderArgs(argvApp(), strings.Fields(c.in))
			if c.wantErr != "" {
				if err == nil || err.Error() != c.wantErr {
					t.Fatalf("%q: err %v, want %q", c.in, err, c.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("%q: %v", c.in, err)
			}
			if want := strings.Fields(c.want); !reflect.DeepEqual(got, want) {
				t.Errorf("%q\n got %q\nwant %q", c.in, got, want)
			}
		})
	}
}
