package cli

import (
	"fmt"
	"time"

	ucli "github.com/urfave/cli/v2"

	"github.com/ain-hpc/ain/internal/ainerr"
	"github.com/ain-hpc/ain/pkg/jobs"
	"github.com/ain-hpc/ain/pkg/kube"
	"github.com/ain-hpc/ain/pkg/profile"
	"github.com/ain-hpc/ain/pkg/recipe"
)

// apiFlag is --api: the workload API a job is submitted as (train, bench allreduce, render).
func apiFlag(dest *string) ucli.Flag {
	return &ucli.StringFlag{Name: "api", Destination: dest,
		Usage: "job API: auto (the best the cluster serves; with no cluster: trainer for torch recipes, mpi-operator for MPI recipes), " +
			"trainer (TrainJob + its TrainingRuntime), mpi-operator (kubeflow.org/v2beta1 MPIJob), training-operator (kubeflow.org/v1); " +
			"default: the profile's spec.jobAPI, else auto"}
}

// forcedAPI is --api, else the profile's spec.jobAPI, else auto; the error names the one at fault.
func forcedAPI(flag string, p *profile.Profile) (jobs.API, error) {
	if flag != "" {
		a, err := jobs.ParseAPI(flag)
		if err != nil {
			return "", ainerr.Usagef("--api %s: %v", flag, err)
		}
		return a, nil
	}
	a, err := jobs.ParseAPI(p.Spec.JobAPI)
	if err != nil {
		return "", ainerr.Usagef("profile spec.jobAPI: %v", err)
	}
	return a, nil
}

// chooseBackend picks the job API for r: forced (--api, profile), else the best the cluster
// serves (discovery); with kc nil (render, --dry-run=client) the documented default. Problems
// are usage errors whose hint says what to do, never to install a CRD that replaces one in use.
func (a *App) chooseBackend(kc *kube.Clients, r *recipe.Recipe, p *profile.Profile, flag string) (jobs.Backend, error) {
	forced, err := forcedAPI(flag, p)
	if err != nil {
		return nil, err
	}
	served := jobs.Served{}
	if kc != nil {
		if served, err = jobs.Discover(kc.Discovery); err != nil {
			return nil, kc.Classify(err, "asking the API server which job APIs it serves")
		}
	}
	b, err := jobs.Choose(r, served, forced)
	if err != nil {
		return nil, a.choiceError(err)
	}
	return b, nil
}

// renderDiscoveryTimeout bounds render's question to a cluster: render works without one.
const renderDiscoveryTimeout = 3 * time.Second

// renderBackend is chooseBackend for render: the cluster's APIs when a cluster is configured and
// answers within renderDiscoveryTimeout, else (no kubeconfig, unreachable) the profile's choice
// or the documented default. It says on stderr which, so the output's API is never a surprise.
func (a *App) renderBackend(r *recipe.Recipe, p *profile.Profile, flag string) (jobs.Backend, error) {
	forced, err := forcedAPI(flag, p)
	if err != nil {
		return nil, err
	}
	b, why, err := jobs.ChooseForRender(r, forced, a.clusterConfig, renderDiscoveryTimeout)
	if err != nil {
		return nil, a.choiceError(err)
	}
	fmt.Fprintf(a.Streams.Err, "job API: %s (%s)\n", b.API().Describe(), why)
	return b, nil
}

// choiceError maps Choose's errors to usage errors with their fix as the hint.
func (a *App) choiceError(err error) error { return ainerr.New(ainerr.Usage, err, hintOf(err)) }

// renderJob builds r as the job API renderBackend picks (render, train --dry-run=client).
func (a *App) renderJob(r *recipe.Recipe, p *profile.Profile, flag, name string) (*jobs.Bundle, error) {
	be, err := a.renderBackend(r, p, flag)
	if err != nil {
		return nil, err
	}
	b, err := be.Build(r, p, jobs.Options{Name: name, Namespace: a.Global.Namespace})
	if err != nil {
		return nil, ainerr.New(ainerr.Usage, err, "")
	}
	return b, nil
}
