package sandbox

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// SysfsRootEnv moves the /sys the IB port probe reads (pkg/ibport.SysfsDumpCommand reads
// ${AIN_SYSFS_ROOT}/sys/...). Only the sandbox's simulated kubelet sets it; pods never do.
const SysfsRootEnv = "AIN_SYSFS_ROOT"

// sysfsMarker tells the probe's command from other pods' (the scenarios match on it too).
const sysfsMarker = "/sys/class/infiniband"

// runsProbe reports whether pod's container is the IB port probe: /bin/sh -c <script> with the
// script reading /sys/class/infiniband.
func runsProbe(pod *corev1.Pod) (script string, ok bool) {
	if len(pod.Spec.Containers) == 0 {
		return "", false
	}
	cmd := pod.Spec.Containers[0].Command
	if len(cmd) != 3 || !strings.HasSuffix(cmd[0], "sh") || cmd[1] != "-c" || !strings.Contains(cmd[2], sysfsMarker) {
		return "", false
	}
	return cmd[2], true
}

// WriteSysfsTree turns a scenario's node description, written as the probe's own `path:value`
// lines (the samples under samples/probe/), into files under root: root/sys/class/infiniband/
// mlx5_0/ports/1/state holding "4: ACTIVE", and so on, GID tables, their types and netdevs and
// the pod's network interfaces included. Lines that are not a /sys path are ignored.
func WriteSysfsTree(root, desc string) (int, error) {
	n := 0
	sc := bufio.NewScanner(strings.NewReader(desc))
	for sc.Scan() {
		l := strings.TrimSpace(sc.Text())
		if !strings.HasPrefix(l, "/sys/") {
			continue
		}
		path, val, ok := strings.Cut(l, ":")
		if !ok || strings.Contains(path, "..") {
			continue
		}
		f := filepath.Join(root, filepath.FromSlash(path))
		if err := os.MkdirAll(filepath.Dir(f), 0o755); err != nil {
			return n, err
		}
		if err := os.WriteFile(f, []byte(val+"\n"), 0o644); err != nil {
			return n, err
		}
		n++
	}
	return n, sc.Err()
}

// runProbe runs the probe pod's own script as a local process over the simulated sysfs tree
// described by desc and returns what it printed: the probe's output is what the script makes
// of the files, not a canned text.
func runProbe(ctx context.Context, script, desc, dir string) (string, error) {
	root := filepath.Join(dir, "root")
	_ = os.RemoveAll(root)
	if _, err := WriteSysfsTree(root, desc); err != nil {
		return "", fmt.Errorf("simulated sysfs: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "/bin/sh", "-c", script)
	cmd.Env = []string{"PATH=/usr/local/bin:/usr/bin:/bin", SysfsRootEnv + "=" + root}
	var out bytes.Buffer
	cmd.Stdout = &out
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); ok && ee.ExitCode() == 1 {
		err = nil // grep found nothing: no RDMA device, an empty dump
	}
	return out.String(), err
}
