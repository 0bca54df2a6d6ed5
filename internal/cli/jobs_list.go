package cli

import (
	"fmt"

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
			kc, err := a.clients()
			if err != nil {
				return err
			}
			rows, err := a.cluster(kc).ListRows(c.Context)
			if err != nil {
				return kc.Classify(err, "listing jobs")
			}
			if out == "json" {
				return a.writeJSON(rows)
			}
			if len(rows) == 0 {
				fmt.Fprintf(a.Streams.Err, "no ain jobs in namespace %s\n", kc.Namespace)
				return nil
			}
			jobs.WriteListText(a.Streams.Out, rows, a.Streams.IsTTY)
			return nil
		},
	}
}
