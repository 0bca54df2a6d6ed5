package cli

import (
	ucli "github.com/urfave/cli/v2"

	"github.com/ain-hpc/ain/internal/ainerr"
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

func (a *App) runRecipesList(out string) error {
	entries := recipe.List("recipes")
	if out == "json" {
		return a.writeJSON(entries)
	}
	if out != "table" {
		return ainerr.Usagef("-o %s: use table or json", out)
	}
	recipe.WriteListText(a.Streams.Out, entries, a.Streams.IsTTY)
	return nil
}

func (a *App) runRecipesShow(ref string, effective bool) error {
	r, err := recipe.Load(ref, nil)
	if err != nil {
		return asUsage(err, "")
	}
	if !effective {
		return r.WriteAnnotated(a.Streams.Out, ref)
	}
	return r.WriteEffective(a.Streams.Out)
}
