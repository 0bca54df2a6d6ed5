package main

import (
	"bufio"
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// procsMentioning lists the running processes (pid: command line) whose command line names dir:
// every sandbox component is started with paths in its state folder.
func procsMentioning(dir string) []string {
	var found []string
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		if e.Name()[0] < '0' || e.Name()[0] > '9' {
			continue
		}
		cl, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil || !bytes.Contains(cl, []byte(dir)) {
			continue
		}
		if st, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat")); err == nil && strings.Contains(string(st), ") Z ") {
			continue // a zombie runs nothing
		}
		found = append(found, e.Name()+": "+strings.ReplaceAll(string(cl), "\x00", " "))
	}
	return found
}

// TestInterruptSandboxUp sends SIGINT to a real `ain sandbox up` process mid-start (after etcd,
// and after the controllers are up): it exits 130, says what it stopped and what to run next,
// leaves no process of that sandbox running, and `ain sandbox status` says it is not running.
func TestInterruptSandboxUp(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a sandbox")
	}
	for _, c := range []struct{ name, after string }{{"after_etcd", "etcd ready"}, {"after_controllers", "controller-manager, scheduler ready"}} {
		after := c.after
		// (a comma in the state folder's path breaks kwok's --config, a list flag: plain names)
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			env := append(os.Environ(), runMainEnv+"=1", "HOME="+t.TempDir(), "KUBECONFIG=")
			cmd := exec.Command(os.Args[0], "sandbox", "up", "--state-dir", dir, "--nodes", "2")
			cmd.Env = env
			var stderr bytes.Buffer
			pr, pw, err := os.Pipe()
			if err != nil {
				t.Fatal(err)
			}
			cmd.Stderr = pw
			cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			pw.Close()
			t.Cleanup(func() {
				// Whatever happens, stop what a failed run left, by pid.
				_ = cmd.Process.Kill()
				down := exec.Command(os.Args[0], "sandbox", "down", "--state-dir", dir)
				down.Env = env // as ain's main, not as this test binary
				_ = down.Run()
			})
			reached := make(chan struct{})
			lines := make(chan struct{})
			go func() {
				sc := bufio.NewScanner(pr)
				once := false
				for sc.Scan() {
					stderr.WriteString(sc.Text() + "\n")
					if !once && strings.Contains(sc.Text(), after) {
						once = true
						close(reached)
					}
				}
				close(lines)
			}()
			t0 := time.Now()
			select {
			case <-reached:
			case <-time.After(4 * time.Minute):
				t.Fatalf("`ain sandbox up` did not reach %q in 4 minutes", after)
			}
			running := procsMentioning(dir)
			if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
				t.Fatal(err)
			}
			t1 := time.Now()
			err = cmd.Wait()
			<-lines
			t.Logf("interrupted %s after the start (%d processes of it running), exited in %s:\n%s", t1.Sub(t0).Round(100*time.Millisecond),
				len(running), time.Since(t1).Round(100*time.Millisecond), stderr.String())
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.ExitCode() != 130 {
				t.Errorf("SIGINT must exit 130: %v", err)
			}
			if len(running) == 0 {
				t.Errorf("no sandbox process was running when interrupted: the test interrupts nothing")
			}
			for _, want := range []string{"Start-up did not finish (interrupted): stopping what was started", "stopped etcd", "interrupted: the sandbox in " + dir + " was not started", "run `ain sandbox up` to start it again"} {
				if !strings.Contains(stderr.String(), want) {
					t.Errorf("stderr lacks %q", want)
				}
			}
			if left := procsMentioning(dir); len(left) > 0 {
				t.Errorf("processes left running:\n%s", strings.Join(left, "\n"))
			}
			st := exec.Command(os.Args[0], "sandbox", "status", "--state-dir", dir)
			st.Env = env
			out, err := st.CombinedOutput()
			if err == nil || !strings.Contains(string(out), "ain sandbox up") {
				t.Errorf("sandbox status after the interrupt must say it is not running (exit non-zero): %v\n%s", err, out)
			}
		})
	}
}
