package jobs

import (
	"context"
	"fmt"
	"io"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/ain-hpc/ain/pkg/textout"
)

// StatusReport is what `status` shows of a job: its state with every pod that does not run
// explained, its recent events, and once it ended the summary of its ranks' logs. The fields
// are in the order of the JSON keys, sorted as a map's were.
type StatusReport struct {
	Events  []EventLine `json:"events"`
	Job     Snapshot    `json:"job"`
	Summary *Summary    `json:"summary"`
}

// Status reads what StatusReport holds of job, whose pods are pods.
func (c *Cluster) Status(ctx context.Context, job *unstructured.Unstructured, pods []corev1.Pod) *StatusReport {
	snap := SnapshotOf(job, pods)
	for i := range snap.Pods {
		if !NeedsExplain(&snap.Pods[i]) {
			continue
		}
		for j := range pods {
			if pods[j].Name == snap.Pods[i].Name {
				if e := c.ExplainPending(ctx, &pods[j]); e != "" {
					snap.Pods[i].Why = e
				}
			}
		}
	}
	r := &StatusReport{Job: snap, Events: c.Events(ctx, job.GetName(), pods, 12)}
	if Terminal(snap.Phase) {
		s := c.Summarize(ctx, snap, pods, 10, nil)
		r.Summary = &s
	}
	return r
}

// WriteText writes the report for a person; now dates the job's age.
func (r *StatusReport) WriteText(w io.Writer, now time.Time, o TextOptions) {
	snap := r.Job
	fmt.Fprintf(w, "%s %s/%s: %s", snap.Kind, snap.Namespace, snap.Name, snap.Phase)
	if snap.Message != "" {
		fmt.Fprintf(w, " (%s)", snap.Message)
	}
	fmt.Fprintf(w, ", created %s ago\n", Age(now.Sub(snap.Created)))
	fmt.Fprintln(w, "Conditions:")
	for _, c := range snap.Conditions {
		fmt.Fprintf(w, "  %-11s %-5s %s  %s\n", c.Type, c.Status, c.LastTransitionTime.UTC().Format(time.RFC3339), c.Message)
	}
	fmt.Fprintln(w, "Pods:")
	rows := [][]string{}
	for _, p := range snap.Pods {
		st := p.State
		if p.Why != "" {
			st += " (" + p.Why + ")"
		}
		rows = append(rows, []string{ReplicaLabel(p), p.Name, p.Phase, fmt.Sprint(p.Ready), p.Node, fmt.Sprint(p.Restarts), st})
	}
	textout.Table(w, o.TTY, []string{"REPLICA", "POD", "PHASE", "READY", "NODE", "RESTARTS", "STATE"}, rows)
	if len(r.Events) > 0 {
		fmt.Fprintln(w, "Recent events:")
		for _, e := range r.Events {
			fmt.Fprintf(w, "  %s  %-7s %-18s %-28s %s\n", e.Time, e.Type, e.Reason, e.Object, e.Message)
		}
	}
	if sum := r.Summary; sum != nil {
		fmt.Fprintf(w, "NCCL: ")
		if sum.Transport == "" {
			fmt.Fprintln(w, "no transport lines in the logs")
		} else {
			fmt.Fprintln(w, DescribeTransport(sum.Transport))
		}
		for _, p := range sum.Problems {
			fmt.Fprintf(w, "  problem: %s\n", p.Message)
			if p.Fix != "" {
				fmt.Fprintf(w, "    fix: %s\n", o.fix(p.Fix, p.Next))
			}
		}
	}
}
