package main

import (
	"bufio"
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
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

// TestInterruptSandboxBuild sends SIGINT to a real `ain sandbox up` while it builds its first
// component from Go modules (an empty binary cache): it exits 130 saying it was interrupted
// while building (not a build failure with a network hint), no build process is left, and the
// half-built component is not marked built.
func TestInterruptSandboxBuild(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go build")
	}
	goenv, err := exec.Command("go", "env", "GOMODCACHE", "GOCACHE", "GOPATH").Output()
	if err != nil {
		t.Fatal(err)
	}
	gv := strings.Fields(string(goenv))
	if len(gv) != 3 {
		t.Fatalf("go env: %q", goenv)
	}
	dir, cache := t.TempDir(), t.TempDir()
	// The test's own HOME, but the machine's Go caches: the build reads modules already downloaded.
	env := append(os.Environ(), runMainEnv+"=1", "HOME="+t.TempDir(), "KUBECONFIG=", "AIN_SANDBOX_CACHE="+cache,
		"GOMODCACHE="+gv[0], "GOCACHE="+gv[1], "GOPATH="+gv[2])
	cmd := exec.Command(os.Args[0], "sandbox", "up", "--state-dir", dir, "--nodes", "2")
	cmd.Env = env
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = pw, pw
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pw.Close()
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	var out bytes.Buffer
	building := make(chan struct{})
	lines := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(pr)
		once := false
		for sc.Scan() {
			out.WriteString(sc.Text() + "\n")
			if !once && strings.Contains(sc.Text(), "[1/") && strings.HasSuffix(sc.Text(), "...") {
				once = true
				close(building)
			}
		}
		close(lines)
	}()
	select {
	case <-building:
	case <-time.After(2 * time.Minute):
		t.Fatalf("`ain sandbox up` did not start building in 2 minutes:\n%s", out.String())
	}
	// At once: with a warm Go build cache a component builds in a second or two, and the
	// interrupt must land in a build, whichever component that is.
	time.Sleep(100 * time.Millisecond)
	builds := procsMentioning(cache)
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	t1 := time.Now()
	err = cmd.Wait()
	<-lines
	t.Logf("interrupted with %d build processes running; exited in %s:\n%s", len(builds), time.Since(t1).Round(100*time.Millisecond), out.String())
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 130 {
		t.Errorf("SIGINT must exit 130: %v", err)
	}
	for _, want := range []string{"interrupted while building", "was not started", "nothing half-built is kept"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q", want)
		}
	}
	if strings.Contains(out.String(), "GOPROXY") {
		t.Errorf("an interrupt is not a network problem:\n%s", out.String())
	}
	// The go command is killed with ain; its compilers finish their file and exit.
	deadline := time.Now().Add(10 * time.Second)
	for len(procsMentioning(cache)) > 0 && time.Now().Before(deadline) {
		time.Sleep(200 * time.Millisecond)
	}
	if left := procsMentioning(cache); len(left) > 0 {
		t.Errorf("build processes left running 10 s after the interrupt:\n%s", strings.Join(left, "\n"))
	}
	// The component the interrupt cut is not marked built (those finished before it may be).
	m := regexp.MustCompile(`interrupted while building (\S+):`).FindStringSubmatch(out.String())
	if m == nil {
		return
	}
	if complete, _ := filepath.Glob(filepath.Join(cache, m[1]+"-*", ".complete")); len(complete) > 0 {
		t.Errorf("the interrupted build of %s is marked built: %v", m[1], complete)
	}
	if dirs, _ := filepath.Glob(filepath.Join(cache, m[1]+"-*")); len(dirs) == 0 {
		t.Errorf("no folder of %s in the cache %s: the check above looked at nothing", m[1], cache)
	}
}
