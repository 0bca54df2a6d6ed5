package cli

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	ucli "github.com/urfave/cli/v2"
	"sigs.k8s.io/yaml"

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
		b, err := yaml.Marshal(p)
		if err != nil {
			return err
		}
		_, err = a.Streams.Out.Write(b)
		return err
	case "json":
		return a.writeJSON(map[string]any{"profile": p, "origins": p.Origins, "ncclEnv": nccl.FabricEnv(p.NCCLFabric())})
	case "text":
	default:
		return ainerr.Usagef("-o %s: use text, yaml or json", out)
	}
	w := a.Streams.Out
	src := p.Source
	if src == "" {
		src = "built-in defaults (no profile file; `ain profile init` writes one)"
	}
	fmt.Fprintf(w, "profile: %s\n\n", src)
	vals := profileValues(p)
	rows := [][]string{}
	for _, f := range profile.FieldPaths() {
		origin := p.Origins[f]
		if origin == "" {
			origin = "unset"
		}
		rows = append(rows, []string{f, vals[f], origin})
	}
	a.table([]string{"FIELD", "VALUE", "FROM"}, rows)
	env := nccl.FabricEnv(p.NCCLFabric())
	fmt.Fprintf(w, "\nNCCL environment for fabric %s:\n", p.Spec.Fabric)
	for _, k := range nccl.SortedNames(env) {
		fmt.Fprintf(w, "  %s=%s\n", k, env[k])
	}
	if p.RDMA() {
		fmt.Fprintf(w, "\nEvery GPU pod also gets: %s: %d (request = limit), IPC_LOCK, a memory-backed /dev/shm", p.Spec.RDMA.Resource, p.Spec.RDMA.Count)
		if len(p.Spec.Networks) > 0 {
			fmt.Fprintf(w, ", Multus networks %s", strings.Join(p.Spec.Networks, ","))
		}
		fmt.Fprintln(w, ".")
	} else {
		fmt.Fprintln(w, "\nSocket fabric: no RDMA resource, NCCL_IB_DISABLE=1 (the TCP baseline).")
	}
	return nil
}

func profileValues(p *profile.Profile) map[string]string {
	s := p.Spec
	tc := ""
	if s.TrafficClass != nil {
		tc = fmt.Sprint(*s.TrafficClass)
	}
	sel := []string{}
	for k, v := range s.NodeSelector {
		sel = append(sel, k+"="+v)
	}
	tol := []string{}
	for _, t := range s.Tolerations {
		tol = append(tol, fmt.Sprintf("%s:%s:%s", t.Key, t.Operator, t.Effect))
	}
	return map[string]string{
		"spec.fabric": s.Fabric, "spec.gpuResource": s.GPUResource, "spec.rdma.resource": s.RDMA.Resource,
		"spec.rdma.count": fmt.Sprint(s.RDMA.Count), "spec.networks": strings.Join(s.Networks, ","),
		"spec.hcas": strings.Join(s.HCAs, ","), "spec.gidIndex": s.GIDIndex, "spec.trafficClass": tc,
		"spec.socketIfname": s.SocketIfname, "spec.gdrLevel": s.GDRLevel, "spec.lineRate": s.LineRate,
		"spec.nodeSelector": strings.Join(sel, ","), "spec.tolerations": strings.Join(tol, ","),
	}
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
	if _, err := os.Stat(path); err == nil && !force {
		return ainerr.New(ainerr.Usage, fmt.Errorf("%s exists", path), "use --force to overwrite it, or give another path")
	} else if err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(path, []byte(profile.Template), 0o644); err != nil {
		return err
	}
	fmt.Fprintf(a.Streams.Out, "wrote %s: edit it from ibstat / ibv_devinfo -v and your NicClusterPolicy, then run `ain profile show`\n", path)
	return nil
}
