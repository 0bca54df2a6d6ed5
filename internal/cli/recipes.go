package cli

import (
	"bytes"
	"fmt"
	"path/filepath"
	"sort"
	"strings"

	ucli "github.com/urfave/cli/v2"

	"github.com/ain-hpc/ain/internal/ainerr"
	"github.com/ain-hpc/ain/pkg/input"
	"github.com/ain-hpc/ain/pkg/recipe"
)

func (a *App) recipesCommand() *ucli.Command {
	var listOut string
	var effective bool
	return &ucli.Command{
		Name:  "recipes",
		Usage: "list and print recipes (built-in and ./recipes/*.yaml)",
		Subcommands: []*ucli.Command{
			{
				Name:  "list",
				Usage: "list built-in recipes and those in ./recipes",
				Flags: []ucli.Flag{outputFlag(&listOut, "table", "table or json", "json")},
				Action: func(c *ucli.Context) error {
					return a.runRecipesList(listOut)
				},
			},
			{
				Name:        "show",
				Usage:       "print a recipe as written (commented, ready to copy), then the defaults ain applies",
				ArgsUsage:   "RECIPE",
				Description: "Examples:\n  ain recipes show qlora > my-qlora.yaml\n  ain recipes show allreduce --effective",
				Flags: []ucli.Flag{
					&ucli.BoolFlag{Name: "effective", Usage: "print the recipe with every default filled in, instead of as written", Destination: &effective},
				},
				Action: func(c *ucli.Context) error {
					if c.NArg() != 1 {
						return ainerr.Usagef("name one recipe: ain recipes show NAME (see ain recipes list)")
					}
					return a.runRecipesShow(c.Args().First(), effective)
				},
			},
		},
	}
}

type recipeEntry struct {
	Name        string `json:"name"`
	Kind        string `json:"kind"`
	Source      string `json:"source"`
	Description string `json:"description"`
	Error       string `json:"error,omitempty"`
}

func (a *App) runRecipesList(out string) error {
	var entries []recipeEntry
	seen := map[string]bool{}
	local, _ := filepath.Glob(filepath.Join("recipes", "*.yaml"))
	sort.Strings(local)
	for _, f := range local {
		name := strings.TrimSuffix(filepath.Base(f), ".yaml")
		data, err := input.ReadFile(f, recipe.MaxFileBytes)
		if err != nil {
			continue // a recipe file that cannot be listed is reported when it is used
		}
		if b, ok := recipe.Builtin(name); ok && bytes.Equal(b, data) {
			continue // the built-in itself (running inside ain's repository)
		}
		seen[name] = true
		entries = append(entries, describeRecipe(name, f, data))
	}
	for _, name := range recipe.BuiltinNames() {
		data, _ := recipe.Builtin(name)
		e := describeRecipe(name, "builtin", data)
		if seen[name] {
			e.Source = "builtin (shadowed by ./recipes/" + name + ".yaml)"
		}
		entries = append(entries, e)
	}
	if out == "json" {
		return a.writeJSON(entries)
	}
	if out != "table" {
		return ainerr.Usagef("-o %s: use table or json", out)
	}
	rows := [][]string{}
	for _, e := range entries {
		desc := e.Description
		if e.Error != "" {
			desc = "INVALID: " + e.Error
		}
		rows = append(rows, []string{e.Name, e.Kind, e.Source, desc})
	}
	a.table([]string{"NAME", "KIND", "SOURCE", "DESCRIPTION"}, rows)
	return nil
}

func describeRecipe(name, source string, data []byte) recipeEntry {
	e := recipeEntry{Name: name, Source: source}
	src := source
	if source == "builtin" {
		src = "builtin:" + name
	}
	r, err := recipe.Parse(src, data, nil)
	if err != nil {
		first := strings.SplitN(err.Error(), "\n", 2)[0]
		e.Error = first
		return e
	}
	e.Kind, e.Description = r.Kind, r.Metadata.Description
	return e
}

func (a *App) runRecipesShow(ref string, effective bool) error {
	r, err := recipe.Load(ref, nil)
	if err != nil {
		return asUsage(err, "")
	}
	if effective {
		b, err := r.Effective()
		if err != nil {
			return err
		}
		fmt.Fprintf(a.Streams.Out, "# %s with ain's defaults applied\n", r.Source)
		_, err = a.Streams.Out.Write(b)
		return err
	}
	out := a.Streams.Out
	out.Write(r.Raw)
	if len(r.Raw) > 0 && r.Raw[len(r.Raw)-1] != '\n' {
		fmt.Fprintln(out)
	}
	if len(r.Defaulted) > 0 {
		fmt.Fprintf(out, "#\n# Defaults ain applies to fields this recipe leaves unset (ain recipes show %s --effective):\n", ref)
		for _, d := range r.Defaulted {
			fmt.Fprintf(out, "#   %s: %s\n", d.Path, d.Value)
		}
	}
	return nil
}
