package cli

import (
	"errors"
	"fmt"
	"strings"

	ucli "github.com/urfave/cli/v2"

	"github.com/ain-hpc/ain/internal/ainerr"
	"github.com/ain-hpc/ain/pkg/profile"
	"github.com/ain-hpc/ain/pkg/recipe"
	"github.com/ain-hpc/ain/pkg/strict"
)

// recipeInput is what every command that takes a recipe shares: the recipe reference, --set
// overrides, the profile and the fabric override.
type recipeInput struct {
	File    string
	Sets    ucli.StringSlice
	Profile string
	Fabric  string
	// flagSets are fields the command's own flags set (ain serve --host sets ingress.host),
	// applied before --set (an explicit --set wins); a problem in one names its flag.
	flagSets []recipe.Override
}

// setBy records that flag (as the user typed it, "--host h") sets the recipe field PATH=VALUE.
func (in *recipeInput) setBy(flag, set string) {
	in.flagSets = append(in.flagSets, recipe.Override{Set: set, Flag: flag})
}

func (in *recipeInput) flags() []ucli.Flag {
	return []ucli.Flag{
		&ucli.StringFlag{Name: "file", Aliases: []string{"f"}, Usage: "recipe file (instead of the positional RECIPE)", Destination: &in.File},
		&ucli.StringSliceFlag{Name: "set", Usage: "override a recipe field, `PATH=VALUE` (paths relative to spec: nodes=2, nccl.env.NCCL_ALGO=Ring); repeatable", Destination: &in.Sets},
		&ucli.StringFlag{Name: "profile", Usage: "fabric profile file (default: $AIN_PROFILE, $XDG_CONFIG_HOME/ain/profile.yaml, else built-in)", Destination: &in.Profile},
		&ucli.StringFlag{Name: "fabric", Usage: "override the profile's fabric: ib, roce or socket", Destination: &in.Fabric},
	}
}

// ref returns the recipe named by -f or the first positional argument.
func (in *recipeInput) ref(c *ucli.Context) (string, error) {
	args := c.Args().Slice()
	switch {
	case in.File != "" && len(args) > 0:
		return "", ainerr.Usagef("give the recipe either as an argument (%s) or with -f (%s), not both", args[0], in.File)
	case in.File != "":
		return in.File, nil
	case len(args) == 1:
		return args[0], nil
	case len(args) > 1:
		return "", ainerr.Usagef("one recipe at a time (got %s)", strings.Join(args, " "))
	}
	return "", ainerr.Usagef("name a recipe: a built-in (%s), ./recipes/NAME.yaml, or a file", strings.Join(recipe.BuiltinNames(), ", "))
}

// load resolves, decodes and validates the recipe and the profile. Problems are usage errors.
func (in *recipeInput) load(c *ucli.Context, getenv func(string) string) (*recipe.Recipe, *profile.Profile, error) {
	ref, err := in.ref(c)
	if err != nil {
		return nil, nil, err
	}
	r, err := recipe.LoadOverrides(ref, append(append([]recipe.Override{}, in.flagSets...), recipe.SetOverrides(in.Sets.Value())...))
	if err != nil {
		hint := "fix the fields named above; `ain recipes list` and `ain recipes show NAME` print valid examples"
		if name, ok := recipe.BuiltinRef(ref); ok {
			hint = "fix the fields named above; `ain recipes show " + name + "` prints a valid example"
		}
		return nil, nil, asUsage(err, hint)
	}
	p, err := in.loadProfile(getenv)
	if err != nil {
		return nil, nil, err
	}
	return r, p, nil
}

func (in *recipeInput) loadProfile(getenv func(string) string) (*profile.Profile, error) {
	p, err := profile.Load(profile.Options{Path: in.Profile, Fabric: in.Fabric, Getenv: getenv})
	if err != nil {
		return nil, asUsage(err, "`ain profile init` writes a commented profile to start from")
	}
	return p, nil
}

// asUsage marks recipe/profile problems as usage errors (exit 2), keeping their text.
func asUsage(err error, hint string) error {
	if ps, ok := errors.AsType[strict.Problems](err); ok {
		return ainerr.New(ainerr.Usage, ps.Counted(), hint)
	}
	return ainerr.New(ainerr.Usage, err, "")
}

// printWarnings prints recipe warnings (unknown NCCL variables ...) to stderr.
func (a *App) printWarnings(r *recipe.Recipe) {
	for _, w := range r.Warnings() {
		fmt.Fprintf(a.Streams.Err, "warning: %s\n", w.Error())
	}
}
