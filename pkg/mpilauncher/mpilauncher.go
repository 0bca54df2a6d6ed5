// Package mpilauncher reads the log of an MPI launcher (mpirun of Open MPI/ORTE or PRRTE, MPICH
// and Intel MPI's Hydra, as run by an MPIJob's launcher pod) and says whether it failed because
// it started before its workers were resolvable or reachable.
//
// That failure is the classic one of MPIJobs whose launcher is created as soon as the worker pods
// exist (training-operator kubeflow.org/v1, or mpi-operator without launcherCreationPolicy:
// WaitForWorkersReady): the workers' DNS names behind the headless Service resolve only once the
// pods are Ready, and their sshd listens only once the container runs. Its signatures are
// `ssh: Could not resolve hostname ...`, ssh `Connection refused`/`No route to host`/timeouts and
// `kex_exchange_identification` errors, followed by `ORTE was unable to reliably start one or more
// daemons` (PRRTE: `PRTE has lost communication with a remote daemon` and friends, Hydra:
// `HYDU_sock_connect`/`unable to connect`).
//
// Verdicts: launcher-before-workers, healthy (no failure signature), other (a failure, but not
// this one: the evidence lines say which).
package mpilauncher

import (
	"bufio"
	"fmt"
	"io"
	"strings"
)

// Verdicts.
const (
	VerdictLauncherBeforeWorkers = "launcher-before-workers"
	VerdictHealthy               = "healthy"
	VerdictOther                 = "other"
)

// Limits that keep memory constant.
const (
	maxEvidence  = 20
	maxPerKind   = 3
	maxTextLen   = 400
	maxLineBytes = 1 << 20
	maxHostsKept = 16
)

// Evidence is one log line supporting the verdict.
type Evidence struct {
	Line int    `json:"line"`
	Kind string `json:"kind"`
	Text string `json:"text"`
}

// Report is the launcher verdict. The JSON names are a stable interface.
type Report struct {
	Verdict  string     `json:"verdict"`
	Evidence []Evidence `json:"evidence"`
	Fix      string     `json:"fix"`
	// Hosts are the worker names the launcher could not resolve or reach.
	Hosts []string `json:"hosts,omitempty"`
	Lines int      `json:"lines"`
}

// OK reports whether the verdict is healthy.
func (r *Report) OK() bool { return r.Verdict == VerdictHealthy }

type signature struct {
	kind  string
	early bool // a launcher-before-workers signature
	match func(s, lower string) bool
}

func contains(sub string) func(s, lower string) bool {
	l := strings.ToLower(sub)
	return func(_, lower string) bool { return strings.Contains(lower, l) }
}

func all(subs ...string) func(s, lower string) bool {
	for i := range subs {
		subs[i] = strings.ToLower(subs[i])
	}
	return func(_, lower string) bool {
		for _, x := range subs {
			if !strings.Contains(lower, x) {
				return false
			}
		}
		return true
	}
}

// sshPort22 matches the ssh client's "Connection closed by <host> port 22" (sshd not ready yet),
// not the worker-side sshd's "Connection closed by <ip> port 51694".
func sshPort22(prefix string) func(s, lower string) bool {
	return func(s, _ string) bool {
		i := strings.Index(s, prefix)
		if i < 0 {
			return false
		}
		rest := s[i+len(prefix):]
		return strings.HasSuffix(rest, " port 22") || strings.Contains(rest, " port 22:") || strings.Contains(rest, " port 22 ")
	}
}

// signatures are checked in order; the first that matches a line names it.
var signatures = []signature{
	{"dns", true, contains("Could not resolve hostname")},
	{"dns", true, all("ssh:", "Name or service not known")},
	{"dns", true, all("ssh:", "Temporary failure in name resolution")},
	{"ssh-refused", true, contains("kex_exchange_identification")},
	{"ssh-refused", true, all("ssh:", "connect to host", "Connection refused")},
	{"ssh-refused", true, all("ssh:", "connect to host", "No route to host")},
	{"ssh-refused", true, all("ssh:", "connect to host", "Connection timed out")},
	{"ssh-refused", true, sshPort22("Connection closed by ")},
	{"ssh-refused", true, sshPort22("Connection reset by ")},
	{"orte-daemons", true, contains("ORTE was unable to reliably start one or more daemons")},
	{"orte-daemons", true, contains("ORTE does not know how to route a message")},
	{"orte-daemons", true, all("daemon", "died unexpectedly", "while attempting to launch")},
	{"orte-daemons", true, contains("ORTE has lost communication with a remote daemon")},
	{"prrte-daemons", true, contains("PRTE has lost communication with a remote daemon")},
	{"prrte-daemons", true, contains("PRRTE was unable to reliably start one or more daemons")},
	{"prrte-daemons", true, contains("PRTE was unable to reliably start one or more daemons")},
	{"prrte-daemons", true, all("prte", "unable to start a daemon")},
	{"hydra", true, contains("HYDU_sock_connect")},
	{"hydra", true, all("[mpiexec@", "unable to get host address")},
	{"hydra", true, all("[mpiexec@", "unable to connect from")},
	{"hydra", true, all("HYD_", "unable to run proxy")},
	// Failures of another kind.
	{"rank-failed", false, all("mpirun noticed that process rank", "exited on signal")},
	{"rank-failed", false, contains("Primary job  terminated normally, but")},
	{"rank-failed", false, contains("MPI_ABORT was invoked")},
	{"rank-failed", false, contains("BAD TERMINATION OF ONE OF YOUR APPLICATION PROCESSES")},
	{"slots", false, contains("There are not enough slots available")},
	{"nccl", false, contains("NCCL WARN")},
	{"nccl", false, contains("NCCL error")},
	{"cuda", false, contains("CUDA error")},
	{"crash", false, contains("Segmentation fault")},
	{"crash", false, contains("Traceback (most recent call last)")},
	{"error", false, contains("ORTE_ERROR_LOG")},
	{"error", false, all("mpirun", "was unable to launch")},
	{"error", false, all("prterun", "was unable to launch")},
}

// Analyze reads a launcher log.
func Analyze(r io.Reader) (*Report, error) {
	rep := &Report{Verdict: VerdictHealthy, Evidence: []Evidence{}}
	perKind := map[string]int{}
	early, other := 0, 0
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), maxLineBytes)
	for sc.Scan() {
		rep.Lines++
		s := strings.TrimSpace(sc.Text())
		if s == "" {
			continue
		}
		lower := strings.ToLower(s)
		for _, sig := range signatures {
			if !sig.match(s, lower) {
				continue
			}
			if sig.early {
				early++
				if h := hostOf(s); h != "" && len(rep.Hosts) < maxHostsKept && !has(rep.Hosts, h) {
					rep.Hosts = append(rep.Hosts, h)
				}
			} else {
				other++
			}
			if perKind[sig.kind] < maxPerKind && len(rep.Evidence) < maxEvidence {
				perKind[sig.kind]++
				t := s
				if len(t) > maxTextLen {
					t = t[:maxTextLen]
				}
				rep.Evidence = append(rep.Evidence, Evidence{Line: rep.Lines, Kind: sig.kind, Text: t})
			}
			break
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("reading launcher log: %w", err)
	}
	switch {
	case early > 0:
		rep.Verdict = VerdictLauncherBeforeWorkers
		rep.Fix = FixLauncherBeforeWorkers
	case other > 0:
		rep.Verdict = VerdictOther
		rep.Fix = "the launcher reached its workers; the job failed later: read the evidence lines and the failing rank's own log (for NCCL errors: `ain doctor nccl-log`)"
	default:
		rep.Fix = ""
	}
	return rep, nil
}

// FixLauncherBeforeWorkers is the advice for the launcher-before-workers verdict.
const FixLauncherBeforeWorkers = "the launcher ran mpirun before the workers were resolvable/reachable. With mpi-operator " +
	"(kubeflow.org/v2beta1, v0.5.0+) set spec.launcherCreationPolicy: WaitForWorkersReady. With training-operator's " +
	"kubeflow.org/v1 MPIJob (no such field) give the launcher an init container that waits for every worker, e.g. " +
	"`until getent hosts <job>-worker-0.<job>.<ns>.svc && nc -z <job>-worker-0.<job>.<ns>.svc 22; do sleep 2; done`, " +
	"and keep restartPolicy: OnFailure with a backoffLimit so a retry can succeed"

// hostOf extracts the host name from an ssh error line.
func hostOf(s string) string {
	for _, key := range []string{"resolve hostname ", "connect to host "} {
		if i := strings.Index(s, key); i >= 0 {
			h := s[i+len(key):]
			if j := strings.IndexAny(h, ": "); j >= 0 {
				h = h[:j]
			}
			return h
		}
	}
	return ""
}

func has(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
