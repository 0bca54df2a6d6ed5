package train_test

import (
	"context"
	"errors"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/discovery"

	"github.com/ain-hpc/ain/pkg/jobs"
	"github.com/ain-hpc/ain/pkg/profile"
	"github.com/ain-hpc/ain/pkg/recipe"
	"github.com/ain-hpc/ain/pkg/sandbox"
	"github.com/ain-hpc/ain/pkg/sandbox/sandboxtest"
	"github.com/ain-hpc/ain/pkg/train"
)

// TestMain gives the flow a sandbox of the current stack: a real API server, mpi-operator,
// JobSet and Trainer, kwok nodes.
func TestMain(m *testing.M) {
	sandboxtest.Main(m, sandbox.Config{Nodes: 2, Stack: sandbox.StackCurrent})
}

// fixture is a Runner for the built-in allreduce recipe on the API the sandbox serves, in a
// namespace of the test's own, with the events it gave.
type fixture struct {
	sb     *sandboxtest.Sandbox
	ns     string
	run    *train.Runner
	r      *recipe.Recipe
	events []train.Event
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	if testing.Short() {
		t.Skip("integration: starts a sandbox")
	}
	sb := sandboxtest.Get(t)
	ns := sb.Namespace(t)
	r, err := recipe.Load("allreduce", []string{"nodes=2"})
	if err != nil {
		t.Fatal(err)
	}
	cs := sb.Clientset(t)
	served, err := jobs.Discover(discovery.NewDiscoveryClient(cs.CoreV1().RESTClient()))
	if err != nil {
		t.Fatal(err)
	}
	be, err := jobs.Choose(r, served, jobs.APIAuto)
	if err != nil {
		t.Fatal(err)
	}
	f := &fixture{sb: sb, ns: ns, r: r}
	f.run = &train.Runner{
		Cluster:  &jobs.Cluster{Kube: cs, Dynamic: sb.Dynamic(t), Namespace: ns, Now: time.Now},
		Backend:  be,
		Now:      time.Now,
		Progress: func(e train.Event) { f.events = append(f.events, e) },
	}
	return f
}

func kinds(events []train.Event) map[train.EventKind]int {
	m := map[train.EventKind]int{}
	for _, e := range events {
		m[e.Kind]++
	}
	return m
}

// One library call runs ain train's flow against the real controllers: a server dry run
// creates nothing; a run is applied, watched to Succeeded and summarised from the launcher's
// log; the same run again finds the job unchanged and watches it without re-creating it.
func TestRunOnTheSandbox(t *testing.T) {
	f := newFixture(t)
	run, r := f.run, f.r
	ctx := context.Background()
	p := profile.Default()

	res, err := run.Run(ctx, train.Options{Recipe: r, Profile: p, DryRunServer: true, TailLines: 5})
	if err != nil || len(res.DryRun) == 0 || res.Summary != nil {
		t.Fatalf("server dry run: %v %+v", err, res)
	}
	if _, err := run.Backend.Find(ctx, run.Cluster, res.Name); !jobs.IsNotFound(err) {
		t.Fatalf("a server dry run left the job behind: %v", err)
	}

	gate := 0
	run.Gate = func(context.Context) error { gate++; return nil }
	res, err = run.Run(ctx, train.Options{Recipe: r, Profile: p, Timeout: 3 * time.Minute, TailLines: 5})
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	if gate != 1 || res.Summary == nil || res.Summary.Phase != jobs.PhaseSucceeded || len(res.Summary.Ranks) == 0 {
		t.Fatalf("gate called %d times; result %+v", gate, res)
	}
	if k := kinds(f.events); k[train.EventApplied] != 1 || k[train.EventAPI] != 2 || k[train.EventUnchanged] != 0 {
		t.Fatalf("events %+v", f.events)
	}
	uid := func() string {
		u, err := run.Backend.Find(ctx, run.Cluster, res.Name)
		if err != nil {
			t.Fatal(err)
		}
		return string(u.GetUID())
	}
	first := uid()
	again, err := run.Run(ctx, train.Options{Recipe: r, Profile: p, Timeout: time.Minute, TailLines: 5})
	if err != nil || again.Summary.Phase != jobs.PhaseSucceeded || kinds(f.events)[train.EventUnchanged] != 1 || uid() != first {
		t.Fatalf("re-run: %v %+v, events %+v", err, again, f.events)
	}
}

// A gate that refuses stops the run before anything is applied; an interrupt after the apply
// with DeleteOnInterrupt deletes the job and says so; a watch bound returns the job's state.
func TestRunStopsAndCleansUp(t *testing.T) {
	f := newFixture(t)
	run, r := f.run, f.r
	p := profile.Default()

	refused := errors.New("preflight FAIL")
	run.Gate = func(context.Context) error { return refused }
	if _, err := run.Run(context.Background(), train.Options{Recipe: r, Profile: p}); !errors.Is(err, refused) {
		t.Fatalf("gate refusal: %v", err)
	}
	if _, err := run.Backend.Find(context.Background(), run.Cluster, r.Metadata.Name); !jobs.IsNotFound(err) {
		t.Fatalf("a refused gate left a job: %v", err)
	}
	run.Gate = nil

	// The watch is cut by the bound while the job runs (the sandbox's ranks take seconds).
	_, err := run.Run(context.Background(), train.Options{Recipe: r, Profile: p, Name: "bounded", Timeout: 50 * time.Millisecond})
	var te *train.TimeoutError
	if !errors.As(err, &te) || te.Name != "bounded" || te.Timeout != 50*time.Millisecond {
		t.Fatalf("timeout: %v", err)
	}

	ctx, cancel := context.WithCancel(context.Background())
	run.Progress = func(e train.Event) {
		f.events = append(f.events, e)
		if e.Kind == train.EventApplied {
			cancel()
		}
	}
	_, err = run.Run(ctx, train.Options{Recipe: r, Profile: p, Name: "interrupted", DeleteOnInterrupt: true})
	var ie *train.InterruptedError
	if !errors.As(err, &ie) || ie.Stage == train.StageBeforeApply || len(ie.Deleted) == 0 || ie.Left() {
		t.Fatalf("interrupt with DeleteOnInterrupt: %#v", err)
	}
	_, err = f.sb.Dynamic(t).Resource(run.Backend.GVR()).Namespace(f.ns).Get(context.Background(), "interrupted", metav1.GetOptions{})
	if !apierrors.IsNotFound(err) {
		t.Fatalf("the interrupted job is still there: %v", err)
	}
}
