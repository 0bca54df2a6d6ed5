package probe

import (
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// A per-node probe (IB ports, counters) hands its result back twice: on stdout, as before, and
// in its container's termination message, which the kubelet copies into the pod's status
// (state.terminated.message). The watch that already follows the probe pods delivers that
// status, so a probe whose message is complete costs no log read: at 1000 nodes that is 1000
// requests fewer, half of preflight's API requests.
//
// What a kubelet does with the file (k8s.io/kubernetes v1.37.2, checked in the module source):
// pkg/kubelet/kuberuntime/kuberuntime_container.go getTerminationMessage reads the file at
// terminationMessagePath with tail.ReadAtMost(path, MaxContainerTerminationMessageLength =
// 4096): the last 4096 bytes, silently; with terminationMessagePolicy FallbackToLogsOnError and
// a non-zero exit code and an empty file it takes the last 80 lines / 2048 bytes of the log
// instead; pkg/kubelet/status/status_manager.go normalizeStatus then cuts each message to its
// first 12288/containers bytes. So a message can lose its start or its end without saying so:
// the result is framed by a begin and an end line, and only a message with both is used. A
// larger result (8 RoCE NICs with full GID tables print more than 4 KiB) falls back to one log
// read, as every probe did before.
const (
	// TerminationMessagePath is the probe container's terminationMessagePath: the kubelet's
	// default, set explicitly because the probe's command writes it.
	TerminationMessagePath = "/dev/termination-log"
	resultBegin            = "ain-probe-result-begin"
	resultEnd              = "ain-probe-result-end"
	// exitMark carries the probe command's exit status through the wrapper's pipe.
	exitMark = "ain-probe-exit"
)

// ResultCommand wraps a probe's shell command so that it prints its output as before, line by
// line as the command prints it (a probe still running at the timeout has its log read, and that
// log must hold what it printed so far), and also writes it, framed, to the termination message
// file, keeping the command's exit status. The command's status reaches the reading side of the
// pipe as a last line of its own (exitMark), after a newline of the wrapper's: an output that
// ends with a newline then shows one empty line more, which the reader drops. It needs only
// POSIX sh (busybox ash, dash). ${AIN_SYSFS_ROOT} is unset in a pod; the sandbox's simulated
// kubelet sets it to the simulated container's root (its /sys, its /dev), and the message then
// drops that prefix from each line so that it carries the paths as a pod sees them (the
// sandbox's prefix alone would overflow the 4 KiB).
func ResultCommand(cmd string) string {
	return `{ (` + cmd + `
); s=$?; printf '\n` + exitMark + ` %s\n' "$s"; } | { f="${AIN_SYSFS_ROOT:-}` + TerminationMessagePath + `"; s=1; e=0; ` +
		`echo ` + resultBegin + ` >"$f" 2>/dev/null; ` +
		`while IFS= read -r l; do ` +
		`case $l in ` + exitMark + `\ *) s=${l#` + exitMark + ` }; [ $e -eq 0 ] || e=$((e-1)); break;; "") e=$((e+1)); continue;; esac; ` +
		`while [ $e -gt 0 ]; do echo; echo >>"$f" 2>/dev/null; e=$((e-1)); done; ` +
		`printf '%s\n' "$l"; printf '%s\n' "${l#"${AIN_SYSFS_ROOT:-}"}" >>"$f" 2>/dev/null; done; ` +
		`while [ $e -gt 0 ]; do echo; echo >>"$f" 2>/dev/null; e=$((e-1)); done; ` +
		`echo ` + resultEnd + ` >>"$f" 2>/dev/null; exit $s; }`
}

// withResultMessage makes pod's probe container report through its termination message.
func withResultMessage(pod *corev1.Pod) *corev1.Pod {
	c := &pod.Spec.Containers[0]
	c.Command = []string{"/bin/sh", "-c", ResultCommand(c.Command[len(c.Command)-1])}
	c.TerminationMessagePath = TerminationMessagePath
	// On a failure before anything is written, the log's tail is the best message there is.
	c.TerminationMessagePolicy = corev1.TerminationMessageFallbackToLogsOnError
	return pod
}

// resultMessage returns the probe output framed in the probe container's termination message,
// and whether it was there whole.
func resultMessage(pod *corev1.Pod) ([]byte, bool) {
	for _, cs := range pod.Status.ContainerStatuses {
		t := cs.State.Terminated
		if cs.Name != "probe" || t == nil {
			continue
		}
		// A runtime's own message comes first, joined by ": " (getTerminationMessage's caller).
		_, body, ok := strings.Cut(t.Message, resultBegin+"\n")
		if !ok {
			return nil, false
		}
		body, ok = strings.CutSuffix(strings.TrimRight(body, "\n"), resultEnd)
		if !ok {
			return nil, false
		}
		return []byte(body), true
	}
	return nil, false
}
