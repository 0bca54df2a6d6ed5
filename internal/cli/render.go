package cli

import (
	"fmt"

	ucli "github.com/urfave/cli/v2"

	"github.com/ain-hpc/ain/internal/ainerr"
	"github.com/ain-hpc/ain/pkg/jobs"
	"github.com/ain-hpc/ain/pkg/recipe"
	"github.com/ain-hpc/ain/pkg/vllm"
)

type renderOptions struct {
	recipeInput
	entryFlags
	Output string
	Name   string
	API    string
	// AllowUnauth renders a serving recipe without its default API key, as ain serve would.
	AllowUnauth bool
}

func (a *App) renderCommand() *ucli.Command {
	o := &renderOptions{}
	return &ucli.Command{
		Name:      "render",
		Usage:     "print the Kubernetes objects a recipe becomes (no cluster needed)",
		ArgsUsage: "RECIPE",
		Description: "Renders exactly what `ain train` / `ain bench` would apply, as the job API of --api (else the profile's\n" +
			"spec.jobAPI, else the best one the configured cluster serves, else the default: a TrainJob plus its TrainingRuntime\n" +
			"for torch recipes, a kubeflow.org/v2beta1 MPIJob for MPI recipes). Every GPU pod carries the GPU and RDMA\n" +
			"resources, IPC_LOCK, a memory-backed /dev/shm and the NCCL environment of the fabric profile. Output is\n" +
			"deterministic; stderr says which API and why.\n\n" +
			"Examples:\n" +
			"  ain render qlora -o yaml\n" +
			"  ain render allreduce --fabric roce --set nodes=2 --set gpusPerNode=8 -o json\n" +
			"  ain render allreduce --api training-operator   # the legacy kubeflow.org/v1 MPIJob\n" +
			"  ain render vllm --host llm.example.com\n" +
			"  ain render vllm --expose gateway --gateway-class eg --host llm.example.com   # HTTPRoute + Gateway\n" +
			"  ain render my-recipe.yaml --profile cluster.yaml",
		Flags: append(append(o.recipeInput.flags(), o.entryFlags.flags()...),
			outputFlag(&o.Output, "yaml", "yaml or json", "json"),
			&ucli.StringFlag{Name: "name", Usage: "job name (default: the recipe's metadata.name)", Destination: &o.Name},
			apiFlag(&o.API),
			&ucli.BoolFlag{Name: "allow-unauthenticated", Usage: "serving recipes: no API key, as ain serve --allow-unauthenticated (default: the key ain serve keeps or generates)", Destination: &o.AllowUnauth},
		),
		Action: func(c *ucli.Context) error { return a.runRender(c, o) },
	}
}

func (a *App) runRender(c *ucli.Context, o *renderOptions) error {
	if o.Output != "yaml" && o.Output != "json" {
		return ainerr.Usagef("-o %s: render prints yaml or json", o.Output)
	}
	if err := o.entryFlags.set(&o.recipeInput, func() (*recipe.Recipe, error) {
		r, _, err := o.load(c, a.Getenv)
		return r, err
	}); err != nil {
		return err
	}
	r, p, err := o.load(c, a.Getenv)
	if err != nil {
		return err
	}
	a.printWarnings(r)
	b := &jobs.Bundle{}
	if r.Serving != nil {
		// A serving recipe renders what `ain serve` applies (Secrets it would create hold
		// credentials and are never rendered).
		if o.AllowUnauth && r.Serving.APIKeySecret != nil {
			return ainerr.Usagef("--allow-unauthenticated with spec.apiKeySecret %s: choose one", r.Serving.APIKeySecret.Name)
		}
		name := o.Name
		if name == "" {
			name = r.Metadata.Name
		}
		fmt.Fprintf(a.Streams.Err, "# %s\n", vllm.DefaultAuth(r.Serving, name, o.AllowUnauth).Describe())
		a.offlineEntry(r, &o.entryFlags)
		so, err := vllm.BuildObjects(r, p, vllm.ObjectOptions{Name: o.Name, Namespace: a.Global.Namespace})
		if err != nil {
			return ainerr.New(ainerr.Usage, err, "")
		}
		b.Objects = so.All()
	} else if b, err = a.renderJob(r, p, o.API, o.Name); err != nil {
		return err
	}
	out, err := jobs.Encode(b.Objects, o.Output)
	if err != nil {
		return err
	}
	_, err = a.Streams.Out.Write(out)
	return err
}
