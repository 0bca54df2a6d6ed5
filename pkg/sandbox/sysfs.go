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
// of the files, not a canned text. $AIN_SYSFS_ROOT is the simulated container's root: its /sys,
// and its terminationMessagePath (termPath, default /dev/termination-log), which the kubelet
// creates empty and mounts before the container starts; termMsg is what the script left there,
// read as a kubelet reads it (terminationMessage).
func runProbe(ctx context.Context, script, desc, dir, termPath string) (out, termMsg string, err error) {
	root := filepath.Join(dir, "root")
	_ = os.RemoveAll(root)
	if _, err := WriteSysfsTree(root, desc); err != nil {
		return "", "", fmt.Errorf("simulated sysfs: %w", err)
	}
	if termPath == "" {
		termPath = corev1.TerminationMessagePathDefault
	}
	termFile := filepath.Join(root, filepath.FromSlash(termPath))
	if err := os.MkdirAll(filepath.Dir(termFile), 0o755); err != nil {
		return "", "", err
	}
	if err := os.WriteFile(termFile, nil, 0o666); err != nil {
		return "", "", err
	}
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "/bin/sh", "-c", script)
	cmd.Env = []string{"PATH=/usr/local/bin:/usr/bin:/bin", SysfsRootEnv + "=" + root}
	var b bytes.Buffer
	cmd.Stdout = &b
	err = cmd.Run()
	if ee, ok := err.(*exec.ExitError); ok && ee.ExitCode() == 1 {
		err = nil // grep found nothing: no RDMA device, an empty dump
	}
	return b.String(), readTermMessage(termFile), err
}

// Limits of a kubelet's termination messages (k8s.io/kubernetes v1.37.2 pkg/kubelet/container
// runtime.go): MaxContainerTerminationMessageLength, and MaxContainerTerminationMessageLogLength
// and MaxContainerTerminationMessageLogLines for a message taken from the log.
const (
	termMsgMax      = 4096
	termMsgLogMax   = 2048
	termMsgLogLines = 80
)

// readTermMessage reads a termination message file as the kubelet does (kuberuntime
// getTerminationMessage, tail.ReadAtMost): at most its last termMsgMax bytes, cut silently.
func readTermMessage(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	if len(b) > termMsgMax {
		b = b[len(b)-termMsgMax:]
	}
	return string(b)
}

// terminationMessage is the message the kubelet puts in container c's terminated state: what
// the container wrote to its terminationMessagePath; or, with FallbackToLogsOnError, a non-zero
// exit code and nothing written, the last termMsgLogLines lines of its log, at most
// termMsgLogMax bytes (kuberuntime convertToKubeContainerStatus, readLastStringFromContainerLogs).
func terminationMessage(c *corev1.Container, written, log string, exitCode int) string {
	if written != "" || c.TerminationMessagePolicy != corev1.TerminationMessageFallbackToLogsOnError || exitCode == 0 {
		return written
	}
	lines := strings.SplitAfter(log, "\n")
	if lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	tail := strings.Join(lines[max(0, len(lines)-termMsgLogLines):], "")
	if len(tail) > termMsgLogMax {
		tail = tail[len(tail)-termMsgLogMax:]
	}
	return tail
}
