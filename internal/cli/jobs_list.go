package cli

import (
	"fmt"
	"time"

	ucli "github.com/urfave/cli/v2"

	"github.com/ain-hpc/ain/pkg/jobs"
)

func (a *App) listCommand() *ucli.Command {
	var out string
	return &ucli.Command{
		Name:  "list",
		Usage: "ain's jobs in the namespace: kind, name, state, age, nodes, GPUs",
		Flags: []ucli.Flag{outputFlag(&out, "table", "table or json", "json")},
		Action: func(c *ucli.Context) error {
			kc, _, items, err := a.listJobs(c.Context)
			if err != nil {
				return err
			}
			type row struct {
				Kind string `json:"kind"`
				// APIVersion tells a kubeflow.org/v1 MPIJob from a v2beta1 one.
				APIVersion string `json:"apiVersion"`
				Name       string `json:"name"`
				State      string `json:"state"`
				Age        string `json:"age"`
				Created    string `json:"created"`
				Nodes      int    `json:"nodes"`
				GPUs       int64  `json:"gpus"`
				Recipe     string `json:"recipe"`
			}
			var rows []row
			for i := range items {
				u := &items[i]
				nodes, gpus := jobs.Shape(u)
				rows = append(rows, row{Kind: u.GetKind(), APIVersion: u.GetAPIVersion(), Name: u.GetName(), State: jobs.PhaseOf(u),
					Age: age(a.Now().Sub(u.GetCreationTimestamp().Time)), Created: u.GetCreationTimestamp().UTC().Format(time.RFC3339),
					Nodes: nodes, GPUs: gpus, Recipe: u.GetLabels()[jobs.LabelRecipe]})
			}
			if out == "json" {
				if rows == nil {
					rows = []row{}
				}
				return a.writeJSON(rows)
			}
			if len(rows) == 0 {
				fmt.Fprintf(a.Streams.Err, "no ain jobs in namespace %s\n", kc.Namespace)
				return nil
			}
			t := [][]string{}
			for _, r := range rows {
				t = append(t, []string{r.Kind + " " + r.APIVersion, r.Name, r.State, r.Age, fmt.Sprint(r.Nodes), fmt.Sprint(r.GPUs), r.Recipe})
			}
			a.table([]string{"KIND", "NAME", "STATE", "AGE", "NODES", "GPUS", "RECIPE"}, t)
			return nil
		},
	}
}
