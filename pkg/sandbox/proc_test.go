package sandbox

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestFreePortsAvoidTheEphemeralRange(t *testing.T) {
	ephLo, ephHi := ephemeralRange()
	lo, hi := listenPortRange(ephLo, ephHi)
	if hi <= lo {
		t.Skipf("no room outside the ephemeral range %d-%d on this machine", ephLo, ephHi)
	}
	ports, err := freePorts(40)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[int]bool{}
	for _, p := range ports {
		if p >= ephLo && p <= ephHi {
			t.Errorf("port %d is in the ephemeral range %d-%d, where an outgoing connection can take it", p, ephLo, ephHi)
		}
		if seen[p] {
			t.Errorf("port %d chosen twice", p)
		}
		seen[p] = true
		l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(p))
		if err != nil {
			t.Errorf("port %d is not free: %v", p, err)
			continue
		}
		l.Close()
	}
}

func TestListenPortRange(t *testing.T) {
	for _, c := range []struct{ ephLo, ephHi, lo, hi int }{
		{32768, 60999, 10000, 32768}, // Linux's default
		{1024, 60999, 61000, 65536},  // ephemeral range starting low: above it
		{1024, 65535, 0, 0},          // no room: the kernel's choice
		{11000, 65000, 0, 0},
	} {
		lo, hi := listenPortRange(c.ephLo, c.ephHi)
		if lo != c.lo || hi != c.hi {
			t.Errorf("listenPortRange(%d, %d) = %d, %d; want %d, %d", c.ephLo, c.ephHi, lo, hi, c.lo, c.hi)
		}
	}
}

// restartFixture is an upRun over a state in a temporary folder, what it says, and start, which
// starts a controller running script under /bin/sh (its $1 a marker file in that folder) and
// records it in the state.
func restartFixture(t *testing.T) (u *upRun, out *strings.Builder, marker string, start func(script string) *Proc) {
	t.Helper()
	dir := t.TempDir()
	st := &State{Dir: dir}
	out = &strings.Builder{}
	u = &upRun{st: st, opts: Options{DieWithParent: true}, out: out}
	sh, err := filepath.EvalSymlinks("/bin/sh") // alive compares the binary with /proc/PID/exe
	if err != nil {
		t.Fatal(err)
	}
	marker = filepath.Join(dir, "ran-once")
	return u, out, marker, func(script string) *Proc {
		p, err := startProc("ctrl", "v1", sh, []string{"-c", script, "sh", marker}, nil, filepath.Join(dir, "ctrl.log"), true)
		if err != nil {
			t.Fatal(err)
		}
		st.Procs = append(st.Procs, p)
		pp := &st.Procs[len(st.Procs)-1] // waitRestarting puts a restart's pid there
		t.Cleanup(func() { _ = stopProc(*pp, time.Second) })
		return pp
	}
}

// readyAfter is a readiness wait that fails when p exits and is satisfied once p ran for d; it
// counts its calls in waits.
func readyAfter(d time.Duration, waits *int) func(*Proc) error {
	return func(p *Proc) error {
		*waits++
		for deadline := time.Now().Add(d); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
			if !alive(*p) {
				return errors.New(p.Name + " exited")
			}
		}
		return nil
	}
}

// TestWaitRestartingStartsAnExitedControllerAgain: a controller that exits before it is ready
// naming a start-up race (its informers did not sync) is started again with its arguments, the
// state names the new pid, and the restart is said; one that keeps exiting so is given up after
// two restarts with the wait's error.
func TestWaitRestartingStartsAnExitedControllerAgain(t *testing.T) {
	u, out, marker, start := restartFixture(t)
	// Exits at once the first time, as the training-operator did when its informers timed out,
	// then runs (a loop, not exec: alive checks that the pid still runs the binary started).
	p := start(`if [ -e "$1" ]; then while :; do sleep 1; done; fi; : >"$1"; echo "Timeout: failed waiting for *v1.Service Informer to sync"; exit 1`)
	first := p.PID
	waits := 0
	if err := u.waitRestarting(context.Background(), p, readyAfter(time.Second, &waits)); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	if waits != 2 || p.PID == first || !alive(*p) || u.st.Procs[0].PID != p.PID {
		t.Fatalf("waits %d, pid %d (first %d), state %+v", waits, p.PID, first, u.st.Procs)
	}
	if !strings.Contains(out.String(), "ctrl exited during start-up (Timeout: failed waiting for *v1.Service Informer to sync): starting it again") {
		t.Errorf("restart not said: %q", out.String())
	}
	saved, err := LoadState(u.st.Dir)
	if err != nil || saved.Procs[0].PID != p.PID {
		t.Errorf("saved state: %+v %v", saved, err)
	}

	// Always exiting for the API server not answering yet: two restarts, then the wait's error.
	os.Remove(marker)
	u.st.Procs = nil
	q := start(`echo 'E1205 setup.go:42] unable to start manager: Get "https://127.0.0.1:6443/api": dial tcp 127.0.0.1:6443: connect: connection refused'; exit 1`)
	waits = 0
	if err := u.waitRestarting(context.Background(), q, readyAfter(time.Second, &waits)); err == nil || err.Error() != "ctrl exited" || waits != 3 {
		t.Fatalf("err %v after %d waits, want the wait's error after 3", err, waits)
	}
}

// TestWaitRestartingReportsABadStartAtOnce: a controller that exits at once for its command line
// (Go's flag package: the error, then the usage) or for another reason that names no start-up
// race is not started again: the error names the line that says why, at the first exit. One
// that ran for two seconds before it exited is started again.
func TestWaitRestartingReportsABadStartAtOnce(t *testing.T) {
	for _, c := range []struct{ name, script, line string }{
		{"bad flag", `echo "flag provided but not defined: -bogus"; echo "Usage of ctrl:"; echo "  -kubeconfig string"; echo "    	Paths to a kubeconfig."; exit 2`,
			"(flag provided but not defined: -bogus): not a start-up race, so not started again: ctrl exited"},
		{"no certificate", `echo "open /tmp/k8s-webhook-server/serving-certs/tls.crt: no such file or directory"; exit 1`,
			"(open /tmp/k8s-webhook-server/serving-certs/tls.crt: no such file or directory): not a start-up race, so not started again: ctrl exited"},
	} {
		t.Run(c.name, func(t *testing.T) {
			u, out, _, start := restartFixture(t)
			p := start(c.script)
			waits := 0
			err := u.waitRestarting(context.Background(), p, readyAfter(time.Second, &waits))
			if err == nil || !strings.HasPrefix(err.Error(), "ctrl exited ") || !strings.Contains(err.Error(), " s after it started "+c.line) || waits != 1 || out.Len() != 0 {
				t.Errorf("err %v after %d waits, said %q: want it at once naming %q", err, waits, out.String(), c.line)
			}
		})
	}
	u, out, _, start := restartFixture(t)
	p := start(`if [ -e "$1" ]; then while :; do sleep 1; done; fi; : >"$1"; sleep 2; echo "leader election lost"; exit 1`)
	waits := 0
	if err := u.waitRestarting(context.Background(), p, readyAfter(3*time.Second, &waits)); err != nil || waits != 2 ||
		!strings.Contains(out.String(), "ctrl exited during start-up (leader election lost): starting it again") {
		t.Errorf("ran 2 s: err %v after %d waits, said %q", err, waits, out.String())
	}
}
