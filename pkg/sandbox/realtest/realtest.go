// Package realtest holds the integration tests of the sandbox's real-pod mode
// (the sandbox's default; sandbox.Config.SimulatePods turns it off): MPIJobs as ain renders them run real sshd and Open MPI in the pods'
// network namespaces, on the real controllers. One test binary runs one shared sandbox, hence a
// package of its own. The tests need root (network and mount namespaces) and the Debian
// packages of scripts/debian-packages.sh.
package realtest

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/ain-hpc/ain/pkg/jobs"
	"github.com/ain-hpc/ain/pkg/profile"
	"github.com/ain-hpc/ain/pkg/recipe"
	"github.com/ain-hpc/ain/pkg/sandbox"
	"github.com/ain-hpc/ain/pkg/sandbox/sandboxtest"
)

// NeedReal skips where real pods cannot run (not root, programs missing), and gives the
// sandbox.
func NeedReal(t *testing.T) *sandboxtest.Sandbox {
	t.Helper()
	if testing.Short() {
		t.Skip("integration test: needs the local sandbox with real pods (run without -short, as root)")
	}
	if os.Geteuid() != 0 {
		t.Skip("real pods need root (network and mount namespaces)")
	}
	for _, p := range []string{"mpicc", "mpirun", "ssh", "ip", "nsenter", "unshare"} {
		if _, err := exec.LookPath(p); err != nil {
			t.Skipf("real pods need %s: run scripts/debian-packages.sh as root", p)
		}
	}
	sb := sandboxtest.Get(t)
	// A machine that can run them and a sandbox that does not (another sandbox holds the
	// machine's real-pod lock, say) would make every test here fail for the wrong reason.
	if off := sb.State.RealPodsOff; off != "" && !sb.State.Config.SimulatePods {
		t.Fatalf("the sandbox runs no real pods: %s", off)
	}
	return sb
}

// NeedTorchrun is NeedReal plus Debian's torchrun (python3-torch).
func NeedTorchrun(t *testing.T) *sandboxtest.Sandbox {
	t.Helper()
	sb := NeedReal(t)
	// The sandbox's own finding (Debian's python3 without torch), not whatever torchrun is on PATH.
	if off, _ := os.ReadFile(filepath.Join(sb.Dir, "realpods", "training-off")); len(off) > 0 {
		t.Skipf("real training pods: %s", off)
	}
	return sb
}

// RenderQLoRA renders the qlora recipe (2 nodes) as `ain train qlora --api API` does (trainer:
// a TrainJob with ain's TrainingRuntime, Kubeflow Trainer v2; training-operator: a
// kubeflow.org/v1 PyTorchJob), with edit applied to the recipe.
func RenderQLoRA(t *testing.T, sb *sandboxtest.Sandbox, api jobs.API, ns, name string, edit func(*recipe.Recipe)) (jobs.Backend, []runtime.Object) {
	t.Helper()
	r, err := recipe.Load("qlora", []string{"nodes=2"})
	if err != nil {
		t.Fatal(err)
	}
	if edit != nil {
		edit(r)
	}
	p, err := profile.Load(profile.Options{Fabric: profile.FabricSocket, Getenv: func(string) string { return "" }})
	if err != nil {
		t.Fatal(err)
	}
	b, err := jobs.Choose(r, jobs.Served{}, api)
	if err != nil {
		t.Fatal(err)
	}
	bundle, err := b.Build(r, p, jobs.Options{Namespace: ns, Name: name})
	if err != nil {
		t.Fatal(err)
	}
	// The recipe mounts the shared NFS claim; the sandbox makes it in "default" only.
	if err := sandbox.EnsureSharedPVC(context.Background(), sb.REST, ns, sandbox.DefaultSharedClaim); err != nil {
		t.Fatal(err)
	}
	return b, bundle.Objects
}

// RunJob applies objs with ain's Apply and watches the job with ain's Watch until it ends.
func RunJob(t *testing.T, sb *sandboxtest.Sandbox, ns, name string, b jobs.Backend, objs []runtime.Object, within time.Duration) (*jobs.Cluster, jobs.Snapshot, error) {
	t.Helper()
	c := &jobs.Cluster{Kube: sb.Clientset(t), Dynamic: sb.Dynamic(t), Namespace: ns}
	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()
	if _, err := c.Apply(ctx, objs, false); err != nil {
		t.Fatal(err)
	}
	snap, err := c.Watch(ctx, b, name, jobs.WatchOptions{})
	if errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("the job did not end within %s: %v\nagent:\n%s", within, err, sb.ComponentLog("agent", 40))
	}
	return c, snap, err
}

// WaitPodsEnded waits until every pod of job name has ended (Succeeded or Failed), for at most
// within. A job can end before its pods: a PyTorchJob with a master Succeeds when the master
// does (training-operator v1.8.1 pkg/controller.v1/pytorch/pytorchjob_controller.go
// UpdateJobStatus), its workers maybe still printing their last lines.
func WaitPodsEnded(t *testing.T, sb *sandboxtest.Sandbox, c *jobs.Cluster, b jobs.Backend, name string, within time.Duration) {
	t.Helper()
	var running []string
	if _, ok := sandboxtest.Poll(within, 200*time.Millisecond, func() bool {
		pods, err := b.Pods(context.Background(), c, name)
		if err != nil {
			running = []string{err.Error()}
			return false
		}
		running = running[:0]
		for _, p := range pods {
			if p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed {
				running = append(running, p.Name+" "+string(p.Status.Phase))
			}
		}
		return len(pods) > 0 && len(running) == 0
	}); !ok {
		t.Fatalf("%s's pods not ended within %s: %v\nagent:\n%s", name, within, running, sb.ComponentLog("agent", 40))
	}
}

// PodLogs reads every pod's log of job name, by pod name.
func PodLogs(t *testing.T, c *jobs.Cluster, b jobs.Backend, name string) map[string]string {
	t.Helper()
	ctx := context.Background()
	pods, err := b.Pods(ctx, c, name)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, p := range pods {
		rc, err := b.Logs(ctx, c, p.Name, -1, false)
		if err != nil {
			t.Fatalf("log of %s: %v", p.Name, err)
		}
		var sb strings.Builder
		buf := make([]byte, 32<<10)
		for {
			n, err := rc.Read(buf)
			sb.Write(buf[:n])
			if err != nil {
				break
			}
		}
		_ = rc.Close()
		out[p.Name] = sb.String()
	}
	return out
}
