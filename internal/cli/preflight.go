package cli

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"time"

	ucli "github.com/urfave/cli/v2"

	"github.com/ain-hpc/ain/internal/ainerr"
	"github.com/ain-hpc/ain/pkg/jobs"
	"github.com/ain-hpc/ain/pkg/kube"
	"github.com/ain-hpc/ain/pkg/preflight"
	"github.com/ain-hpc/ain/pkg/profile"
	"github.com/ain-hpc/ain/pkg/recipe"
)

type preflightOptions struct {
	recipeInput
	Nodes        string
	Output       string
	ProbeImage   string
	ProbeTimeout time.Duration
	NoProbes     bool
	Job          string
	API          string
	PrintRole    bool
	Subject      string
	NodeRead     bool
	ReadTest     string
	SaveResult   string
}

func (a *App) preflightCommand() *ucli.Command {
	o := &preflightOptions{}
	return &ucli.Command{
		Name:      "preflight",
		Usage:     "check the cluster is ready for a recipe: permissions, CRDs, GPU/RDMA nodes, Multus networks, IB ports, DNS",
		ArgsUsage: "[RECIPE]",
		Description: "Every check is PASS, WARN or FAIL with its evidence and a fix; a table on a terminal, plain columns otherwise, JSON with -o json.\n" +
			"IB ports: one short-lived probe pod per candidate node (pinned to it, requesting the RDMA resource) dumps\n" +
			"/sys/class/infiniband; LinkUp + INIT fails (no subnet manager), RoCE ports report the RoCE v2 GID index.\n" +
			"Probe pods are deleted afterwards, also on Ctrl-C. With RECIPE, enough nodes must fit its nodes x gpusPerNode.\n" +
			"`ain train` and `ain bench` run it first (a passing result is reused for 5 minutes; --skip-preflight skips it).\n\n" +
			"Exit status: 0 when nothing FAILs (WARNs allowed), 4 on any FAIL, 7/8 when the cluster does not answer or\n" +
			"refuses the credentials.\n\n" +
			"Examples:\n  ain preflight\n  ain preflight allreduce --set nodes=4 --nodes pool=h100\n  ain preflight --profile roce.yaml -o json",
		Flags: append(o.recipeInput.flags(),
			&ucli.StringFlag{Name: "nodes", Usage: "label `SELECTOR` narrowing the candidate nodes (on top of the profile's nodeSelector)", Destination: &o.Nodes},
			outputFlag(&o.Output, "table", "table (plain columns off a terminal) or json", "json"),
			&ucli.StringFlag{Name: "probe-image", Usage: "image of the probe pods (sh + grep; default $AIN_PROBE_IMAGE, else " + preflight.DefaultProbeImage + ")", Destination: &o.ProbeImage, Action: imageReference("probe-image")},
			&ucli.DurationFlag{Name: "probe-timeout", Value: 2 * time.Minute, Usage: "how long the probe pods may take", Destination: &o.ProbeTimeout},
			&ucli.BoolFlag{Name: "no-probes", Usage: "skip the probe pods (IB ports, DNS): API-only checks", Destination: &o.NoProbes},
			&ucli.StringFlag{Name: "read-throughput", Usage: "the model check also reads about `SIZE` (e.g. 1G) of the model's weight files from the shared volume, after the other checks and within --probe-timeout, and reports the read throughput (one stream of 16 MiB O_DIRECT reads: a lower bound of a loader's; --save-result keeps it for ain report)", Destination: &o.ReadTest, Action: byteSize("read-throughput")},
			&ucli.StringFlag{Name: "save-result", Usage: "also write the result as JSON to `FILE` (what -o json prints; ain report reads the --read-throughput figure from it)", Destination: &o.SaveResult},
			&ucli.StringFlag{Name: "job", Usage: "a running job whose Service names the DNS check resolves (default: every running ain PyTorchJob or TrainJob)", Destination: &o.Job},
			apiFlag(&o.API),
			&ucli.BoolFlag{Name: "print-role", Usage: "print the namespaced Role ain needs and a RoleBinding for --subject (YAML for kubectl apply -f -); no cluster is contacted", Destination: &o.PrintRole},
			&ucli.StringFlag{Name: "subject", Value: "User:ain-user", Usage: "with --print-role: who gets the Role, `KIND:NAME` (User, Group or ServiceAccount)", Destination: &o.Subject},
			&ucli.BoolFlag{Name: "node-read", Usage: "with --print-role: also the optional ClusterRole to read nodes (preflight's node checks, explaining Pending pods)", Destination: &o.NodeRead},
		),
		Action: func(c *ucli.Context) error { return a.runPreflight(c, o) },
	}
}

func (a *App) runPreflight(c *ucli.Context, o *preflightOptions) error {
	if o.PrintRole {
		return a.printRole(o)
	}
	var r *recipe.Recipe
	var p *profile.Profile
	var err error
	if o.File != "" || c.NArg() > 0 {
		r, p, err = o.load(c, a.Getenv)
	} else {
		p, err = o.loadProfile(a.Getenv)
	}
	if err != nil {
		return err
	}
	if r != nil && r.Serving != nil {
		a.warnImage(r.Serving.Image)
	}
	forced, err := forcedAPI(o.API, p)
	if err != nil {
		return err
	}
	kc, opts, err := a.probeSetup(r, p, o.ProbeImage, o.ProbeTimeout)
	if err != nil {
		return err
	}
	opts.API = forced
	if o.SaveResult != "" {
		if err := writableDir("save-result", filepath.Dir(o.SaveResult)); err != nil {
			return err
		}
	}
	opts.NodeSelector, opts.Job, opts.SkipProbes = o.Nodes, o.Job, o.NoProbes
	if o.ReadTest != "" {
		opts.Storage.ReadBytes, _ = recipe.ParseBytes(o.ReadTest) // checked by the flag's action
	}
	if a.Streams.IsTTY || a.Global.Verbose > 0 {
		opts.Progress = func(s string) { fmt.Fprintf(a.Streams.Err, "preflight: %s\n", s) }
	}
	res, err := preflight.Run(c.Context, opts)
	if err != nil {
		return a.preflightError(c.Context, kc, err)
	}
	_ = a.preflightCache().Save(preflight.Key(opts), res)
	if err := res.SaveJSON(o.SaveResult); err != nil {
		return ainerr.New(ainerr.Failure, fmt.Errorf("--save-result %s: %w", o.SaveResult, err), "")
	}
	if o.Output == "json" {
		if err := a.writeJSON(res); err != nil {
			return err
		}
	} else {
		res.WriteText(a.Streams.Out, preflight.TextOptions{TTY: a.Streams.IsTTY, Fix: withNext})
	}
	if res.Failed() {
		return quiet(ainerr.PreflightFailed)
	}
	return nil
}

// probeSetup connects for a command that runs probe pods (preflight, doctor topo/counters --node):
// the clients, the sandbox note, and the preflight options for r and p with --image (when given)
// and the probe timeout.
func (a *App) probeSetup(r *recipe.Recipe, p *profile.Profile, image string, timeout time.Duration) (*kube.Clients, preflight.Options, error) {
	kc, err := a.clients()
	if err != nil {
		return nil, preflight.Options{}, err
	}
	a.sandboxNote(kc)
	opts := a.preflightOptions(kc, r, p)
	if image != "" {
		opts.ProbeImage = image
	}
	opts.ProbeTimeout = timeout
	return kc, opts, nil
}

// preflightOptions fills the options every preflight run shares (preflight.OptionsFor).
func (a *App) preflightOptions(kc *kube.Clients, r *recipe.Recipe, p *profile.Profile) preflight.Options {
	return preflight.OptionsFor(kc, r, p, a.Getenv("AIN_PROBE_IMAGE"), a.Now)
}

func (a *App) preflightCache() preflight.Cache {
	return preflight.Cache{Dir: preflight.CacheDir(a.Getenv), TTL: preflight.DefaultCacheTTL, Now: a.Now}
}

func (a *App) preflightError(ctx context.Context, kc *kube.Clients, err error) error {
	if ctx.Err() != nil || errors.Is(err, context.Canceled) {
		return ainerr.New(ainerr.Cancelled, errors.New("interrupted: probe pods deleted"), "")
	}
	return kc.Classify(err, "preflight")
}

// preflightGate runs the preflight before `ain train`/`ain bench` (or says it was skipped). A
// passing result of the last few minutes for the same cluster, namespace, profile and recipe
// shape is reused. It prints the WARN/FAIL checks to stderr and returns an *ainerr.Error with
// PreflightFailed when a check FAILs.
func (a *App) preflightGate(ctx context.Context, kc *kube.Clients, r *recipe.Recipe, p *profile.Profile, api jobs.API, skip bool) error {
	w := a.Streams.Err
	if skip {
		fmt.Fprintln(w, "preflight: SKIPPED (--skip-preflight): the cluster's readiness was not checked")
		return nil
	}
	opts := a.preflightOptions(kc, r, p)
	opts.API = api
	opts.Progress = func(s string) { fmt.Fprintf(w, "preflight: %s\n", s) }
	res, err := preflight.Gate{Cache: a.preflightCache()}.Run(ctx, opts)
	if failed := (*preflight.FailedError)(nil); errors.As(err, &failed) {
		failed.Result.WriteText(w, preflight.TextOptions{Brief: true, Fix: withNext})
		return ainerr.New(ainerr.PreflightFailed, err,
			"fix the FAIL checks above (`ain preflight` shows them all), or submit anyway with --skip-preflight")
	} else if err != nil {
		return a.preflightError(ctx, kc, err)
	}
	res.WriteText(w, preflight.TextOptions{Brief: true, Fix: withNext, Rerun: "`ain preflight` re-runs it all"})
	return nil
}

// printRole prints the Role ain needs in the namespace (-n, else "default") and its binding
// (docs/rbac.md explains each rule).
func (a *App) printRole(o *preflightOptions) error {
	objs, err := preflight.RoleObjects(a.Global.Namespace, o.Subject, o.NodeRead)
	if err != nil {
		return ainerr.Usagef("--subject %v", err)
	}
	if !o.NodeRead {
		fmt.Fprintln(a.Streams.Err, "# optional, cluster-wide: reading nodes (preflight's node checks, explaining Pending pods); without it those WARN. Add --node-read to print it.")
	}
	return a.printObjects(objs, "yaml")
}
