package sandbox

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// children are the processes this Go process started, so that it can reap them (a child that
// exited stays a zombie, still "alive" to kill(pid, 0), until its parent waits for it).
var children = struct {
	sync.Mutex
	done map[int]chan struct{}
}{done: map[int]chan struct{}{}}

// spawner starts processes from one goroutine locked to its OS thread, so that Pdeathsig (sent
// when the thread that started a child exits) fires only when this whole process dies.
var spawner = struct {
	once sync.Once
	reqs chan func()
}{reqs: make(chan func())}

func onSpawnerThread(f func()) {
	spawner.once.Do(func() {
		go func() {
			runtime.LockOSThread() // never unlocked: the thread lives as long as the process
			for r := range spawner.reqs {
				r()
			}
		}()
	})
	done := make(chan struct{})
	spawner.reqs <- func() { f(); close(done) }
	<-done
}

// startProc starts bin in its own session (so a terminal's Ctrl-C does not reach it and it
// outlives `ain sandbox up`), with stdout and stderr appended to logPath. With dieWithParent the
// kernel kills it when this process dies (tests: no process survives a crashed or timed-out test
// binary).
func startProc(name, version, bin string, args, env []string, logPath string, dieWithParent bool) (Proc, error) {
	logf, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return Proc{}, err
	}
	defer logf.Close()
	fmt.Fprintf(logf, "\n=== %s %s %s\n", time.Now().UTC().Format(time.RFC3339), bin, strings.Join(args, " "))
	cmd := exec.Command(bin, args...)
	cmd.Stdout = logf
	cmd.Stderr = logf
	cmd.Env = append(os.Environ(), env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if dieWithParent {
		cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
		onSpawnerThread(func() { err = cmd.Start() })
	} else {
		err = cmd.Start()
	}
	if err != nil {
		return Proc{}, fmt.Errorf("starting %s: %w", name, err)
	}
	done := make(chan struct{})
	children.Lock()
	children.done[cmd.Process.Pid] = done
	children.Unlock()
	go func() {
		_ = cmd.Wait()
		close(done)
	}()
	return Proc{Name: name, Version: version, PID: cmd.Process.Pid, Binary: bin, Args: args, Env: pathEnv(env), Log: logPath}, nil
}

// alive reports whether pid runs and is the binary we started (a pid can be reused).
func alive(p Proc) bool {
	if p.PID <= 0 {
		return false
	}
	children.Lock()
	done, ours := children.done[p.PID]
	children.Unlock()
	if ours {
		select {
		case <-done:
			return false
		default:
		}
	}
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(p.PID) + "/stat")
	if err != nil {
		return syscall.Kill(p.PID, 0) == nil
	}
	// The state is the field after the ")" closing the command name.
	if i := bytes.LastIndexByte(stat, ')'); i >= 0 && i+2 < len(stat) {
		if s := stat[i+2]; s == 'Z' || s == 'X' {
			return false
		}
	}
	if p.Binary != "" {
		if exe, err := os.Readlink("/proc/" + strconv.Itoa(p.PID) + "/exe"); err == nil {
			exe = strings.TrimSuffix(exe, " (deleted)")
			if exe != p.Binary {
				return false
			}
		}
	}
	return true
}

// stopProc stops p and its process group: SIGTERM, then SIGKILL after grace.
func stopProc(p Proc, grace time.Duration) error {
	if !alive(p) {
		return nil
	}
	// Setsid made the process the leader of its own group: signal the group, so any
	// children it started go too.
	_ = syscall.Kill(-p.PID, syscall.SIGTERM)
	_ = syscall.Kill(p.PID, syscall.SIGTERM)
	deadline := time.Now().Add(grace)
	for time.Now().Before(deadline) {
		if !alive(p) {
			return nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	_ = syscall.Kill(-p.PID, syscall.SIGKILL)
	_ = syscall.Kill(p.PID, syscall.SIGKILL)
	deadline = time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		if !alive(p) {
			return nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	return fmt.Errorf("%s (pid %d) did not stop", p.Name, p.PID)
}

// freePorts returns n distinct free TCP ports on 127.0.0.1.
func freePorts(n int) ([]int, error) {
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	var ports []int
	for i := 0; i < n; i++ {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// portFree reports whether 127.0.0.1:port can be bound now.
func portFree(port int) bool {
	if port <= 0 {
		return false
	}
	l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(port))
	if err != nil {
		return false
	}
	l.Close()
	return true
}

// tailFile returns the last n lines of path, for error messages.
func tailFile(path string, n int) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// pathEnv keeps the entries of env that are paths (KUBECONFIG, TMPDIR): what a restart needs, and
// nothing a caller might have passed a secret in.
func pathEnv(env []string) []string {
	var out []string
	for _, e := range env {
		if k, _, _ := strings.Cut(e, "="); k == "KUBECONFIG" || k == "TMPDIR" {
			out = append(out, e)
		}
	}
	return out
}
