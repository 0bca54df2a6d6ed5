package cli

import (
	"errors"
	"fmt"

	ucli "github.com/urfave/cli/v2"

	"github.com/ain-hpc/ain/internal/ainerr"
	"github.com/ain-hpc/ain/pkg/nccl"
	"github.com/ain-hpc/ain/pkg/profile"
)

func (a *App) profileCommand() *ucli.Command {
	in := &recipeInput{}
	var out string
	var force bool
	return &ucli.Command{
		Name:  "profile",
		Usage: "the cluster's fabric profile: how RDMA is done here",
		Subcommands: []*ucli.Command{
			{
				Name:  "show",
				Usage: "print the effective profile, where each value came from, and the NCCL environment it gives",
				Flags: []ucli.Flag{
					&ucli.StringFlag{Name: "profile", Usage: "profile file", Destination: &in.Profile},
					&ucli.StringFlag{Name: "fabric", Usage: "override the fabric: ib, roce or socket", Destination: &in.Fabric},
					outputFlag(&out, "text", "text, yaml or json", "yaml", "json"),
				},
				Action: func(c *ucli.Context) error { return a.runProfileShow(in, out) },
			},
			a.profileDetectCommand(),
			{
				Name:      "init",
				Usage:     "write a commented profile to start from (default: $XDG_CONFIG_HOME/ain/profile.yaml)",
				ArgsUsage: "[FILE|-]",
				Flags:     []ucli.Flag{&ucli.BoolFlag{Name: "force", Usage: "overwrite an existing file", Destination: &force}},
				Action: func(c *ucli.Context) error {
					return a.runProfileInit(c.Args().First(), force)
				},
			},
		},
	}
}

func (a *App) runProfileShow(in *recipeInput, out string) error {
	p, err := in.loadProfile(a.Getenv)
	if err != nil {
		return err
	}
	switch out {
	case "yaml":
		return p.WriteYAML(a.Streams.Out)
	case "json":
		return a.writeJSON(map[string]any{"profile": p, "origins": p.Origins, "ncclEnv": nccl.FabricEnv(p.NCCLFabric())})
	case "text":
	default:
		return ainerr.Usagef("-o %s: use text, yaml or json", out)
	}
	p.WriteText(a.Streams.Out, profile.TextOptions{TTY: a.Streams.IsTTY, NoFile: "built-in defaults (no profile file; `ain profile init` writes one)"})
	return nil
}

func (a *App) runProfileInit(path string, force bool) error {
	if path == "-" {
		_, err := fmt.Fprint(a.Streams.Out, profile.Template)
		return err
	}
	if path == "" {
		path = profile.DefaultPath(a.Getenv)
		if path == "" {
			return ainerr.Usagef("no HOME or XDG_CONFIG_HOME: give a file, e.g. ain profile init ./cluster.yaml")
		}
	}
	var exists *profile.ExistsError
	if err := profile.WriteTemplate(path, force); errors.As(err, &exists) {
		return ainerr.New(ainerr.Usage, err, "use --force to overwrite it, or give another path")
	} else if err != nil {
		return err
	}
	fmt.Fprintf(a.Streams.Out, "wrote %s: edit it from ibstat / ibv_devinfo -v and your NicClusterPolicy, then run `ain profile show`\n", path)
	return nil
}
