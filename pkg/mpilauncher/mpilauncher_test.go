package mpilauncher

import (
	"bufio"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ain-hpc/ain/internal/golden"
)

func analyzeFile(t *testing.T, path string) *Report {
	t.Helper()
	return golden.Parse(t, path, Analyze)
}

// TestVerdicts covers each signature family; samples are written from the messages Open MPI
// (ORTE, PRRTE), Hydra and OpenSSH print.
func TestVerdicts(t *testing.T) {
	tests := []struct {
		file, verdict string
		kinds         []string
		hosts         []string
	}{
		{"ompi-dns-before-workers.log", VerdictLauncherBeforeWorkers, []string{"dns", "dns", "orte-daemons"},
			[]string{"nccl-tests-worker-0.nccl-tests.default.svc", "nccl-tests-worker-1.nccl-tests.default.svc"}},
		// A reset during the banner exchange is throttling, but the refused connection after it
		// says one worker's sshd was not up yet.
		{"ompi-ssh-refused.log", VerdictLauncherBeforeWorkers, []string{"ssh-reset", "ssh-closed", "ssh-refused", "orte-daemons"},
			[]string{"llm-worker-1.llm-worker.team-a.svc"}},
		{"prrte-lost-daemon.log", VerdictLauncherBeforeWorkers, []string{"dns", "prrte-daemons"}, []string{"job-worker-1.job.default.svc"}},
		{"hydra-no-route.log", VerdictLauncherBeforeWorkers, []string{"hydra", "hydra"}, nil},
		{"ompi-rank-killed-other.log", VerdictOther, []string{"rank-failed", "rank-failed"}, nil},
		{"ompi-healthy-nccl-tests.log", VerdictHealthy, []string{}, nil},
		// Real samples (testdata/README.md): the evidence that separates each from its neighbour.
		{"ompi-worker-lost-midjob-graphscope1841.log", VerdictWorkerLost, []string{"job-started", "orte-daemons"}, []string{"gs-engine-graphscope-gcz2f"}},
		{"horovod-host-slots-to-ssh-horovod951.log", VerdictConfigError, []string{"host-slots", "orte-daemons"}, nil},
		{"prrte-ssh-throttled-prrte1493.log", VerdictSSHThrottled, []string{"ssh-throttled", "prrte-daemons"}, nil},
		{"ompi-kex-throttled-written.log", VerdictSSHThrottled, []string{"ssh-throttled", "ssh-closed", "orte-daemons"}, nil},
		// Written from the messages' sources (testdata/README.md, issue 31).
		{"ompi-host-slots-fqdn-written.log", VerdictConfigError, []string{"host-slots", "orte-daemons"}, nil},
		{"ompi-lost-after-output-written.log", VerdictWorkerLost, []string{"job-started", "orte-daemons"}, []string{"pt-worker-1.pt-worker"}},
		{"ssh-exchange-reset-written.log", VerdictSSHThrottled, []string{"ssh-reset", "orte-daemons"}, nil},
		{"kex-reset-written.log", VerdictSSHThrottled, []string{"ssh-reset", "ssh-closed", "orte-daemons"}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.file, func(t *testing.T) {
			r := analyzeFile(t, filepath.Join("testdata", tc.file))
			if r.Verdict != tc.verdict {
				t.Errorf("verdict %s, want %s", r.Verdict, tc.verdict)
			}
			kinds := []string{}
			for _, e := range r.Evidence {
				kinds = append(kinds, e.Kind)
				if e.Line <= 0 || e.Text == "" {
					t.Errorf("bad evidence %+v", e)
				}
			}
			if !slices.Equal(kinds, tc.kinds) {
				t.Errorf("evidence kinds %v, want %v", kinds, tc.kinds)
			}
			if !slices.Equal(r.Hosts, tc.hosts) {
				t.Errorf("hosts %v, want %v", r.Hosts, tc.hosts)
			}
			if (r.Verdict == VerdictHealthy) != (r.Fix == "") {
				t.Errorf("fix %q for verdict %s", r.Fix, r.Verdict)
			}
			golden.JSON(t, strings.TrimSuffix(tc.file, ".log"), r)
		})
	}
}

// TestCorpus reads every launcher log of the shared corpus (real-world samples, sources in its
// INDEX.md) and checks the verdict INDEX.md gives.
func TestCorpus(t *testing.T) {
	dir := "../../../shared/corpus"
	f, err := os.Open(filepath.Join(dir, "INDEX.md"))
	if err != nil {
		t.Skipf("shared corpus not available: %v", err)
	}
	defer f.Close()
	n := 0
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		cells := strings.Split(sc.Text(), "|")
		if len(cells) < 6 || !strings.HasPrefix(strings.TrimSpace(cells[1]), "launcher/") {
			continue
		}
		path := strings.TrimSpace(cells[1])
		want := strings.Fields(strings.TrimSpace(cells[len(cells)-2]))[0]
		n++
		t.Run(filepath.Base(path), func(t *testing.T) {
			r := analyzeFile(t, filepath.Join(dir, path))
			if r.Verdict != want {
				t.Errorf("verdict %s, want %s (source %s)", r.Verdict, want, strings.TrimSpace(cells[2]))
			}
		})
	}
	files, _ := filepath.Glob(filepath.Join(dir, "launcher", "*"))
	if n == 0 || n != len(files) {
		t.Errorf("INDEX.md lists %d launcher samples, the directory has %d", n, len(files))
	}
}

func TestWorkerSideConnectionClosedIsNotRefused(t *testing.T) {
	r, _ := Analyze(strings.NewReader("Connection closed by 10.244.0.8 port 22345 [preauth]\n"))
	if r.Verdict != VerdictHealthy {
		t.Errorf("verdict %s", r.Verdict)
	}
	r, _ = Analyze(strings.NewReader("Connection closed by 10.244.0.8 port 22\n"))
	if r.Verdict != VerdictLauncherBeforeWorkers {
		t.Errorf("verdict %s", r.Verdict)
	}
}

func TestMoreSignatures(t *testing.T) {
	for line, want := range map[string]string{
		"ORTE has lost communication with a remote daemon.":                                                      VerdictLauncherBeforeWorkers,
		"A daemon (pid 4121) died unexpectedly with status 255 while attempting to launch so we are aborting.":   VerdictLauncherBeforeWorkers,
		"[mpiexec@l-0] HYDU_getfullhostname (utils/others/others.c:146): unable to get host address for w-0 (1)": VerdictLauncherBeforeWorkers,
		"ssh: connect to host w-1.w port 22: Connection timed out":                                               VerdictLauncherBeforeWorkers,
		`error: unable to upgrade connection: container not found ("mpi")`:                                       VerdictLauncherBeforeWorkers,
		"There are not enough slots available in the system to satisfy the 16 slots":                             VerdictOther,
		"Warning: Permanently added 'w-0.w' (ED25519) to the list of known hosts.":                               VerdictHealthy,
		// Healthy needs a line a launch writes; other text (a README) is not a launcher log.
		"Rank 1 on host pi-worker-1":                                  VerdictHealthy,
		"[1,0]<stdout>:step 10 loss 2.1":                              VerdictHealthy,
		"+ mpirun -np 2 --hostfile /etc/mpi/hostfile python train.py": VerdictHealthy,
		"# ain\n\nain turns recipe files into Kubernetes workloads.":  VerdictNotLauncher,
		"the ranks are ordered; ranking is done later":                VerdictNotLauncher,
	} {
		r, err := Analyze(strings.NewReader(line + "\n"))
		if err != nil || r.Verdict != want {
			t.Errorf("%q: verdict %s, want %s (%v)", line, r.Verdict, want, err)
		}
		if err == nil && want == VerdictNotLauncher && (r.OK() || r.Fix == "") {
			t.Errorf("%q: OK %v, fix %q", line, r.OK(), r.Fix)
		}
	}
}

// TestNeighbours: each verdict flips to its neighbour when the separating evidence changes.
func TestNeighbours(t *testing.T) {
	lost := "--------------------------------------------------------------------------\n" +
		"ORTE has lost communication with a remote daemon.\n\n  Remote daemon: [[1,0],1] on node w-1\n" +
		"--------------------------------------------------------------------------\n"
	for _, tc := range []struct{ name, in, want string }{
		// worker-lost needs job output before the lost daemon...
		{"lost after output", "[1,0]<stdout>:step 10 loss 2.1\n" + lost, VerdictWorkerLost},
		// ...without it the daemons never ran anything: the launcher was early.
		{"lost without output", "Warning: Permanently added 'w-1' (ED25519) to the list of known hosts.\n" + lost, VerdictLauncherBeforeWorkers},
		// ...and a DNS failure before it means the worker was never reached.
		{"lost after output and dns", "[1,0]<stdout>:hello\nssh: Could not resolve hostname w-2.w: Name or service not known\n" + lost, VerdictLauncherBeforeWorkers},
		// host:N is a config error; the same line with a plain name is a DNS race.
		{"slots", "ssh: Could not resolve hostname w-0.w:8: Name or service not known\n", VerdictConfigError},
		{"plain dns", "ssh: Could not resolve hostname w-0.w: Name or service not known\n", VerdictLauncherBeforeWorkers},
		{"ipv6-looking name is not slots", "ssh: Could not resolve hostname w-0.w:: Name or service not known\n", VerdictLauncherBeforeWorkers},
		// closed by remote host is throttling; refused (not listening) is a worker not up.
		{"throttled", "ssh_exchange_identification: Connection closed by remote host\n", VerdictSSHThrottled},
		{"throttled and refused", "kex_exchange_identification: Connection closed by remote host\nssh: connect to host w-1 port 22: Connection refused\n", VerdictLauncherBeforeWorkers},
		{"reset is not throttling", "kex_exchange_identification: read: Connection reset by peer\n", VerdictLauncherBeforeWorkers},
		// ...unless other connections of the launch got through: sshd dropping under load.
		{"reset under load", "Warning: Permanently added 'w-0' (ED25519) to the list of known hosts.\nkex_exchange_identification: read: Connection reset by peer\nConnection reset by 10.0.0.9 port 22\n", VerdictSSHThrottled},
		{"old ssh reset under load", "Warning: Permanently added 'w-0' (ECDSA) to the list of known hosts.\nssh_exchange_identification: read: Connection reset by peer\n", VerdictSSHThrottled},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := Analyze(strings.NewReader(tc.in))
			if err != nil {
				t.Fatal(err)
			}
			if r.Verdict != tc.want {
				t.Errorf("verdict %s, want %s (evidence %+v)", r.Verdict, tc.want, r.Evidence)
			}
			if r.Fix == "" {
				t.Errorf("no fix")
			}
		})
	}
}
