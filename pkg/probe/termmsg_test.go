package probe_test

import (
	"bufio"
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/ain-hpc/ain/pkg/counters"
	"github.com/ain-hpc/ain/pkg/ibport"
	"github.com/ain-hpc/ain/pkg/probe"
	"github.com/ain-hpc/ain/pkg/sandbox"
)

// shells are the POSIX shells the wrapped probe is run with: /bin/sh (dash on Debian) and, when
// installed, busybox's ash, the shell of the default probe image.
func shells() [][]string {
	sh := [][]string{{"/bin/sh"}}
	if p, err := exec.LookPath("busybox"); err == nil {
		sh = append(sh, []string{p, "sh"})
	}
	return sh
}

// runSh runs script with shell and $AIN_SYSFS_ROOT at root.
func runSh(t *testing.T, shell []string, root, script string) (stdout string, exit int) {
	t.Helper()
	cmd := exec.Command(shell[0], append(shell[1:], "-c", script)...)
	cmd.Env = []string{"PATH=/usr/bin:/bin", "AIN_SYSFS_ROOT=" + root}
	var b bytes.Buffer
	cmd.Stdout = &b
	err := cmd.Run()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatal(err)
	}
	return b.String(), cmd.ProcessState.ExitCode()
}

// terminated is a pod whose probe container ended with message (as the kubelet keeps it: the
// file's last 4096 bytes).
func terminated(message string) *corev1.Pod {
	if len(message) > 4096 {
		message = message[len(message)-4096:]
	}
	return &corev1.Pod{Status: corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{{
		Name: "probe", State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{Message: message}}}}}}
}

// The wrapped probe prints exactly what the bare command prints and exits as it does, and its
// termination message holds the same dump (paths as a pod sees them), which preflight reads back
// whole, for every simulated node kind of the sandbox.
func TestResultCommandMatchesTheBareProbe(t *testing.T) {
	for _, c := range []struct{ sample, cmd string }{
		{"probe/sysfs-ib-active.txt", ibport.SysfsDumpCommand},
		{"probe/sysfs-ib-init.txt", ibport.SysfsDumpCommand},
		{"probe/sysfs-roce-active.txt", ibport.SysfsDumpCommand},
		{"probe/sysfs-roce-host-gids.txt", ibport.SysfsDumpCommand},
		{"probe/sysfs-ib-active.txt", counters.ProbeCommand},
	} {
		for _, sh := range shells() {
			desc, err := sandbox.RenderSample(c.sample, sandbox.SampleData{Pod: "p", Namespace: "ns", Env: map[string]string{}})
			if err != nil {
				t.Fatal(err)
			}
			root := t.TempDir()
			if _, err := sandbox.WriteSysfsTree(root, desc); err != nil {
				t.Fatal(err)
			}
			bare, bareExit := runSh(t, sh, root, c.cmd)
			if err := os.MkdirAll(filepath.Join(root, "dev"), 0o755); err != nil {
				t.Fatal(err)
			}
			term := filepath.Join(root, "dev", "termination-log")
			if err := os.WriteFile(term, nil, 0o666); err != nil {
				t.Fatal(err)
			}
			wrapped, wrappedExit := runSh(t, sh, root, probe.ResultCommand(c.cmd))
			if wrapped != bare || wrappedExit != bareExit {
				t.Fatalf("%s %s: wrapped printed %d bytes exit %d, bare %d bytes exit %d", sh, c.sample, len(wrapped), wrappedExit, len(bare), bareExit)
			}
			msg, err := os.ReadFile(term)
			if err != nil {
				t.Fatal(err)
			}
			if len(msg) > 4096 || strings.Contains(string(msg), root) {
				t.Errorf("%s: message of %d bytes, sandbox root in it: %v", c.sample, len(msg), strings.Contains(string(msg), root))
			}
			body, ok := probe.ResultMessage(terminated(string(msg)))
			if !ok {
				t.Fatalf("%s: message not read back: %q", c.sample, msg)
			}
			if want := strings.ReplaceAll(bare, root, ""); string(body) != want {
				t.Errorf("%s: message body differs from the output:\n%s\nwant\n%s", c.sample, body, want)
			}
			if c.cmd == ibport.SysfsDumpCommand {
				a, errA := ibport.Parse(strings.NewReader(bare))
				b, errB := ibport.Parse(bytes.NewReader(body))
				if errA != nil || errB != nil || !reflect.DeepEqual(a, b) || len(a.Ports) == 0 {
					t.Errorf("%s: parsed output and message differ: %v %v\n%+v\n%+v", c.sample, errA, errB, a, b)
				}
			}
		}
	}
}

// No device, nothing printed: the message is there and empty, and the exit status (grep's 2,
// no such file) is kept.
func TestResultCommandEmpty(t *testing.T) {
	for _, sh := range shells() {
		root := t.TempDir()
		if err := os.MkdirAll(filepath.Join(root, "dev"), 0o755); err != nil {
			t.Fatal(err)
		}
		out, exit := runSh(t, sh, root, probe.ResultCommand(`grep -H . ${AIN_SYSFS_ROOT:-}/sys/class/infiniband/*/ports/*/state 2>/dev/null`))
		msg, _ := os.ReadFile(filepath.Join(root, "dev", "termination-log"))
		body, ok := probe.ResultMessage(terminated(string(msg)))
		if out != "" || exit != 2 || !ok || len(body) != 0 || body == nil {
			t.Errorf("%s: out %q exit %d message %q read %q %v", sh, out, exit, msg, body, ok)
		}
	}
}

// A message cut by the kubelet (its start: more than 4096 bytes; its end: the per-pod budget)
// or not written by the wrapper is not used: the probe's log is read instead.
func TestResultMessageIncomplete(t *testing.T) {
	var b strings.Builder
	b.WriteString(probe.ResultBegin + "\n")
	for b.Len() < 5000 {
		b.WriteString("/sys/class/infiniband/mlx5_0/ports/1/gids/3:0000:0000:0000:0000:0000:ffff:0a00:0003\n")
	}
	b.WriteString(probe.ResultEnd + "\n")
	whole := b.String()
	for name, c := range map[string]struct {
		msg string
		ok  bool
	}{
		"whole":                   {probe.ResultBegin + "\n/sys/x:1\n" + probe.ResultEnd + "\n", true},
		"runtime's message first": {"OOMKilled: " + probe.ResultBegin + "\n/sys/x:1\n" + probe.ResultEnd + "\n", true},
		"start cut (over 4 KiB)":  {whole, false},
		"end cut":                 {whole[:3000], false},
		"log fallback":            {"grep: /sys: Permission denied\n", false},
		"none":                    {"", false},
	} {
		if _, ok := probe.ResultMessage(terminated(c.msg)); ok != c.ok {
			t.Errorf("%s: read %v, want %v", name, ok, c.ok)
		}
	}
}

// The wrapper passes the output through as the command prints it, blank lines included, and
// keeps its exit status; the message holds the same lines.
func TestResultCommandKeepsLines(t *testing.T) {
	for _, sh := range shells() {
		for _, c := range []struct {
			cmd, out string
			exit     int
		}{
			{`printf 'a\n\n\nb\n\n'`, "a\n\n\nb\n\n", 0},
			{`printf 'x\n'; exit 3`, "x\n", 3},
			{`printf '\n'`, "\n", 0},
			{`printf 'no newline'`, "no newline\n", 0}, // a line ends with a newline in the log
		} {
			root := t.TempDir()
			if err := os.MkdirAll(filepath.Join(root, "dev"), 0o755); err != nil {
				t.Fatal(err)
			}
			out, exit := runSh(t, sh, root, probe.ResultCommand(c.cmd))
			msg, _ := os.ReadFile(filepath.Join(root, "dev", "termination-log"))
			body, ok := probe.ResultMessage(terminated(string(msg)))
			if out != c.out || exit != c.exit || !ok || string(body) != c.out {
				t.Errorf("%s %q: out %q exit %d, message %q (read %v)", sh, c.cmd, out, exit, body, ok)
			}
		}
	}
}

// A probe still running prints what it has so far: its log is read at the timeout.
func TestResultCommandStreams(t *testing.T) {
	for _, sh := range shells() {
		root := t.TempDir()
		if err := os.MkdirAll(filepath.Join(root, "dev"), 0o755); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(sh[0], append(sh[1:], "-c", probe.ResultCommand(`echo first; sleep 3; echo second`))...)
		cmd.Env = []string{"PATH=/usr/bin:/bin", "AIN_SYSFS_ROOT=" + root}
		pr, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t0 := time.Now()
		line, err := bufio.NewReader(pr).ReadString('\n')
		if err != nil || line != "first\n" || time.Since(t0) > 2*time.Second {
			t.Errorf("%s: first line %q after %s (%v): the output waits for the command's end", sh, line, time.Since(t0), err)
		}
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	}
}
