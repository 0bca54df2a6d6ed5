package jobs

import (
	"context"
	"fmt"
	"io"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/ain-hpc/ain/pkg/textout"
)

// ListRow is one of ain's jobs as `list` shows it.
type ListRow struct {
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

func (c *Cluster) now() time.Time {
	if c.Now == nil {
		return time.Now()
	}
	return c.Now()
}

// ListRows lists ain's jobs in the namespace (newest first), never nil.
func (c *Cluster) ListRows(ctx context.Context) ([]ListRow, error) {
	items, err := c.List(ctx)
	if err != nil {
		return nil, err
	}
	rows := []ListRow{}
	for i := range items {
		u := &items[i]
		nodes, gpus := Shape(u)
		rows = append(rows, ListRow{Kind: u.GetKind(), APIVersion: u.GetAPIVersion(), Name: u.GetName(), State: PhaseOf(u),
			Age: Age(c.now().Sub(u.GetCreationTimestamp().Time)), Created: u.GetCreationTimestamp().UTC().Format(time.RFC3339),
			Nodes: nodes, GPUs: gpus, Recipe: u.GetLabels()[LabelRecipe]})
	}
	return rows, nil
}

// WriteListText writes rows as a table (bordered when tty).
func WriteListText(w io.Writer, rows []ListRow, tty bool) {
	t := [][]string{}
	for _, r := range rows {
		t = append(t, []string{r.Kind + " " + r.APIVersion, r.Name, r.State, r.Age, fmt.Sprint(r.Nodes), fmt.Sprint(r.GPUs), r.Recipe})
	}
	textout.Table(w, tty, []string{"KIND", "NAME", "STATE", "AGE", "NODES", "GPUS", "RECIPE"}, t)
}

// Releasable are ain's jobs in the namespace that `release` deletes: all, or with finishedOnly
// those that have ended.
func (c *Cluster) Releasable(ctx context.Context, finishedOnly bool) ([]*unstructured.Unstructured, error) {
	items, err := c.List(ctx)
	if err != nil {
		return nil, err
	}
	var todo []*unstructured.Unstructured
	for i := range items {
		if finishedOnly && !Terminal(PhaseOf(&items[i])) {
			continue
		}
		todo = append(todo, &items[i])
	}
	return todo, nil
}

// ReleaseOrphanRuntimes deletes ain's TrainingRuntimes that no TrainJob uses (OrphanRuntimes),
// each one's outcome given to done (err nil: deleted); the error is the listing's.
func (c *Cluster) ReleaseOrphanRuntimes(ctx context.Context, done func(name string, err error)) error {
	orphans, err := c.OrphanRuntimes(ctx, "")
	if err != nil {
		return err
	}
	for _, name := range orphans {
		done(name, c.DeleteRuntime(ctx, name))
	}
	return nil
}
