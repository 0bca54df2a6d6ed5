package sandbox

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The start-up waits: a component's readiness (HTTP or TCP), the nodes', and the restart of a
// controller that exits before it is ready.

// waitRestarting runs wait (a readiness wait that fails when p exits) and, when p exited before it
// was ready, starts p again as it was, at most twice, as the kubelet restarts a controller's pod
// (restartPolicy Always): a controller-runtime manager exits when its informers do not sync in
// time, which the training-operator did while a 200-node sandbox started on two loaded cores
// ("Timeout: failed waiting for *v1.Service Informer to sync"). Each restart is said on u.out.
func (u *upRun) waitRestarting(ctx context.Context, p *Proc, wait func(*Proc) error) error {
	for restarts := 0; ; restarts++ {
		err := wait(p)
		if err == nil || restarts == 2 || ctx.Err() != nil || alive(*p) {
			return err
		}
		fmt.Fprintf(u.out, "  %s exited during start-up (%s): starting it again, as its pod's kubelet would\n", p.Name, lastLine(p.Log))
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

// lastLine is the last line a process wrote to its log (startProc's "=== " start lines are not
// its), for a one-line notice.
func lastLine(path string) string {
	lines := strings.Split(tailFile(path, 5), "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		if l := strings.TrimSpace(lines[i]); l != "" && !strings.HasPrefix(l, "=== ") {
			return l
		}
	}
	return "no output"
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
