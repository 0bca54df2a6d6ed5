package sandbox

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The start-up waits: a component's readiness (HTTP or TCP), the nodes', and the restart of a
// controller that exits before it is ready.

// waitRestarting runs wait (a readiness wait that fails when p exits) and, when p exited before it
// was ready in a way that looks like a start-up race, starts p again as it was, at most twice, as
// the kubelet restarts a controller's pod (restartPolicy Always): a controller-runtime manager
// exits when its informers do not sync in time, which the training-operator did while a 200-node
// sandbox started on two loaded cores ("Timeout: failed waiting for *v1.Service Informer to
// sync"). An exit that a restart cannot get past (a bad flag, or any quick exit that names no
// start-up race) is returned at once with the line that says why (exitedRun.startupRace). Each
// restart is said on u.out.
func (u *upRun) waitRestarting(ctx context.Context, p *Proc, wait func(*Proc) error) error {
	var started time.Time // of a run started here; the first one's is read from its log
	for restarts := 0; ; restarts++ {
		err := wait(p)
		if err == nil || ctx.Err() != nil || alive(*p) {
			return err
		}
		run := lastRun(p.Log, started)
		race, line := run.startupRace()
		if !race {
			return fmt.Errorf("%s exited%s (%s): not a start-up race, so not started again: %w", p.Name, run.after(), line, err)
		}
		if restarts == 2 {
			return err
		}
		fmt.Fprintf(u.out, "  %s exited during start-up (%s): starting it again, as its pod's kubelet would\n", p.Name, line)
		started = time.Now()
		np, serr := startProc(p.Name, p.Version, p.Binary, p.Args, p.Env, p.Log, u.opts.DieWithParent)
		if serr != nil {
			return errors.Join(err, serr)
		}
		np.Ports = p.Ports
		for i := range u.st.Procs {
			if u.st.Procs[i].Name == p.Name {
				u.st.Procs[i] = np
			}
		}
		*p = np
		if serr := saveState(u.st); serr != nil {
			return serr
		}
	}
}

// startupRaces are what a controller logs as it exits for a start-up race, one a restart gets
// past: its caches or the API server not ready in time.
var startupRaces = []string{
	"Informer to sync",   // controller-runtime's cache: "Timeout: failed waiting for *v1.Service Informer to sync"
	"cache to be synced", // controller-runtime's source.Kind: "timed out waiting for cache to be synced for Kind ..."
	"caches to sync",     // client-go's WaitForCacheSync callers (mpi-operator: "failed to wait for caches to sync")
	"connection refused", // the API server (or a webhook) not listening yet
	"i/o timeout",
	"TLS handshake timeout",
	"the server is currently unable to handle the request", // the API server's 503 while it starts
	"no matches for ",           // apimachinery's NoKindMatchError: a CRD applied just before, not served yet
	"context deadline exceeded", // a request to the API server timed out
}

// usageErrors are what Go's flag package and spf13/pflag print for a bad command line (their
// parse errors); a restart runs the same command line.
var usageErrors = []string{
	"flag provided but not defined", // flag
	"invalid value ",                // flag: invalid value "x" for flag -y
	"invalid boolean ",              // flag
	"unknown flag: ",                // pflag
	"unknown shorthand flag",        // pflag
	"invalid argument ",             // pflag: invalid argument "x" for "--y" flag
	"flag needs an argument",        // both
	"bad flag syntax",               // both
}

// quickExit is how long a run lasts at most to be taken for one that failed on its own
// configuration rather than on a race with what it waits for.
const quickExit = time.Second

// exitedRun is what a process's log says of its last run: its lines after startProc's "=== "
// start line, and how long it ran (ok false: unknown).
type exitedRun struct {
	lines []string
	ran   time.Duration
	ok    bool
}

// lastRunBytes bounds the log read; a run whose start line is further back wrote that much, and
// is taken to have run for a while.
const lastRunBytes = 64 << 10

// lastRun reads the last run from the log at path. started is when that run was started, when
// known (a restart's): it ran until now, when its exit was seen. Otherwise its start line gives
// the start to the second, taken as the middle of that second (within half a second), and the
// log's last write its end.
func lastRun(path string, started time.Time) exitedRun {
	var run exitedRun
	f, err := os.Open(path)
	if err != nil {
		return run
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return run
	}
	off := max(0, fi.Size()-lastRunBytes)
	buf := make([]byte, fi.Size()-off)
	n, _ := f.ReadAt(buf, off)
	text := string(buf[:n])
	end := time.Now()
	if i := strings.LastIndex(text, "\n=== "); i >= 0 {
		var header string
		header, text, _ = strings.Cut(text[i+1:], "\n")
		if started.IsZero() {
			f := strings.Fields(header)
			if len(f) > 1 {
				if t, err := time.Parse(time.RFC3339, f[1]); err == nil {
					started, end = t.Add(500*time.Millisecond), fi.ModTime()
				}
			}
		}
	}
	if !started.IsZero() {
		run.ran, run.ok = max(0, end.Sub(started)), true
	}
	for l := range strings.SplitSeq(text, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			run.lines = append(run.lines, l)
		}
	}
	return run
}

// startupRace says whether the run's exit looks like a start-up race, and the line that shows
// it or why not: one of its last lines names a race (startupRaces); else one names a bad
// command line (usageErrors) and it is none; else it is one when the run lasted more than
// quickExit, or for a time not known.
func (r exitedRun) startupRace() (bool, string) {
	last := "no output"
	if len(r.lines) > 0 {
		last = r.lines[len(r.lines)-1]
	}
	for i := len(r.lines) - 1; i >= max(0, len(r.lines)-3); i-- {
		if containsAny(r.lines[i], startupRaces) {
			return true, r.lines[i]
		}
	}
	for i := len(r.lines) - 1; i >= 0; i-- {
		if containsAny(r.lines[i], usageErrors) {
			return false, r.lines[i]
		}
	}
	return !r.ok || r.ran > quickExit, last
}

// after says how long after its start the run ended, when known.
func (r exitedRun) after() string {
	if !r.ok {
		return ""
	}
	return fmt.Sprintf(" %.1f s after it started", r.ran.Seconds())
}

func containsAny(s string, subs []string) bool {
	for _, sub := range subs {
		if strings.Contains(s, sub) {
			return true
		}
	}
	return false
}

// waitHTTP waits until url answers 200, failing early when p exits.
func waitHTTP(ctx context.Context, p *Proc, c *http.Client, url string, hdr map[string]string, timeout time.Duration) error {
	var last string
	err := poll(ctx, timeout, func() (bool, error) {
		if !alive(*p) {
			return false, fmt.Errorf("%s exited during start-up; last lines of %s:\n%s", p.Name, p.Log, tailFile(p.Log, 25))
		}
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		for k, v := range hdr {
			req.Header.Set(k, v)
		}
		resp, err := c.Do(req)
		if err != nil {
			last = err.Error()
			return false, nil
		}
		resp.Body.Close()
		last = resp.Status
		return resp.StatusCode == http.StatusOK, nil
	})
	if err != nil && !alive(*p) || err != nil && !errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	if err != nil {
		return fmt.Errorf("%s not ready at %s after %s (last: %s); last lines of %s:\n%s", p.Name, url, timeout, last, p.Log, tailFile(p.Log, 25))
	}
	return nil
}

func waitTCP(ctx context.Context, p *Proc, port int, timeout time.Duration) error {
	return poll(ctx, timeout, func() (bool, error) {
		if !alive(*p) {
			return false, fmt.Errorf("%s exited; last lines of %s:\n%s", p.Name, p.Log, tailFile(p.Log, 25))
		}
		c, err := net.DialTimeout("tcp", "127.0.0.1:"+strconv.Itoa(port), time.Second)
		if err != nil {
			return false, nil
		}
		c.Close()
		return true, nil
	})
}

// waitNodesReady waits until n simulated nodes are Ready and carry no not-ready taint.
func waitNodesReady(ctx context.Context, k *kube, n int, procs []*Proc, timeout time.Duration) error {
	var last string
	err := poll(ctx, timeout, func() (bool, error) {
		for _, p := range procs {
			if !alive(*p) {
				return false, fmt.Errorf("%s exited; last lines of %s:\n%s", p.Name, p.Log, tailFile(p.Log, 25))
			}
		}
		// ResourceVersion "0": served from the API server's cache, not read from etcd; with
		// 1000 nodes, five full reads a second slowed the start-up they wait for.
		list, err := k.cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: LabelSimulated + "=true", ResourceVersion: "0"})
		if err != nil {
			last = err.Error()
			return false, nil
		}
		ready := 0
		for _, node := range list.Items {
			if nodeReady(&node) && !hasNotReadyTaint(&node) {
				ready++
			}
		}
		last = fmt.Sprintf("%d/%d nodes ready", ready, n)
		return ready >= n, nil
	})
	if err != nil && errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("nodes not ready after %s (%s)", timeout, last)
	}
	return err
}

func nodeReady(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

func hasNotReadyTaint(n *corev1.Node) bool {
	for _, t := range n.Spec.Taints {
		if strings.HasPrefix(t.Key, "node.kubernetes.io/not-ready") || strings.HasPrefix(t.Key, "node.kubernetes.io/unreachable") {
			return true
		}
	}
	return false
}
