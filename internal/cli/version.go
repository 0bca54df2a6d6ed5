package cli

import (
	"fmt"
	"runtime"

	ucli "github.com/urfave/cli/v2"
)

func (a *App) versionCommand() *ucli.Command {
	return &ucli.Command{
		Name:  "version",
		Usage: "print ain's version and the versions it targets",
		Action: func(c *ucli.Context) error {
			fmt.Fprintf(a.Streams.Out, "ain %s (%s, %s/%s)\n", Version, runtime.Version(), runtime.GOOS, runtime.GOARCH)
			fmt.Fprintf(a.Streams.Out, "targets: trainer.kubeflow.org/v1alpha1 TrainJob (Trainer v2.3.0), kubeflow.org/v2beta1 MPIJob (mpi-operator v0.8.0), kubeflow.org/v1 PyTorchJob and MPIJob (training-operator v1.8.1), Kubernetes API v1.36 (the sandbox runs v1.36.2)\n")
			return nil
		},
	}
}
