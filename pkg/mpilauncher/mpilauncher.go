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
// Verdicts, each with the evidence that separates it from its neighbours:
//
//   - launcher-before-workers: ssh could not resolve or reach a worker (DNS failure, Connection
//     refused/timed out, No route to host) or the daemons never started, with no job output before.
//   - config-error: ssh was asked to resolve "host:N" (`ssh: Could not resolve hostname w-0:8`):
//     the slots syntax reached ssh as a host name, which no wait fixes. Separated from a DNS race by
//     the ":<digits>" suffix of the name.
//   - ssh-throttled: `ssh_exchange_identification`/`kex_exchange_identification: Connection closed
//     by remote host`: sshd accepted the TCP connection and dropped it before its banner, which is
//     sshd's MaxStartups throttling (or PerSourcePenalties, hosts.deny), not a worker that is not up
//     yet (that one refuses the connection). Only when no DNS/refused/timeout line is present.
//   - worker-lost: `ORTE/PRTE has lost communication with a remote daemon` after the job printed
//     output and without any ssh/DNS failure: the workers were reached and a worker (its pod or
//     node) died mid-job; the launcher is not the culprit.
//   - healthy (no failure signature, and a line that a launch writes: see launchLine), other (a
//     failure of another kind: the evidence lines say which), not-launcher-log (neither).
package mpilauncher

import (
	"bufio"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"

	"github.com/ain-hpc/ain/pkg/next"

	"github.com/ain-hpc/ain/pkg/input"
)

// Verdicts.
const (
	VerdictLauncherBeforeWorkers = "launcher-before-workers"
	VerdictHealthy               = "healthy"
	VerdictOther                 = "other"
	VerdictConfigError           = "config-error"
	VerdictSSHThrottled          = "ssh-throttled"
	VerdictWorkerLost            = "worker-lost"
	// VerdictEmpty and VerdictNotText: the input holds no launcher log to judge (issue 19: an
	// empty file and random bytes were reported "OK: healthy").
	VerdictEmpty   = "empty"
	VerdictNotText = "not-text"
	// VerdictNotLauncher: text with no failure signature and no line a launch writes (issue
	// 32: any text, the README included, was "OK: healthy").
	VerdictNotLauncher = "not-launcher-log"
)

// Verdicts lists every verdict Analyze returns.
var Verdicts = []string{VerdictHealthy, VerdictLauncherBeforeWorkers, VerdictConfigError, VerdictSSHThrottled, VerdictWorkerLost, VerdictOther, VerdictEmpty, VerdictNotText, VerdictNotLauncher}

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
	// Next are the ain commands the fix suggests running.
	Next []next.Command `json:"next,omitempty"`
	// Hosts are the worker names the launcher could not resolve or reach.
	Hosts []string `json:"hosts,omitempty"`
	Lines int      `json:"lines"`
}

// Evidence kinds that are not plain signature families.
const (
	kindHostSlots  = "host-slots"
	kindThrottled  = "ssh-throttled"
	kindSSHClosed  = "ssh-closed"
	kindSSHReset   = "ssh-reset"
	kindJobStarted = "job-started"
)

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
	// sshd dropping a connection before its banner: throttling, not a worker that is not up.
	{kindThrottled, true, all("exchange_identification", "Connection closed by remote host")},
	// The same drop seen as a reset: sshd writes "Not allowed at this time" and closes the socket
	// with the client's banner unread (OpenSSH sshd.c drop_connection), so the client's read gets
	// ECONNRESET: "kex_exchange_identification: read: Connection reset by peer" (kex.c, OpenSSH
	// 8.0+) or "ssh_exchange_identification: read: ..." (sshconnect.c before 8.0).
	// A reset can also be sshd dying or a filter; it counts as throttling only when other
	// connections of the same launch got through (a "Permanently added" note): load, not a
	// worker that is not up.
	{kindSSHReset, true, all("exchange_identification: read: ", "Connection reset by peer")},
	{"dns", true, contains("Could not resolve hostname")},
	{"dns", true, all("ssh:", "Name or service not known")},
	{"dns", true, all("ssh:", "Temporary failure in name resolution")},
	{"ssh-refused", true, contains("kex_exchange_identification")},
	{"ssh-refused", true, all("ssh:", "connect to host", "Connection refused")},
	{"ssh-refused", true, all("ssh:", "connect to host", "No route to host")},
	{"ssh-refused", true, all("ssh:", "connect to host", "Connection timed out")},
	{kindSSHClosed, true, sshPort22("Connection closed by ")},
	// ssh's last line after a reset during the banner exchange: weighed like a close (the
	// exchange_identification line before it says whether sshd was throttling).
	{kindSSHClosed, true, sshPort22("Connection reset by ")},
	// The kubeflow.org/v1 launcher reaches workers with kubexec.sh (`kubectl exec POD -- orted ...`,
	// training-operator v1.8.1 newConfigMap); the API server refuses an exec into a worker whose
	// container is not running yet with this line.
	{"kubexec", true, all("unable to upgrade connection", "container not found")},
	{"orte-daemons", true, contains("ORTE was unable to reliably start one or more daemons")},
	{"orte-daemons", true, contains("ORTE does not know how to route a message")},
	{"orte-daemons", true, all("daemon", "died unexpectedly", "while attempting to launch")},
	{"orte-daemons", true, contains("ORTE has lost communication with a remote daemon")},
	{"orte-daemons", true, contains("ORTE has lost communication with its daemon")},
	{"prrte-daemons", true, contains("PRTE has lost communication with a remote daemon")},
	{"prrte-daemons", true, contains("prterun was unable to reliably start one or more daemons")},
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
	a := &launcherLog{rep: &Report{Verdict: VerdictHealthy, Evidence: []Evidence{}}, perKind: map[string]int{}}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), maxLineBytes)
	for sc.Scan() {
		a.line(sc.Text())
	}
	if err := sc.Err(); err != nil {
		return nil, input.ScanError(err, a.rep.Lines+1, maxLineBytes)
	}
	a.verdict()
	return a.rep, nil
}

// launcherLog is what Analyze has counted so far.
type launcherLog struct {
	rep                                              *Report
	perKind                                          map[string]int // evidence lines kept per kind
	strong, closed, throttled, slots, daemons, other int
	resets                                           int  // kindSSHReset lines
	reached                                          bool // ssh got through to some host
	lost, lostAfterOutput                            bool
	firstOutput                                      *Evidence
	inHelp                                           bool // inside a "-----" help block of mpirun
	lostHosts                                        []string
	nonBlank, binary                                 int
	launched                                         bool // a line a launch writes was seen (launchLine)
}

// add keeps a line as evidence of kind, up to maxPerKind per kind and maxEvidence in all.
func (a *launcherLog) add(kind string, line int, s string) {
	if a.perKind[kind] < maxPerKind && len(a.rep.Evidence) < maxEvidence {
		a.perKind[kind]++
		a.rep.Evidence = append(a.rep.Evidence, Evidence{Line: line, Kind: kind, Text: clip(s)})
	}
}

// line reads one line of the launcher log: the help blocks, the lost workers they name, the
// first signature that matches, and the job's first output.
func (a *launcherLog) line(text string) {
	a.rep.Lines++
	s := strings.TrimSpace(text)
	if s == "" {
		return
	}
	a.nonBlank++
	if strings.IndexByte(s, 0) >= 0 || !utf8.ValidString(s) {
		a.binary++
	}
	if strings.Trim(s, "-") == "" && len(s) >= 10 {
		a.inHelp = !a.inHelp
		return
	}
	lower := strings.ToLower(s)
	a.launched = a.launched || launchLine(s, lower)
	a.reached = a.reached || strings.HasPrefix(s, "Warning: Permanently added")
	if a.lost && a.inHelp {
		// "Remote daemon: [[43015,0],20] on node <pod>" / "hostname:  <host>" name the lost worker.
		if h := lostHost(s); h != "" && len(a.lostHosts) < maxHostsKept && !has(a.lostHosts, h) {
			a.lostHosts = append(a.lostHosts, h)
		}
	}
	for _, sig := range signatures {
		if sig.match(s, lower) {
			a.signature(sig, s, lower)
			return
		}
	}
	if !a.inHelp && a.firstOutput == nil && jobOutput(s) {
		a.firstOutput = &Evidence{Line: a.rep.Lines, Kind: kindJobStarted, Text: clip(s)}
	}
}

// signature counts a line that matched sig and keeps it as evidence.
func (a *launcherLog) signature(sig signature, s, lower string) {
	kind := sig.kind
	switch {
	case kind == kindThrottled:
		a.throttled++
	case kind == kindSSHClosed:
		a.closed++
	case kind == kindSSHReset:
		a.resets++
	case kind == "dns" && isHostSlots(s):
		kind = kindHostSlots
		a.slots++
	case kind == "orte-daemons" || kind == "prrte-daemons":
		a.daemons++
		if strings.Contains(lower, "has lost communication with") {
			if !a.lost {
				a.lostAfterOutput = a.firstOutput != nil
			}
			a.lost = true
		}
	case sig.early:
		a.strong++
	default:
		a.other++
	}
	if sig.early {
		if h := hostOf(s); h != "" && len(a.rep.Hosts) < maxHostsKept && !has(a.rep.Hosts, h) {
			a.rep.Hosts = append(a.rep.Hosts, h)
		}
	}
	a.add(kind, a.rep.Lines, s)
}

// verdict sets the report's verdict and fix from the counts: the first cause that applies.
func (a *launcherLog) verdict() {
	rep := a.rep
	if a.reached {
		a.throttled += a.resets
	} else {
		a.strong += a.resets
	}
	switch {
	case a.nonBlank == 0:
		rep.Verdict, rep.Fix = VerdictEmpty, "the input has no text: give the launcher pod's log (kubectl logs <job>-launcher), or the MPIJob's name"
		return
	case a.binary*2 >= a.nonBlank:
		rep.Verdict = VerdictNotText
		rep.Fix = fmt.Sprintf("%d of %d lines are not text (NUL bytes or invalid UTF-8): this is not a launcher log", a.binary, a.nonBlank)
		return
	case a.slots > 0:
		rep.Verdict, rep.Fix = VerdictConfigError, FixHostSlots
	case a.strong > 0 || (a.closed > 0 && a.throttled == 0):
		rep.Verdict, rep.Fix = VerdictLauncherBeforeWorkers, FixLauncherBeforeWorkers
	case a.throttled > 0:
		rep.Verdict, rep.Fix = VerdictSSHThrottled, FixSSHThrottled
	case a.lost && a.lostAfterOutput:
		rep.Verdict, rep.Fix, rep.Next = VerdictWorkerLost, FixWorkerLost, []next.Command{"doctor nccl-log"}
		rep.Hosts = a.lostHosts
		// The first job output line is the evidence that the workers had been reached.
		rep.Evidence = append([]Evidence{*a.firstOutput}, rep.Evidence...)
		if len(rep.Evidence) > maxEvidence {
			rep.Evidence = rep.Evidence[:maxEvidence]
		}
	case a.daemons > 0:
		rep.Verdict, rep.Fix = VerdictLauncherBeforeWorkers, FixLauncherBeforeWorkers
	case a.other > 0:
		rep.Verdict = VerdictOther
		rep.Fix = "the launcher reached its workers; the job failed later: read the evidence lines and the failing rank's own log (for NCCL errors, the analysis of its NCCL log)"
		rep.Next = []next.Command{"doctor nccl-log"}
	case !a.launched:
		rep.Verdict = VerdictNotLauncher
		rep.Fix = fmt.Sprintf("none of its %d line(s) is one a launch writes (ssh's \"Permanently added\" note, an mpirun/prterun/mpiexec "+
			"line, rank-tagged output such as [1,0]<stdout>:, sshd's, or job output naming a rank or NCCL): this is not an MPI "+
			"launcher's log. Give the launcher pod's log (kubectl logs <job>-launcher), or the MPIJob's name", rep.Lines)
	}
	if rep.Verdict == VerdictConfigError || rep.Verdict == VerdictSSHThrottled {
		rep.Hosts = nil // the names are not unreachable workers
	}
}

func clip(s string) string {
	if len(s) > maxTextLen {
		return s[:maxTextLen]
	}
	return s
}

// isHostSlots reports whether an ssh resolve error names "host:N", the slots syntax of
// `mpirun -H host:N`/horovodrun that an mpirun too old to read it (or a hostfile written with it
// for Open MPI, whose syntax is "host slots=N") hands to ssh as a host name.
func isHostSlots(s string) bool {
	i := strings.Index(s, "resolve hostname ")
	if i < 0 {
		return false
	}
	name := s[i+len("resolve hostname "):]
	if j := strings.Index(name, ": "); j >= 0 {
		name = name[:j]
	}
	c := strings.LastIndexByte(name, ':')
	if c <= 0 || c == len(name)-1 {
		return false
	}
	for _, d := range name[c+1:] {
		if d < '0' || d > '9' {
			return false
		}
	}
	return true
}

// lostHost reads the worker named in ORTE/PRRTE's lost-daemon help text.
func lostHost(s string) string {
	switch {
	case strings.HasPrefix(s, "Remote daemon"):
		if i := strings.LastIndex(s, " on node "); i >= 0 {
			return strings.TrimSpace(s[i+len(" on node "):])
		}
	case strings.HasPrefix(s, "hostname:"):
		return strings.TrimSpace(strings.TrimPrefix(s, "hostname:"))
	}
	return ""
}

// launchLine reports whether a line that matched no signature is one a launch writes: ssh's
// known-hosts note, mpirun's rank tags (--tag-output), a launcher command (set -x traces,
// --display-map), the workers' sshd, or job output that names a rank or is NCCL's. A healthy
// verdict needs one; other text (a README) is not a launcher log.
func launchLine(s, lower string) bool {
	switch {
	case strings.Contains(s, "Permanently added"), strings.Contains(s, "]<stdout>:"), strings.Contains(s, "]<stderr>:"),
		strings.Contains(s, "Accepted publickey"), strings.Contains(s, "Server listening on"), strings.Contains(s, "[preauth]"),
		strings.Contains(s, "NCCL INFO"), strings.Contains(s, "Data for JOB"), strings.Contains(s, "JOB MAP"):
		return true
	}
	cmd := strings.TrimPrefix(lower, "+ ")
	for _, p := range []string{"mpirun ", "prterun ", "mpiexec ", "horovodrun ", "orted ", "prted ", "hydra_pmi_proxy "} {
		if strings.HasPrefix(cmd, p) {
			return true
		}
	}
	// "rank 3", "Rank 1 on host", "rank: 0"
	for rest := lower; ; {
		i := strings.Index(rest, "rank")
		if i < 0 {
			return false
		}
		rest = strings.TrimLeft(rest[i+len("rank"):], " :=")
		if rest != "" && rest[0] >= '0' && rest[0] <= '9' {
			return true
		}
	}
}

// jobOutput reports whether a line that matched no signature is output of the job itself rather
// than of the launcher setting it up: ssh's known-hosts notes, shell traces (set -x), mpirun's
// --display-map and the wait loops of init scripts do not count.
func jobOutput(s string) bool {
	for _, p := range []string{"Warning: Permanently added", "+ ", "Data for JOB", "Data for node:", "=====", "Process OMPI jobid",
		"waiting for", "Waiting for", "until ", "mpirun ", "prterun ", "mpiexec ", "HNP daemon", "Remote daemon", "Local host", "Remote host"} {
		if strings.HasPrefix(s, p) {
			return false
		}
	}
	return true
}

// FixHostSlots is the advice for the config-error verdict.
const FixHostSlots = "ssh was given a host name with a slot count (\"host:N\"): the launcher passed the slots syntax through " +
	"instead of reading it. The mpirun that ran does not understand `-H host:N` (an old Open MPI, or another mpirun than the one " +
	"you installed first on PATH: check `which mpirun; mpirun --version` in the launcher image), or a hostfile uses `host:N` " +
	"where Open MPI expects `host slots=N`. Waiting or retrying does not help"

// FixSSHThrottled is the advice for the ssh-throttled verdict.
const FixSSHThrottled = "sshd on a worker accepted the connection and closed (or reset) it before its banner: it is throttling " +
	"concurrent unauthenticated connections (MaxStartups, default 10:30:100; OpenSSH 9.8+ also PerSourcePenalties), which " +
	"mpirun's many simultaneous ssh starts trigger on large jobs. Raise MaxStartups (e.g. `MaxStartups 1024:30:1024`) and, on " +
	"OpenSSH 9.8+, set `PerSourcePenalties no` in the workers' sshd_config, or launch with tree spawn/fewer concurrent ssh " +
	"(Open MPI: --mca plm_rsh_num_concurrent 16); the workers were up"

// FixWorkerLost is the advice for the worker-lost verdict.
const FixWorkerLost = "the launcher had started the job (see the job-started line) and then lost a worker's daemon: the " +
	"worker pod or its node died mid-job. Check the named worker: `kubectl describe pod` (OOMKilled, Evicted, exit 137), " +
	"`kubectl get events`, the node's state, then that rank's own log (for NCCL errors, the analysis of its NCCL log). Waiting for " +
	"workers before launch would not have helped"

// FixLauncherBeforeWorkers is the advice for the launcher-before-workers verdict.
const FixLauncherBeforeWorkers = "the launcher ran mpirun before the workers were resolvable/reachable. With mpi-operator " +
	"(kubeflow.org/v2beta1, v0.5.0+) set spec.launcherCreationPolicy: WaitForWorkersReady. With training-operator's " +
	"kubeflow.org/v1 MPIJob (no such field; its mpirun reaches workers with `kubectl exec` through kubexec.sh, not ssh " +
	"or DNS) give the launcher an init container that waits until every worker pod's Ready condition is True " +
	"(ain's worker gate, on by default: spec.workerGate), and keep a backoffLimit so a retry can succeed"

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
