package cli

import (
	"regexp"
	"testing"

	ucli "github.com/urfave/cli/v2"
)

// urfave/cli shows the first backquoted word of a flag's usage as its value placeholder
// ("--results DIR"); a backquoted command there printed "--results ain bench allreduce".
// Placeholders are upper case, with no spaces (FILE, DIR, PATH=VALUE, [NAMESPACE/]NAME[:LISTENER]).
func TestFlagPlaceholders(t *testing.T) {
	quoted := regexp.MustCompile("`([^`]*)`")
	placeholder := regexp.MustCompile(`^[A-Z0-9_.=:/\[\]<>-]+$`)
	var walk func(path string, cmds []*ucli.Command)
	check := func(path string, flags []ucli.Flag) {
		for _, f := range flags {
			d, ok := f.(ucli.DocGenerationFlag)
			if !ok {
				continue
			}
			if m := quoted.FindStringSubmatch(d.GetUsage()); m != nil && !placeholder.MatchString(m[1]) {
				t.Errorf("%s --%s: placeholder %q (usage %q): backquote only the value's name", path, f.Names()[0], m[1], d.GetUsage())
			}
		}
	}
	walk = func(path string, cmds []*ucli.Command) {
		for _, c := range cmds {
			check(path+" "+c.Name, c.Flags)
			walk(path+" "+c.Name, c.Subcommands)
		}
	}
	app := (&App{Getenv: func(string) string { return "" }}).newApp()
	check("ain", app.Flags)
	walk("ain", app.Commands)
}
