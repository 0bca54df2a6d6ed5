package sandboxtest

import (
	"encoding/json"
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"

	"github.com/ain-hpc/ain/pkg/sandbox"
)

// Stop stops the sandbox's process name by pid (SIGTERM; SIGKILL if it still runs 10 s later)
// and returns a function that starts it again with the same binary, arguments and environment,
// recording the new pid in the sandbox state so teardown stops it. A test that ends
// before starting it again has it started at cleanup: the next test gets the whole sandbox.
func Stop(t testing.TB, dir, name string) (start func()) {
	t.Helper()
	st, err := sandbox.LoadState(dir)
	if err != nil {
		t.Fatal(err)
	}
	idx := -1
	for i, p := range st.Procs {
		if p.Name == name {
			idx = i
		}
	}
	if idx < 0 {
		t.Fatalf("no %s in the sandbox state", name)
	}
	p := st.Procs[idx]
	_ = syscall.Kill(p.PID, syscall.SIGTERM)
	if !exited(p.PID, 10*time.Second) {
		// A kube-apiserver draining its watches can take longer (over 30 s was seen): a crash
		// is a fault too.
		t.Logf("%s (pid %d) still runs 10 s after SIGTERM: SIGKILL", name, p.PID)
		_ = syscall.Kill(p.PID, syscall.SIGKILL)
		if !exited(p.PID, 5*time.Second) {
			t.Fatalf("%s (pid %d) survived SIGKILL", name, p.PID)
		}
	}
	started := false
	start = func() {
		t.Helper()
		if started {
			return
		}
		started = true
		logf, err := os.OpenFile(p.Log, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
		if err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(p.Binary, p.Args...)
		cmd.Env = append(os.Environ(), p.Env...)
		cmd.Stdout, cmd.Stderr = logf, logf
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Pdeathsig: syscall.SIGKILL}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		logf.Close()
		go cmd.Wait()
		cur, err := sandbox.LoadState(dir)
		if err != nil {
			t.Fatal(err)
		}
		for i := range cur.Procs {
			if cur.Procs[i].Name == name {
				cur.Procs[i].PID = cmd.Process.Pid
			}
		}
		data, _ := json.MarshalIndent(cur, "", "  ")
		if err := os.WriteFile(sandbox.Layout{Dir: dir}.State(), data, 0o600); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			// sandboxtest stops it by the recorded pid; make sure of it if the state was rewritten.
			if syscall.Kill(cmd.Process.Pid, 0) == nil {
				if cur, err := sandbox.LoadState(dir); err == nil {
					for _, q := range cur.Procs {
						if q.Name == name && q.PID != cmd.Process.Pid {
							_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
						}
					}
				}
			}
		})
	}
	t.Cleanup(start)
	return start
}

// exited waits up to d for pid to be gone.
func exited(pid int, d time.Duration) bool {
	for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
		if syscall.Kill(pid, 0) != nil {
			return true
		}
	}
	return syscall.Kill(pid, 0) != nil
}

// Poll calls try until it returns true, sleeping every between calls, and returns how long that
// took. ok is false when try still returned false after within: the caller fails the test with
// what its last try saw, which only it can describe. It is how a test waits for the sandbox to
// notice a component that Stop stopped, or one started again.
func Poll(within, every time.Duration, try func() bool) (took time.Duration, ok bool) {
	t0 := time.Now()
	for !try() {
		if time.Since(t0) > within {
			return time.Since(t0), false
		}
		time.Sleep(every)
	}
	return time.Since(t0), true
}
