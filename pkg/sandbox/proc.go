package sandbox

import (
	"bytes"
	"fmt"
	"math/rand/v2"
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
func startProc(name, version, bin string, args, env []string, logPath string, dieWithParent bool, extra ...*os.File) (Proc, error) {
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
	cmd.ExtraFiles = extra // fd 3 on
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

// freePorts returns n distinct TCP ports free on 127.0.0.1 now, drawn below the kernel's
// ephemeral range. A port from that range (what Listen on port 0 hands out) is also what every
// outgoing connection's local end is taken from, so it can be gone by the time a component binds
// it: starting a 200-node sandbox, the sandbox's own clients opened enough connections in the 15 s
// between choosing kube-scheduler's port and its bind that one took it ("bind: address already in
// use"). Below the range only another listener can take a port.
func freePorts(n int) ([]int, error) {
	lo, hi := listenPortRange(ephemeralRange())
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	var ports []int
	for tries := 0; len(ports) < n; tries++ {
		addr := "127.0.0.1:0"
		if hi > lo && tries < 64*n {
			addr = "127.0.0.1:" + strconv.Itoa(lo+rand.IntN(hi-lo))
		}
		l, err := net.Listen("tcp", addr)
		if err != nil {
			if addr != "127.0.0.1:0" {
				continue // taken: draw again
			}
			return nil, err
		}
		ls = append(ls, l) // held until all are chosen, so the n ports are distinct
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// ephemeralRange reads net.ipv4.ip_local_port_range; Linux's default when it cannot.
func ephemeralRange() (lo, hi int) {
	lo, hi = 32768, 60999
	data, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return lo, hi
	}
	f := strings.Fields(string(data))
	if len(f) != 2 {
		return lo, hi
	}
	a, err1 := strconv.Atoi(f[0])
	b, err2 := strconv.Atoi(f[1])
	if err1 != nil || err2 != nil || a <= 0 || b < a {
		return lo, hi
	}
	return a, b
}

// listenPortRange is where freePorts draws from, given the ephemeral range: from 10000 up to the
// range's start, or the 10000 ports above its end when it starts too low to leave room below.
// An empty range (lo == hi) means there is no room outside it: take what the kernel gives.
func listenPortRange(ephLo, ephHi int) (lo, hi int) {
	const floor = 10000
	if ephLo-floor >= 2000 {
		return floor, ephLo
	}
	if ephHi+1+2000 <= 65536 {
		return ephHi + 1, min(65536, ephHi+1+10000)
	}
	return 0, 0
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
