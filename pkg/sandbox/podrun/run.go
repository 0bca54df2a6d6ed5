package podrun

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// Image stands for a container image on this machine, whose own filesystem is the image: the
// pod's root is an overlay with this machine's / as its lower layer. What the image has and this
// machine lacks is mapped here.
type Image struct {
	// Env is the image's ENV; PATH is the usual Debian one when Env does not set it.
	Env []string
	// Files maps a path in the image to the host file (or folder) that stands for it,
	// bind-mounted read-only over that path in the pod's root: a program the machine lacks
	// (nccl-tests' all_reduce_perf) or a config file the image's Dockerfile writes.
	Files map[string]string
	// Dirs are folders the image has that this machine may lack (sshd's /run/sshd), made in the
	// pod's writable layer.
	Dirs []string
}

const defaultPath = "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

func (img Image) env() []string {
	for _, kv := range img.Env {
		if strings.HasPrefix(kv, "PATH=") {
			return img.Env
		}
	}
	return append([]string{defaultPath}, img.Env...)
}

// Spec is what Start needs: the pod as the controllers made it (and the scheduler bound it),
// the Secrets and ConfigMaps it references by name, its IP and the network to attach it to.
type Spec struct {
	Pod        *corev1.Pod
	Secrets    map[string]*corev1.Secret
	ConfigMaps map[string]*corev1.ConfigMap
	IP         net.IP
	Network    *Network
	// Hosts are other pods to list in /etc/hosts as cluster DNS would answer for them, for a
	// caller that runs no cluster DNS (a kubelet lists none).
	Hosts []HostEntry
	Image Image
	// ClusterDomain defaults to DefaultClusterDomain.
	ClusterDomain string
	// Nameserver is resolv.conf's nameserver, the cluster DNS Service's IP (the sandbox's
	// CoreDNS); it defaults to the network's gateway, where a caller without cluster DNS has
	// nothing answering on port 53, so that a name outside /etc/hosts fails at once rather than
	// after resolver timeouts.
	Nameserver string
	// ServiceAccountToken is what a projected serviceAccountToken source holds (the caller
	// asks the API server for it: TokenRequest).
	ServiceAccountToken string
	// Claims maps a PersistentVolumeClaim's name to the host folder that holds its volume,
	// shared by every pod that mounts the claim (as an NFS volume is).
	Claims map[string]string
}

// Result is how the container's process ended, in the terms of a container status's
// terminated state.
type Result struct {
	ExitCode int
	Signal   string // the signal that killed it, if one did
	// Reason is "Completed" (exit 0), "Error", or "StartError" when the process never started
	// (exit code 128, as containerd reports a failed start).
	Reason  string
	Message string
}

// Pod is one pod whose first container runs as a real process.
type Pod struct {
	Name string
	dir  string // host folder: volumes, hosts files, the root's mount point
	net  *podNet
	cmd  *exec.Cmd
	log  *logBuffer

	done   chan struct{}
	result Result

	ready      atomic.Bool
	probeStop  context.CancelFunc
	probeDone  chan struct{}
	stopOnce   sync.Once
	stopErr    error
	started    atomic.Bool
	netnsInode uint64
	// env and inPod are how an exec probe runs a command as the container's process.
	env   []string
	inPod []string
}

// Start runs pod's first container as a kubelet would (see the package comment). A command
// that cannot be found gives a Pod that is already terminated with StartError, as a container
// runtime's failed start does; Start's error is for input it cannot run at all.
func Start(spec Spec) (*Pod, error) {
	pod := spec.Pod
	if pod == nil || len(pod.Spec.Containers) == 0 {
		return nil, errors.New("a pod with at least one container is needed")
	}
	if spec.Network == nil || spec.IP == nil {
		return nil, errors.New("a network and a pod IP are needed")
	}
	c := &pod.Spec.Containers[0]
	clusterDomain := spec.ClusterDomain
	if clusterDomain == "" {
		clusterDomain = DefaultClusterDomain
	}
	nameserver := spec.Nameserver
	if nameserver == "" {
		nameserver = spec.Network.Gateway.String()
	}
	uid, gid, groups := identity(pod, c)
	hostname := Hostname(pod)
	src := sources{secrets: spec.Secrets, configMaps: spec.ConfigMaps, token: spec.ServiceAccountToken, podIP: spec.IP.String(), claims: spec.Claims}
	env, err := containerEnv(pod, c, spec.Image, spec.IP.String(), hostname, uid, src)
	if err != nil {
		return nil, err
	}
	argv := commandLine(c, env)
	if len(argv) == 0 {
		return nil, fmt.Errorf("container %s has no command: the image's entrypoint is not known here", c.Name)
	}
	p := &Pod{Name: pod.Name, log: newLogBuffer(4 << 20), done: make(chan struct{}),
		env: env, inPod: containerPrefix(c, uid, gid, groups, env)}
	if msg := findProgram(argv[0], env, spec.Image, c.VolumeMounts); msg != "" {
		p.result = Result{ExitCode: 128, Reason: "StartError", Message: msg}
		p.log.Write([]byte(msg + "\n"))
		close(p.done)
		return p, nil
	}

	p.dir, err = os.MkdirTemp("", "ain-podrun-")
	if err != nil {
		return nil, err
	}
	fail := func(err error) (*Pod, error) {
		if p.net != nil {
			_ = p.net.teardown()
		}
		_ = os.RemoveAll(p.dir)
		return nil, err
	}
	if err := os.Chmod(p.dir, 0o755); err != nil {
		return fail(err)
	}
	vols, err := makeVolumes(p.dir, pod, src)
	if err != nil {
		return fail(err)
	}
	self := PodHostEntry(pod, spec.IP.String())
	etc := map[string]string{
		"/etc/hosts":       hostsFile(self, spec.Hosts, clusterDomain),
		"/etc/resolv.conf": resolvConf(nameserver, pod.Namespace, clusterDomain),
		"/etc/hostname":    hostname + "\n",
	}
	for _, name := range sortedKeys(etc) {
		if err := os.WriteFile(filepath.Join(p.dir, "etc-"+path.Base(name)), []byte(etc[name]), 0o644); err != nil {
			return fail(err)
		}
	}
	for _, d := range []string{"rootfs", "layer"} {
		if err := os.Mkdir(filepath.Join(p.dir, d), 0o755); err != nil {
			return fail(err)
		}
	}
	script, err := shim(p.dir, pod, c, vols, spec.Image, hostname, uid, gid, groups, env)
	if err != nil {
		return fail(err)
	}
	if err := os.WriteFile(filepath.Join(p.dir, "shim.sh"), []byte(script), 0o644); err != nil {
		return fail(err)
	}
	if p.net, err = setupPodNet(spec.Network, spec.IP); err != nil {
		return fail(err)
	}
	var st syscall.Stat_t
	if err := syscall.Stat("/run/netns/"+p.net.ns, &st); err == nil {
		p.netnsInode = st.Ino
	}

	// nsenter puts the process in the pod's network namespace; unshare gives it its own mount,
	// UTS, IPC and PID namespaces (util-linux unshare(1)), forks, and kills the child when it
	// dies itself (--kill-child); the child, PID 1 of the new PID namespace, runs the shim,
	// which execs the container's command. When PID 1 ends, the kernel kills every other
	// process of the namespace (pid_namespaces(7)): sshd's sessions, orted, the MPI ranks.
	p.cmd = exec.Command("nsenter", append([]string{"--net=/run/netns/" + p.net.ns, "--",
		"unshare", "--mount", "--uts", "--ipc", "--pid", "--fork", "--kill-child", "--propagation", "private", "--",
		"/bin/sh", "-c", script, "podrun"}, argv...)...)
	p.cmd.Env = env
	p.cmd.Dir = "/"
	p.cmd.Stdout, p.cmd.Stderr = p.log, p.log
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := p.cmd.Start(); err != nil {
		return fail(err)
	}
	go p.wait()
	if pr := c.ReadinessProbe; pr != nil {
		ctx, cancel := context.WithCancel(context.Background())
		p.probeStop, p.probeDone = cancel, make(chan struct{})
		go func() {
			defer close(p.probeDone)
			p.probe(ctx, pr, c, spec.IP)
		}()
	} else {
		// No readiness probe: Ready once running (the kubelet's default).
		p.ready.Store(true)
	}
	return p, nil
}

// wait reaps the process and records how it ended.
func (p *Pod) wait() {
	err := p.cmd.Wait()
	r := Result{Reason: "Completed"}
	if ps := p.cmd.ProcessState; ps != nil {
		ws := ps.Sys().(syscall.WaitStatus)
		switch {
		case ws.Signaled():
			r.ExitCode, r.Signal = 128+int(ws.Signal()), ws.Signal().String()
		default:
			r.ExitCode = ws.ExitStatus()
		}
	} else if err != nil {
		r.ExitCode, r.Message = 128, err.Error()
	}
	if r.ExitCode != 0 {
		r.Reason = "Error"
	}
	if _, err := os.Stat(filepath.Join(p.dir, "started")); err != nil {
		r.Reason = "StartError"
		r.Message = lastLine(p.log.String())
	} else {
		p.started.Store(true)
	}
	p.result = r
	p.ready.Store(false)
	close(p.done)
}

func lastLine(s string) string {
	s = strings.TrimRight(s, "\n")
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		return s[i+1:]
	}
	return s
}

// Done is closed when the process has ended (or never started).
func (p *Pod) Done() <-chan struct{} { return p.done }

// Wait waits until the process ends or ctx is done.
func (p *Pod) Wait(ctx context.Context) (Result, error) {
	select {
	case <-p.done:
		return p.result, nil
	case <-ctx.Done():
		return Result{}, ctx.Err()
	}
}

// Log is what the process wrote to stdout and stderr, interleaved as written: the pod's log.
func (p *Pod) Log() string { return p.log.String() }

// LogSince is what the process wrote after the first n bytes of its log, the count of bytes
// written so far (a reader that polls passes it back), and whether the log outgrew its cap
// meanwhile: bytes after n were dropped, and the data starts with the oldest byte kept.
func (p *Pod) LogSince(n int64) ([]byte, int64, bool) { return p.log.Since(n) }

// Ready is the readiness probe's verdict (true for a running container without one).
func (p *Pod) Ready() bool { return p.ready.Load() }

// NetNS is the name of the pod's network namespace (ip netns), empty when none was made.
func (p *Pod) NetNS() string {
	if p.net == nil {
		return ""
	}
	return p.net.ns
}

// Dir is the pod's host folder (volumes, hosts files), removed by Stop.
func (p *Pod) Dir() string { return p.dir }

// Stop ends the pod as the kubelet does on deletion: SIGTERM to the container's process,
// SIGKILL to all of it after grace, then removes its network namespace (and veth) and its
// folder. The mounts lived only in the pod's mount namespace, which ends with its last process.
// Safe to call more than once and on a pod that ended by itself.
func (p *Pod) Stop(grace time.Duration) error {
	p.stopOnce.Do(func() {
		var errs []error
		if p.cmd != nil && p.cmd.Process != nil {
			select {
			case <-p.done:
			default:
				pgid := p.cmd.Process.Pid
				// SIGTERM goes to PID 1 of the pod's PID namespace, as a runtime signals the
				// container; unshare, its parent, would kill it at once (--kill-child).
				if child := firstChild(pgid); child > 0 {
					_ = syscall.Kill(child, syscall.SIGTERM)
				}
				select {
				case <-p.done:
				case <-time.After(grace):
					_ = syscall.Kill(-pgid, syscall.SIGKILL)
					<-p.done
				}
			}
		}
		if p.probeStop != nil {
			p.probeStop()
			<-p.probeDone
		}
		if p.net != nil {
			if err := p.net.teardown(); err != nil {
				errs = append(errs, err)
			}
		}
		if p.dir != "" {
			if err := os.RemoveAll(p.dir); err != nil {
				errs = append(errs, err)
			}
		}
		p.stopErr = errors.Join(errs...)
	})
	return p.stopErr
}

// firstChild is a child process of pid (unshare's one child), 0 when none.
func firstChild(pid int) int {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/children", pid, pid))
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return 0
	}
	n, _ := strconv.Atoi(f[0])
	return n
}

// ProcessesLeft are the pids of processes still in the pod's network namespace (by the
// namespace's inode), for tests that check Stop.
func (p *Pod) ProcessesLeft() []int {
	if p.netnsInode == 0 {
		return nil
	}
	ents, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		var st syscall.Stat_t
		if syscall.Stat(fmt.Sprintf("/proc/%d/ns/net", pid), &st) == nil && st.Ino == p.netnsInode {
			out = append(out, pid)
		}
	}
	return out
}

// identity is the process's uid, gid and supplementary groups: the container's securityContext
// over the pod's, root by default (the host is the image, whose user is root); fsGroup and
// supplementalGroups are supplementary groups, as the runtime adds them.
func identity(pod *corev1.Pod, c *corev1.Container) (uid, gid int64, groups []int64) {
	if psc := pod.Spec.SecurityContext; psc != nil {
		if psc.RunAsUser != nil {
			uid = *psc.RunAsUser
		}
		if psc.RunAsGroup != nil {
			gid = *psc.RunAsGroup
		}
		if psc.FSGroup != nil {
			groups = append(groups, *psc.FSGroup)
		}
		groups = append(groups, psc.SupplementalGroups...)
	}
	if sc := c.SecurityContext; sc != nil {
		if sc.RunAsUser != nil {
			uid = *sc.RunAsUser
		}
		if sc.RunAsGroup != nil {
			gid = *sc.RunAsGroup
		}
	}
	return uid, gid, groups
}

// ipcLock says whether the container may lock memory without limit: CAP_IPC_LOCK added, or
// privileged. Besides the capability (boundingSet), the runner raises RLIMIT_MEMLOCK to
// unlimited where this machine allows it, so that a non-root process can register RDMA memory
// too.
func ipcLock(c *corev1.Container) bool {
	sc := c.SecurityContext
	if sc == nil {
		return false
	}
	if sc.Privileged != nil && *sc.Privileged {
		return true
	}
	if sc.Capabilities != nil {
		for _, a := range sc.Capabilities.Add {
			if strings.TrimPrefix(string(a), "CAP_") == "IPC_LOCK" {
				return true
			}
		}
	}
	return false
}

// DefaultCapabilities are the capabilities a container gets when its securityContext adds or
// drops none: containerd's default set (pkg/oci/spec.go defaultUnixCaps in containerd 1.7 and
// 2.x; the same list as moby's).
var DefaultCapabilities = []string{"CHOWN", "DAC_OVERRIDE", "FSETID", "FOWNER", "MKNOD", "NET_RAW", "SETGID",
	"SETUID", "SETFCAP", "SETPCAP", "NET_BIND_SERVICE", "SYS_CHROOT", "KILL", "AUDIT_WRITE"}

// boundingSet is setpriv's --bounding-set for the container: the default capabilities with
// securityContext.capabilities' add and drop applied ("ALL" drops every one); a privileged
// container keeps all. The bounding set limits what root has after exec (capabilities(7)); a
// non-root process has none effective, as in Kubernetes, which gives no ambient capabilities.
func boundingSet(c *corev1.Container) string {
	sc := c.SecurityContext
	if sc != nil && sc.Privileged != nil && *sc.Privileged {
		return "+all"
	}
	have := map[string]bool{}
	for _, n := range DefaultCapabilities {
		have[n] = true
	}
	if sc != nil && sc.Capabilities != nil {
		for _, d := range sc.Capabilities.Drop {
			n := strings.TrimPrefix(strings.ToUpper(string(d)), "CAP_")
			if n == "ALL" {
				have = map[string]bool{}
			}
			delete(have, n)
		}
		for _, a := range sc.Capabilities.Add {
			have[strings.TrimPrefix(strings.ToUpper(string(a)), "CAP_")] = true
		}
	}
	out := "-all"
	for _, n := range sortedKeys(have) {
		out += ",+" + strings.ToLower(n)
	}
	return out
}

// commandLine is command + args with $(VAR) expanded from the container's environment.
func commandLine(c *corev1.Container, env []string) []string {
	vals := map[string]string{}
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		vals[k] = v
	}
	lookup := func(k string) (string, bool) { v, ok := vals[k]; return v, ok }
	var out []string
	for _, a := range append(append([]string{}, c.Command...), c.Args...) {
		out = append(out, expand(a, lookup))
	}
	return out
}

// findProgram checks that the command exists in the "image" (this machine's root with the
// image's mapped files), as the runtime does before it starts the process; it returns the
// runtime's message when it does not, "" when it does or when it lies under a volume (made only
// in the pod). Messages are runc's (libcontainer/standard_init_linux.go: exec.LookPath's error).
func findProgram(name string, env []string, img Image, mounts []corev1.VolumeMount) string {
	exe := func(p string) bool {
		fi, err := os.Stat(p)
		return err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0
	}
	under := func(p string) bool {
		for in, host := range img.Files {
			// A mapped file, or a program in a mapped folder (the training image's /opt/conda/bin).
			if p == in || strings.HasPrefix(p, strings.TrimSuffix(in, "/")+"/") && exe(filepath.Join(host, p[len(in):])) {
				return true
			}
		}
		for _, m := range mounts {
			if p == m.MountPath || strings.HasPrefix(p, strings.TrimSuffix(m.MountPath, "/")+"/") {
				return true
			}
		}
		return false
	}
	if strings.Contains(name, "/") {
		if under(name) || exe(name) {
			return ""
		}
		return fmt.Sprintf("exec: %q: stat %s: no such file or directory", name, name)
	}
	pathVar := ""
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "PATH="); ok {
			pathVar = v
		}
	}
	for _, d := range filepath.SplitList(pathVar) {
		if p := filepath.Join(d, name); under(p) || exe(p) {
			return ""
		}
	}
	return fmt.Sprintf("exec: %q: executable file not found in $PATH", name)
}

// q quotes s for sh.
func q(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// shim is the script that PID 1 of the pod's namespaces runs as root before it execs the
// container's command: it builds the pod's root (an overlay on / whose writable layer is a tmpfs
// of this mount namespace), mounts /proc, /dev, /sys, the image's mapped files, the hosts files
// and the volumes, sets the hostname, pivots into the root, raises RLIMIT_MEMLOCK for IPC_LOCK,
// and execs the command as the container's uid/gid in its workingDir (setpriv(1), env(1)).
// Every mount is made in the pod's own mount namespace, so none is seen outside or survives it.
func shim(dir string, pod *corev1.Pod, c *corev1.Container, vols map[string]*volume, img Image,
	hostname string, uid, gid int64, groups []int64, env []string) (string, error) {
	root := filepath.Join(dir, "rootfs")
	layer := filepath.Join(dir, "layer")
	var b strings.Builder
	line := func(cmd, what string) { fmt.Fprintf(&b, "%s || fail %s\n", cmd, q(what)) }
	b.WriteString("fail() { echo \"podrun: cannot start the container: $1\" >&2; exit 128; }\n")
	line("/usr/bin/mount -t tmpfs -o mode=0755 ain-layer "+q(layer), "tmpfs for the writable layer")
	line("/usr/bin/mkdir "+q(layer+"/upper")+" "+q(layer+"/work"), "layer folders")
	line(fmt.Sprintf("/usr/bin/mount -t overlay -o %s ain-root %s",
		q("lowerdir=/,upperdir="+layer+"/upper,workdir="+layer+"/work"), q(root)), "overlay root")
	line("/usr/bin/mount -t proc proc "+q(root+"/proc"), "/proc")
	line("/usr/bin/mount --rbind /dev "+q(root+"/dev"), "/dev")
	// A runtime gives each pod a /dev/shm of its own, 64 MiB by default (containerd, docker).
	line("/usr/bin/mount -t tmpfs -o mode=1777,size=67108864 shm "+q(root+"/dev/shm"), "/dev/shm")
	line("/usr/bin/mount -t sysfs -o ro sysfs "+q(root+"/sys"), "/sys")
	bindFile := func(src, dst string, ro bool, what string) {
		t := root + dst
		fi, err := os.Stat(src)
		if err == nil && fi.IsDir() {
			line("/usr/bin/mkdir -p "+q(t), what)
		} else {
			line(fmt.Sprintf("{ [ -e %s ] || { /usr/bin/mkdir -p %s && : > %s; }; }", q(t), q(path.Dir(t)), q(t)), what)
		}
		opt := ""
		if ro {
			opt = " -o ro"
		}
		line("/usr/bin/mount --bind"+opt+" "+q(src)+" "+q(t), what)
	}
	for _, d := range img.Dirs {
		line("/usr/bin/mkdir -p "+q(root+path.Clean("/"+d)), "image folder "+d)
	}
	for _, dst := range sortedKeys(img.Files) {
		bindFile(img.Files[dst], path.Clean("/"+dst), true, "image file "+dst)
	}
	for _, f := range []string{"hosts", "resolv.conf", "hostname"} {
		bindFile(filepath.Join(dir, "etc-"+f), "/etc/"+f, false, "/etc/"+f)
	}
	for _, name := range sortedKeys(vols) {
		if v := vols[name]; v.tmpfs != "" {
			line("/usr/bin/mount -t tmpfs -o "+q(v.tmpfs)+" ain-emptydir "+q(v.dir), "emptyDir "+name)
			if sc := pod.Spec.SecurityContext; sc != nil && sc.FSGroup != nil {
				line(fmt.Sprintf("/usr/bin/chgrp %d %s && /usr/bin/chmod g+rwxs %s", *sc.FSGroup, q(v.dir), q(v.dir)), "emptyDir "+name+" fsGroup")
			}
		}
	}
	mounts := append([]corev1.VolumeMount{}, c.VolumeMounts...)
	// Outer paths first, so that a mount inside another lands on top of it (containerd sorts
	// mounts by path depth).
	sort.SliceStable(mounts, func(i, j int) bool {
		return strings.Count(path.Clean(mounts[i].MountPath), "/") < strings.Count(path.Clean(mounts[j].MountPath), "/")
	})
	for _, m := range mounts {
		v, ok := vols[m.Name]
		if !ok {
			return "", fmt.Errorf("volumeMount %q: no volume of that name", m.Name)
		}
		src := v.dir
		if m.SubPath != "" {
			src = filepath.Join(v.dir, filepath.Clean("/"+m.SubPath))
		}
		bindFile(src, path.Clean("/"+m.MountPath), m.ReadOnly || v.readOnly, "volumeMount "+m.MountPath)
	}
	line("/usr/bin/hostname "+q(hostname), "hostname")
	line(": > "+q(filepath.Join(dir, "started")), "started marker")
	line("cd "+q(root)+" && /usr/bin/mkdir .podrun-old && /usr/sbin/pivot_root . .podrun-old", "pivot_root")
	line("/usr/bin/umount -l /.podrun-old && /usr/bin/rmdir /.podrun-old", "detach the host's root")
	if ipcLock(c) {
		// Best effort: raising the hard limit needs CAP_SYS_RESOURCE, which a machine that is
		// itself a container may lack; the capability in the bounding set is what counts.
		b.WriteString("ulimit -l unlimited 2>/dev/null || ulimit -S -l \"$(ulimit -H -l)\"\n")
	}
	b.WriteString("exec")
	for _, a := range containerPrefix(c, uid, gid, groups, env) {
		b.WriteString(" " + q(a))
	}
	b.WriteString(" \"$@\"\n")
	return b.String(), nil
}

// containerPrefix is the command line that runs a command as the container's process, inside
// the pod's root: the container's uid, gid, groups and capability bounding set (setpriv(1)), in
// its workingDir, with the environment the caller gives it (env(1)). The shim execs the
// container's command through it, and an exec probe its command, as a runtime's exec reuses the
// container's process spec with other args (containerd: ExecSync).
func containerPrefix(c *corev1.Container, uid, gid int64, groups []int64, env []string) []string {
	wd := c.WorkingDir
	if wd == "" {
		wd = "/"
	}
	out := []string{"/usr/bin/setpriv", fmt.Sprintf("--reuid=%d", uid), fmt.Sprintf("--regid=%d", gid), "--bounding-set=" + boundingSet(c)}
	if len(groups) == 0 {
		out = append(out, "--clear-groups")
	} else {
		gs := make([]string, len(groups))
		for i, g := range groups {
			gs[i] = strconv.FormatInt(g, 10)
		}
		out = append(out, "--groups="+strings.Join(gs, ","))
	}
	out = append(out, "--", "/usr/bin/env")
	// sh adds PWD (and cd OLDPWD) to the environment; a runtime does not.
	for _, v := range []string{"PWD", "OLDPWD"} {
		if !hasVar(env, v) {
			out = append(out, "-u", v)
		}
	}
	return append(out, "-C", wd, "--")
}

func hasVar(env []string, name string) bool {
	for _, kv := range env {
		if strings.HasPrefix(kv, name+"=") {
			return true
		}
	}
	return false
}

// logBuffer keeps the last max bytes written to it.
type logBuffer struct {
	mu      sync.Mutex
	buf     []byte
	max     int
	written int64 // every byte ever written, kept ones or not
}

func newLogBuffer(max int) *logBuffer { return &logBuffer{max: max} }

func (l *logBuffer) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.buf = append(l.buf, b...)
	l.written += int64(len(b))
	if over := len(l.buf) - l.max; over > 0 {
		l.buf = append(l.buf[:0:0], l.buf[over:]...)
	}
	return len(b), nil
}

// Since returns what was written after the first n bytes, as far as the buffer still keeps it,
// how many bytes were written in all (the n of the next call), and whether some of those after
// n were dropped (the data does not follow on from byte n).
func (l *logBuffer) Since(n int64) ([]byte, int64, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	first := l.written - int64(len(l.buf)) // the count of bytes dropped before buf[0]
	cut := n < first
	n = max(n, first)
	return append([]byte(nil), l.buf[n-first:]...), l.written, cut
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return string(l.buf)
}
