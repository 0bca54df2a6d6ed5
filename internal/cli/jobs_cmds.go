package cli

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"sync"
	"time"

	kubeflowv1 "github.com/kubeflow/training-operator/pkg/apis/kubeflow.org/v1"
	ucli "github.com/urfave/cli/v2"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/ain-hpc/ain/pkg/ainerr"
	"github.com/ain-hpc/ain/pkg/jobs"
	"github.com/ain-hpc/ain/pkg/kube"
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
			cl := a.cluster(kc)
			items, err := cl.List(c.Context)
			if err != nil {
				return kc.Classify(err, "listing jobs")
			}
			type row struct {
				Kind    string `json:"kind"`
				Name    string `json:"name"`
				State   string `json:"state"`
				Age     string `json:"age"`
				Created string `json:"created"`
				Nodes   int    `json:"nodes"`
				GPUs    int64  `json:"gpus"`
				Recipe  string `json:"recipe"`
			}
			var rows []row
			for i := range items {
				u := &items[i]
				nodes, gpus := shape(u)
				rows = append(rows, row{Kind: u.GetKind(), Name: u.GetName(), State: jobs.PhaseOf(u),
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
				t = append(t, []string{r.Kind, r.Name, r.State, r.Age, fmt.Sprint(r.Nodes), fmt.Sprint(r.GPUs), r.Recipe})
			}
			a.table([]string{"KIND", "NAME", "STATE", "AGE", "NODES", "GPUS", "RECIPE"}, t)
			return nil
		},
	}
}

// shape returns the number of GPU pods and GPUs a job asks for, from its replica specs.
func shape(u *unstructured.Unstructured) (nodes int, gpus int64) {
	key := "pytorchReplicaSpecs"
	if u.GetKind() == kubeflowv1.MPIJobKind {
		key = "mpiReplicaSpecs"
	}
	specs, _, _ := unstructured.NestedMap(u.Object, "spec", key)
	for rt, raw := range specs {
		m, ok := raw.(map[string]any)
		if !ok {
			continue
		}
		n, _, _ := unstructured.NestedInt64(m, "replicas")
		if n == 0 {
			n = 1
		}
		cs, _, _ := unstructured.NestedSlice(m, "template", "spec", "containers")
		var g int64
		for _, c := range cs {
			cm, _ := c.(map[string]any)
			lim, _, _ := unstructured.NestedStringMap(cm, "resources", "limits")
			for k, v := range lim {
				if strings.HasSuffix(k, "/gpu") {
					var x int64
					fmt.Sscan(v, &x)
					g += x
				}
			}
		}
		if rt == "Launcher" && g == 0 {
			continue
		}
		nodes += int(n)
		gpus += n * g
	}
	return nodes, gpus
}

func (a *App) statusCommand() *ucli.Command {
	var out string
	return &ucli.Command{
		Name:      "status",
		Usage:     "a job's conditions, per-replica pod states and nodes, recent events, and its NCCL verdict when it ended",
		ArgsUsage: "NAME",
		Flags:     []ucli.Flag{outputFlag(&out, "text", "text or json", "json")},
		Action: func(c *ucli.Context) error {
			if c.NArg() != 1 {
				return ainerr.Usagef("name one job: ain status NAME (ain list shows them)")
			}
			return a.runStatus(c.Context, c.Args().First(), out)
		},
	}
}

func (a *App) runStatus(ctx context.Context, name, out string) error {
	kc, cl, job, pods, err := a.jobAndPods(ctx, name)
	if err != nil {
		return err
	}
	snap := jobs.SnapshotOf(job, pods)
	ex := explainer(kc)
	for i := range snap.Pods {
		if strings.HasPrefix(snap.Pods[i].Why, "unschedulable") {
			for j := range pods {
				if pods[j].Name == snap.Pods[i].Name {
					if e := ex(ctx, &pods[j]); e != "" {
						snap.Pods[i].Why = e
					}
				}
			}
		}
	}
	events := jobEvents(ctx, kc, job, pods)
	var sum *jobs.Summary
	if jobs.Terminal(snap.Phase) {
		s := cl.Summarize(ctx, snap, pods, 10, nil)
		sum = &s
	}
	if out == "json" {
		return a.writeJSON(map[string]any{"job": snap, "events": events, "summary": sum})
	}
	w := a.Streams.Out
	fmt.Fprintf(w, "%s %s/%s: %s", snap.Kind, snap.Namespace, snap.Name, snap.Phase)
	if snap.Message != "" {
		fmt.Fprintf(w, " (%s)", snap.Message)
	}
	fmt.Fprintf(w, ", created %s ago\n", age(a.Now().Sub(snap.Created)))
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
		rows = append(rows, []string{replicaLabel(p), p.Name, p.Phase, fmt.Sprint(p.Ready), p.Node, fmt.Sprint(p.Restarts), st})
	}
	a.table([]string{"REPLICA", "POD", "PHASE", "READY", "NODE", "RESTARTS", "STATE"}, rows)
	if len(events) > 0 {
		fmt.Fprintln(w, "Recent events:")
		for _, e := range events {
			fmt.Fprintf(w, "  %s  %-7s %-18s %-28s %s\n", e.Time, e.Type, e.Reason, e.Object, e.Message)
		}
	}
	if sum != nil {
		fmt.Fprintf(w, "NCCL: ")
		if sum.Transport == "" {
			fmt.Fprintln(w, "no transport lines in the logs")
		} else {
			fmt.Fprintln(w, describeTransport(sum.Transport))
		}
		for _, p := range sum.Problems {
			fmt.Fprintf(w, "  problem: %s\n", p.Message)
			if p.Fix != "" {
				fmt.Fprintf(w, "    fix: %s\n", p.Fix)
			}
		}
	}
	return nil
}

// jobAndPods finds job name (PyTorchJob or MPIJob) and its pods, mapping errors to exit codes.
func (a *App) jobAndPods(ctx context.Context, name string) (*kube.Clients, *jobs.Cluster, *unstructured.Unstructured, []corev1.Pod, error) {
	kc, err := a.clients()
	if err != nil {
		return nil, nil, nil, nil, err
	}
	cl := a.cluster(kc)
	job, err := cl.Find(ctx, name)
	if err != nil {
		if jobs.IsNotFound(err) {
			return nil, nil, nil, nil, ainerr.New(ainerr.Usage, err, "ain list shows the jobs in this namespace; -n selects another")
		}
		return nil, nil, nil, nil, kc.Classify(err, "reading the job")
	}
	pods, err := cl.Pods(ctx, name)
	if err != nil {
		return nil, nil, nil, nil, kc.Classify(err, "reading the job's pods")
	}
	return kc, cl, job, pods, nil
}

type eventLine struct {
	Time    string `json:"time"`
	Type    string `json:"type"`
	Reason  string `json:"reason"`
	Object  string `json:"object"`
	Message string `json:"message"`
}

// jobEvents lists the last events of the job and its pods (one list call, filtered here).
func jobEvents(ctx context.Context, kc *kube.Clients, job *unstructured.Unstructured, pods []corev1.Pod) []eventLine {
	l, err := kc.Kube.CoreV1().Events(kc.Namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil
	}
	names := map[string]bool{job.GetName(): true}
	for _, p := range pods {
		names[p.Name] = true
	}
	var evs []corev1.Event
	for _, e := range l.Items {
		if names[e.InvolvedObject.Name] {
			evs = append(evs, e)
		}
	}
	sort.Slice(evs, func(i, j int) bool { return eventTime(evs[i]).Before(eventTime(evs[j])) })
	if len(evs) > 12 {
		evs = evs[len(evs)-12:]
	}
	var out []eventLine
	for _, e := range evs {
		out = append(out, eventLine{Time: eventTime(e).UTC().Format("15:04:05"), Type: e.Type, Reason: e.Reason,
			Object: strings.ToLower(e.InvolvedObject.Kind) + "/" + e.InvolvedObject.Name, Message: firstLine(e.Message)})
	}
	return out
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	return s
}

func eventTime(e corev1.Event) time.Time {
	switch {
	case !e.LastTimestamp.IsZero():
		return e.LastTimestamp.Time
	case !e.EventTime.IsZero():
		return e.EventTime.Time
	}
	return e.CreationTimestamp.Time
}

type logsOptions struct {
	Follow  bool
	Replica string
	Index   int
	All     bool
	Tail    int64
}

func (a *App) logsCommand() *ucli.Command {
	o := &logsOptions{}
	return &ucli.Command{
		Name:      "logs",
		Usage:     "a job's logs: the master/launcher by default, --replica/--index for one pod, --all for every pod (prefixed)",
		ArgsUsage: "NAME",
		Flags: []ucli.Flag{
			&ucli.BoolFlag{Name: "follow", Aliases: []string{"f"}, Usage: "stream new lines", Destination: &o.Follow},
			&ucli.StringFlag{Name: "replica", Usage: "master, worker or launcher", Destination: &o.Replica},
			&ucli.IntFlag{Name: "index", Value: -1, Usage: "replica index (with --replica)", Destination: &o.Index},
			&ucli.BoolFlag{Name: "all", Usage: "every pod of the job, each line prefixed with its pod", Destination: &o.All},
			&ucli.Int64Flag{Name: "tail", Value: -1, Usage: "only the last N lines of each pod", Destination: &o.Tail},
		},
		Action: func(c *ucli.Context) error {
			if c.NArg() != 1 {
				return ainerr.Usagef("name one job: ain logs NAME")
			}
			return a.runLogs(c.Context, c.Args().First(), o)
		},
	}
}

func (a *App) runLogs(ctx context.Context, name string, o *logsOptions) error {
	kc, cl, job, pods, err := a.jobAndPods(ctx, name)
	if err != nil {
		return err
	}
	if len(pods) == 0 {
		return ainerr.Newf(ainerr.Failure, "%s has no pods (yet, or they were cleaned up): ain status %s", name, name)
	}
	var sel []corev1.Pod
	for _, p := range pods {
		rt := p.Labels[kubeflowv1.ReplicaTypeLabel]
		switch {
		case o.All:
		case o.Replica != "":
			if rt != strings.ToLower(o.Replica) || (o.Index >= 0 && jobs.ReplicaIndex(&p) != o.Index) {
				continue
			}
		default:
			if rt != "master" && rt != "launcher" {
				continue
			}
		}
		sel = append(sel, p)
	}
	if len(sel) == 0 {
		var have []string
		for _, p := range pods {
			have = append(have, fmt.Sprintf("%s-%d", p.Labels[kubeflowv1.ReplicaTypeLabel], jobs.ReplicaIndex(&p)))
		}
		return ainerr.Usagef("no pod of %s matches (it has %s)", name, strings.Join(have, ", "))
	}
	container := jobs.MainContainer(job.GetKind())
	prefix := len(sel) > 1
	var mu sync.Mutex
	out := &lockedWriter{w: a.Streams.Out, mu: &mu}
	var wg sync.WaitGroup
	errs := make(chan error, len(sel))
	// Following ends when the pod finishes: some log servers keep a finished pod's stream open.
	streamCtx := map[string]context.Context{}
	if o.Follow {
		cancels := map[string]context.CancelFunc{}
		for _, p := range sel {
			streamCtx[p.Name], cancels[p.Name] = context.WithCancel(ctx)
		}
		go endFollowWhenDone(ctx, kc, name, cancels)
	}
	for _, p := range sel {
		wg.Add(1)
		go func(p corev1.Pod) {
			defer wg.Done()
			sctx, follow := ctx, o.Follow
			if follow {
				sctx = streamCtx[p.Name]
				follow = p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed
			}
			rc, err := cl.PodLogs(sctx, p.Name, container, o.Tail, follow)
			if err != nil {
				errs <- kc.Classify(err, "reading the log of "+p.Name)
				return
			}
			defer rc.Close()
			if prefix {
				errs <- jobs.Prefixed(out, rc, "["+p.Name+"] ")
				return
			}
			_, err = io.Copy(out, bufio.NewReader(rc))
			errs <- err
		}(p)
		if !prefix {
			break
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil && ctx.Err() == nil && !errors.Is(err, context.Canceled) {
			return err
		}
	}
	return nil
}

// endFollowWhenDone watches the job's pods and cancels a pod's log stream once it has finished
// (after a short grace so the last lines arrive).
func endFollowWhenDone(ctx context.Context, kc *kube.Clients, job string, cancels map[string]context.CancelFunc) {
	w, err := kc.Kube.CoreV1().Pods(kc.Namespace).Watch(ctx, metav1.ListOptions{LabelSelector: kubeflowv1.JobNameLabel + "=" + job})
	if err != nil {
		return
	}
	defer w.Stop()
	for ev := range w.ResultChan() {
		p, ok := ev.Object.(*corev1.Pod)
		if !ok {
			continue
		}
		if cancel, ok := cancels[p.Name]; ok && (p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed) {
			time.AfterFunc(2*time.Second, cancel)
		}
	}
}

type lockedWriter struct {
	w  io.Writer
	mu *sync.Mutex
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

func (a *App) deleteCommand() *ucli.Command {
	var yes bool
	return &ucli.Command{
		Name:      "delete",
		Usage:     "delete a job and what ain created with it (asks on a TTY unless --yes)",
		ArgsUsage: "NAME",
		Flags:     []ucli.Flag{&ucli.BoolFlag{Name: "yes", Aliases: []string{"y"}, Usage: "do not ask", Destination: &yes}},
		Action: func(c *ucli.Context) error {
			if c.NArg() != 1 {
				return ainerr.Usagef("name one job: ain delete NAME")
			}
			name := c.Args().First()
			kc, err := a.clients()
			if err != nil {
				return err
			}
			cl := a.cluster(kc)
			job, err := cl.Find(c.Context, name)
			if err != nil {
				if jobs.IsNotFound(err) {
					return ainerr.New(ainerr.Usage, err, "ain list shows the jobs in this namespace")
				}
				return kc.Classify(err, "reading the job")
			}
			if !yes {
				if !a.Streams.InTTY {
					return ainerr.Usagef("refusing to delete %s %s/%s without confirmation: add --yes", job.GetKind(), kc.Namespace, name)
				}
				fmt.Fprintf(a.Streams.Err, "delete %s %s/%s (%s) and its pods? [y/N] ", job.GetKind(), kc.Namespace, name, jobs.PhaseOf(job))
				line, _ := bufio.NewReader(a.Streams.In).ReadString('\n')
				if ans := strings.ToLower(strings.TrimSpace(line)); ans != "y" && ans != "yes" {
					return ainerr.New(ainerr.Cancelled, fmt.Errorf("not deleted"), "")
				}
			}
			deleted, err := cl.Delete(c.Context, job)
			if err != nil {
				return kc.Classify(err, "deleting the job")
			}
			fmt.Fprintf(a.Streams.Out, "deleted %s\n", strings.Join(deleted, ", "))
			return nil
		},
	}
}

// releaseCommand ends ain's training and benchmark jobs in the namespace but keeps what
// `ain serve` deployed (course 12.4.2: release the GPUs of finished work, keep the service).
func (a *App) releaseCommand() *ucli.Command {
	var yes, finishedOnly bool
	return &ucli.Command{
		Name:  "release",
		Usage: "delete ain's jobs in the namespace (their GPUs and RDMA devices go back), keep ain serve's services",
		Description: "Examples:\n  ain release --yes             # every ain job, finished or not\n" +
			"  ain release --finished --yes  # only jobs that Succeeded or Failed",
		Flags: []ucli.Flag{
			&ucli.BoolFlag{Name: "yes", Aliases: []string{"y"}, Usage: "do not ask", Destination: &yes},
			&ucli.BoolFlag{Name: "finished", Usage: "only jobs that have ended", Destination: &finishedOnly},
		},
		Action: func(c *ucli.Context) error {
			kc, err := a.clients()
			if err != nil {
				return err
			}
			cl := a.cluster(kc)
			items, err := cl.List(c.Context)
			if err != nil {
				return kc.Classify(err, "listing jobs")
			}
			var todo []*unstructured.Unstructured
			for i := range items {
				if finishedOnly && !jobs.Terminal(jobs.PhaseOf(&items[i])) {
					continue
				}
				todo = append(todo, &items[i])
			}
			if len(todo) == 0 {
				fmt.Fprintf(a.Streams.Out, "no ain jobs to release in namespace %s; services are kept\n", kc.Namespace)
				return nil
			}
			if !yes {
				if !a.Streams.InTTY {
					return ainerr.Usagef("refusing to delete %d job(s) in %s without confirmation: add --yes", len(todo), kc.Namespace)
				}
				fmt.Fprintf(a.Streams.Err, "delete %d ain job(s) in %s (services are kept)? [y/N] ", len(todo), kc.Namespace)
				line, _ := bufio.NewReader(a.Streams.In).ReadString('\n')
				if ans := strings.ToLower(strings.TrimSpace(line)); ans != "y" && ans != "yes" {
					return ainerr.New(ainerr.Cancelled, fmt.Errorf("nothing released"), "")
				}
			}
			for _, j := range todo {
				phase := jobs.PhaseOf(j)
				if _, err := cl.Delete(c.Context, j); err != nil {
					return kc.Classify(err, "deleting "+j.GetName())
				}
				fmt.Fprintf(a.Streams.Out, "released %s/%s (%s)\n", j.GetKind(), j.GetName(), phase)
			}
			fmt.Fprintln(a.Streams.Out, "services deployed by ain serve are kept (ain serve status)")
			return nil
		},
	}
}
