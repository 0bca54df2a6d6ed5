package sandboxtest

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// diagnoseEvents and diagnoseLogLines bound what Diagnose prints.
const (
	diagnoseEvents   = 20
	diagnoseLogLines = 12
)

// Diagnose writes what a failed test run's output needs to explain a sandbox at fault, before the
// sandbox and its logs are removed: the cluster's last Warning events (a node's NodeNotReady, a
// pod marked not Ready, a failed scheduling), each node's Ready condition and heartbeat age, and
// the agent's last log lines. CI keeps only the test output, and a sandbox fault (stop 42's CI
// run: kwok's heartbeats starved, pods marked not Ready for 15 s) otherwise needs a rerun to see.
func (s *Sandbox) Diagnose(ctx context.Context, w io.Writer) {
	fmt.Fprintf(w, "sandboxtest: the sandbox at the end of a failed run (%s)\n", s.Dir)
	cs, err := kubernetes.NewForConfig(s.REST)
	if err == nil {
		err = diagnoseCluster(ctx, cs, w)
	}
	if err != nil {
		fmt.Fprintf(w, "  cluster: %v\n", err)
	}
	fmt.Fprintf(w, "  agent log, last %d lines:\n", diagnoseLogLines)
	for _, l := range strings.Split(s.ComponentLog("agent", diagnoseLogLines), "\n") {
		fmt.Fprintf(w, "    %s\n", l)
	}
}

func diagnoseCluster(ctx context.Context, cs kubernetes.Interface, w io.Writer) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	nodes, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	for _, n := range nodes.Items {
		ready := "no Ready condition"
		for _, c := range n.Status.Conditions {
			if c.Type == corev1.NodeReady {
				ready = fmt.Sprintf("Ready %s, last heartbeat %s ago", c.Status, time.Since(c.LastHeartbeatTime.Time).Round(time.Second))
			}
		}
		fmt.Fprintf(w, "  node %s: %s\n", n.Name, ready)
	}
	evs, err := cs.CoreV1().Events(metav1.NamespaceAll).List(ctx, metav1.ListOptions{FieldSelector: "type=" + corev1.EventTypeWarning})
	if err != nil {
		return err
	}
	items := evs.Items
	when := func(e corev1.Event) time.Time {
		for _, t := range []time.Time{e.LastTimestamp.Time, e.EventTime.Time, e.CreationTimestamp.Time} {
			if !t.IsZero() {
				return t
			}
		}
		return time.Time{}
	}
	slices.SortStableFunc(items, func(a, b corev1.Event) int { return when(a).Compare(when(b)) })
	fmt.Fprintf(w, "  Warning events: %d", len(items))
	if len(items) > diagnoseEvents {
		fmt.Fprintf(w, ", the last %d", diagnoseEvents)
		items = items[len(items)-diagnoseEvents:]
	}
	fmt.Fprintln(w)
	for _, e := range items {
		obj := e.InvolvedObject
		fmt.Fprintf(w, "    %s %s %s: %s: %s (x%d)\n", when(e).UTC().Format(time.TimeOnly), strings.ToLower(obj.Kind),
			strings.TrimPrefix(obj.Namespace+"/"+obj.Name, "/"), e.Reason, strings.TrimSpace(e.Message), cmp.Or(e.Count, 1))
	}
	return nil
}
