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

// TestWaitRestartingStartsAnExitedControllerAgain: a controller that exits before it is ready is
// started again with its arguments, the state names the new pid, and the restart is said; one
// that keeps exiting is given up after two restarts with the wait's error.
func TestWaitRestartingStartsAnExitedControllerAgain(t *testing.T) {
	dir := t.TempDir()
	marker := filepath.Join(dir, "ran-once")
	// Exits at once the first time (as the training-operator did when its informers timed out),
	// then runs (a loop, not exec: alive checks that the pid still runs the binary started).
	script := `if [ -e "$1" ]; then while :; do sleep 1; done; fi; : >"$1"; echo "informers did not sync"; exit 1`
	st := &State{Dir: dir}
	u := &upRun{st: st, opts: Options{DieWithParent: true}}
	var out strings.Builder
	u.out = &out
	sh, err := filepath.EvalSymlinks("/bin/sh") // alive compares the binary with /proc/PID/exe
	if err != nil {
		t.Fatal(err)
	}
	start := func() *Proc {
		p, err := startProc("ctrl", "v1", sh, []string{"-c", script, "sh", marker}, nil, filepath.Join(dir, "ctrl.log"), true)
		if err != nil {
			t.Fatal(err)
		}
		st.Procs = append(st.Procs, p)
		return &st.Procs[len(st.Procs)-1]
	}
	p := start()
	first := p.PID
	waits := 0
	wait := func(p *Proc) error {
		waits++
		for range 20 {
			if !alive(*p) {
				return errors.New(p.Name + " exited")
			}
			time.Sleep(50 * time.Millisecond)
		}
		return nil
	}
	if err := u.waitRestarting(context.Background(), p, wait); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	defer stopProc(*p, time.Second)
	if waits != 2 || p.PID == first || !alive(*p) || st.Procs[0].PID != p.PID {
		t.Fatalf("waits %d, pid %d (first %d), state %+v", waits, p.PID, first, st.Procs)
	}
	if !strings.Contains(out.String(), "ctrl exited during start-up (informers did not sync): starting it again") {
		t.Errorf("restart not said: %q", out.String())
	}
	saved, err := LoadState(dir)
	if err != nil || saved.Procs[0].PID != p.PID {
		t.Errorf("saved state: %+v %v", saved, err)
	}

	// Always exiting: two restarts, then the wait's error.
	os.Remove(marker)
	script = `echo "bad flag"; exit 2`
	st.Procs = nil
	q := start()
	waits = 0
	if err := u.waitRestarting(context.Background(), q, wait); err == nil || waits != 3 {
		t.Fatalf("err %v after %d waits, want an error after 3", err, waits)
	}
}
