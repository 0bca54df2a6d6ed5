package podrun_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/ain-hpc/ain/pkg/sandbox/podrun"
	"github.com/ain-hpc/ain/pkg/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// needRoot skips where namespaces and bridges cannot be made (CI runs as root) and checks the
// programs the runner itself uses.
func needRoot(t *testing.T, more ...string) map[string]string {
	t.Helper()
	progs := testenv.Programs(t, append([]string{"ip", "nsenter", "unshare", "setpriv", "mount", "pivot_root"}, more...)...)
	if os.Geteuid() != 0 {
		t.Skip("pods run in network and mount namespaces, which need root (CI runs as root)")
	}
	return progs
}

// cluster is a bridge with the next free pod IPs.
type cluster struct {
	net  *podrun.Network
	next byte
}

// newCluster makes a bridge on a /24 that overlaps no route of this machine (a running
// sandbox's pod network is 10.244.0.0/16); Cleanup removes it.
func newCluster(t *testing.T) *cluster {
	t.Helper()
	out, _ := exec.Command("ip", "-4", "route", "show").Output()
	var routes []*net.IPNet
	for _, line := range strings.Split(string(out), "\n") {
		if f := strings.Fields(line); len(f) > 0 {
			if _, n, err := net.ParseCIDR(f[0]); err == nil {
				routes = append(routes, n)
			}
		}
	}
	taken := func(s *net.IPNet) bool {
		for _, r := range routes {
			if r.Contains(s.IP) || s.Contains(r.IP) {
				return true
			}
		}
		return false
	}
	for range 20 {
		cidr := fmt.Sprintf("10.%d.%d.0/24", 200+rand.IntN(50), rand.IntN(250))
		if _, s, _ := net.ParseCIDR(cidr); taken(s) {
			continue
		}
		n, err := podrun.NewNetwork(cidr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			if err := n.Close(); err != nil {
				t.Error(err)
			}
		})
		return &cluster{net: n, next: 10}
	}
	t.Fatal("no free /24 under 10.200.0.0/13")
	return nil
}

// ip is the next pod IP.
func (c *cluster) ip() net.IP {
	ip := append(net.IP{}, c.net.Subnet.IP.To4()...)
	ip[3] = c.next
	c.next++
	return ip
}

// start runs spec and stops the pod at the test's end, checking that nothing is left.
func start(t *testing.T, spec podrun.Spec) *podrun.Pod {
	t.Helper()
	p, err := podrun.Start(spec)
	if err != nil {
		t.Fatalf("start %s: %v", spec.Pod.Name, err)
	}
	t.Cleanup(func() {
		if err := p.Stop(2 * time.Second); err != nil {
			t.Errorf("stop %s: %v", p.Name, err)
		}
		assertGone(t, p)
	})
	return p
}

// assertGone checks that a stopped pod left no process, namespace, veth, mount or folder.
func assertGone(t *testing.T, p *podrun.Pod) {
	t.Helper()
	if left := p.ProcessesLeft(); len(left) > 0 {
		t.Errorf("%s: processes left in its network namespace: %v", p.Name, left)
	}
	if ns := p.NetNS(); ns != "" {
		out, _ := exec.Command("ip", "netns", "list").Output()
		if strings.Contains(string(out), ns) {
			t.Errorf("%s: network namespace %s left: %s", p.Name, ns, out)
		}
	}
	if dir := p.Dir(); dir != "" {
		if _, err := os.Stat(dir); !os.IsNotExist(err) {
			t.Errorf("%s: folder %s left (%v)", p.Name, dir, err)
		}
		mi, _ := os.ReadFile("/proc/self/mountinfo")
		if strings.Contains(string(mi), dir) || strings.Contains(string(mi), "ainpod-") && strings.Contains(string(mi), p.NetNS()) {
			t.Errorf("%s: mounts left:\n%s", p.Name, mi)
		}
	}
}

func waitDone(t *testing.T, p *podrun.Pod, d time.Duration) podrun.Result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	r, err := p.Wait(ctx)
	if err != nil {
		t.Fatalf("%s did not end within %s; log:\n%s", p.Name, d, p.Log())
	}
	return r
}

// A pod sees what a kubelet gives it: hostname and hosts files, env from the downward API and
// from Secrets/ConfigMaps, volumes with their modes and fsGroup ownership, a Memory emptyDir as
// a sized tmpfs, its workingDir, uid and gid, and the capabilities (IPC_LOCK added).
func TestPodSeesKubeletSemantics(t *testing.T) {
	// linux/capability.h numbers of containerd's default set and IPC_LOCK (14).
	var bits uint64
	for _, n := range []uint{0, 1, 3, 4, 5, 6, 7, 8, 10, 13, 14, 18, 27, 29, 31} {
		bits |= 1 << n
	}
	capBnd := fmt.Sprintf("%016x", bits)
	needRoot(t)
	c := newCluster(t)
	sec := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "s"}, Data: map[string][]byte{"key": []byte("secret-value"), "other": []byte("x")}}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "c"}, Data: map[string]string{"conf": "cm-value"}}
	script := strings.Join([]string{
		`echo "id=$(id -u):$(id -g) groups=$(id -G)"`,
		`echo "pwd=$(pwd) host=$(hostname)"`,
		`echo "env=$POD_NAME/$POD_NS/$POD_IP/$SECRET/$CONF/$EXPANDED"`,
		`grep CapBnd /proc/self/status | tr -d '\t'`,
		`stat -L -c 'secret=%a %u:%g' /sec/key`,
		`stat -c 'secretdir=%a' /sec`,
		`echo "other=$(ls /sec)"`,
		`stat -L -c 'cm=%a %u:%g' /etc/app/conf`,
		`df -B1 /scratch | tail -1 | awk '{print "scratch=" $2}'`,
		`grep -c podrun-smoke /etc/hosts | sed 's/^/hostslines=/'`,
		`grep -E '^(search|options)' /etc/resolv.conf`,
		`touch /tmp/podrun-written-by-pod && echo wrote`,
		`ip -4 -o addr show eth0 | awk '{print "eth0=" $4}'`,
	}, "; ")
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "podrun-smoke", Namespace: "ns"},
		Spec: corev1.PodSpec{
			Hostname: "smoke-0", Subdomain: "svc",
			SecurityContext: &corev1.PodSecurityContext{RunAsUser: ptr.To[int64](1234), RunAsGroup: ptr.To[int64](2345), FSGroup: ptr.To[int64](3456)},
			Containers: []corev1.Container{{
				Name: "main", Command: []string{"/bin/sh", "-c", script}, WorkingDir: "/tmp",
				Env: []corev1.EnvVar{
					{Name: "POD_NAME", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}},
					{Name: "POD_NS", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.namespace"}}},
					{Name: "POD_IP", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "status.podIP"}}},
					{Name: "SECRET", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "s"}, Key: "key"}}},
					{Name: "CONF", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "c"}, Key: "conf"}}},
					{Name: "EXPANDED", Value: "at-$(POD_IP)"},
				},
				SecurityContext: &corev1.SecurityContext{Capabilities: &corev1.Capabilities{Add: []corev1.Capability{"IPC_LOCK"}}},
				VolumeMounts:    []corev1.VolumeMount{{Name: "sec", MountPath: "/sec"}, {Name: "cm", MountPath: "/etc/app"}, {Name: "scratch", MountPath: "/scratch"}},
			}},
			Volumes: []corev1.Volume{
				{Name: "sec", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "s", DefaultMode: ptr.To[int32](0o400),
					Items: []corev1.KeyToPath{{Key: "key", Path: "key", Mode: ptr.To[int32](0o640)}}}}},
				{Name: "cm", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "c"}}}},
				{Name: "scratch", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{Medium: corev1.StorageMediumMemory, SizeLimit: ptr.To(resource.MustParse("16Mi"))}}},
			},
		},
	}
	ip := c.ip()
	p := start(t, podrun.Spec{Pod: pod, Secrets: map[string]*corev1.Secret{"s": sec}, ConfigMaps: map[string]*corev1.ConfigMap{"c": cm}, IP: ip, Network: c.net})
	r := waitDone(t, p, 10*time.Second)
	log := p.Log()
	if r.ExitCode != 0 || r.Reason != "Completed" {
		t.Fatalf("result %+v; log:\n%s", r, log)
	}
	for _, want := range []string{
		"id=1234:2345 groups=2345 3456",
		"pwd=/tmp host=smoke-0",
		"env=podrun-smoke/ns/" + ip.String() + "/secret-value/cm-value/at-" + ip.String(),
		"CapBnd:" + capBnd,  // the runtime's default capabilities and IPC_LOCK
		"secret=640 0:3456", // items[].mode 0640, owned by root, group fsGroup (|0440 keeps 0640)
		"secretdir=3777",    // tmpfs's 1777 plus the fsGroup setgid
		"other=key",         // items: only the listed key
		"cm=644 0:3456",     // defaultMode 0644 by default
		"scratch=16777216",  // sizeLimit
		"hostslines=0",      // the pod's own line names its hostname, not the pod name
		"search ns.svc.cluster.local svc.cluster.local cluster.local",
		"options ndots:5",
		"wrote", // the writable layer
		"eth0=" + ip.String() + "/24",
	} {
		if !strings.Contains(log, want+"\n") {
			t.Errorf("log lacks %q:\n%s", want, log)
		}
	}
	if _, err := os.Stat("/tmp/podrun-written-by-pod"); !os.IsNotExist(err) {
		t.Errorf("the pod's write reached the host: %v", err)
	}
}

func simplePod(name string, command ...string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Command: command}}}}
}

// Bad input ends the pod, never the runner, and Stop leaves nothing behind: a command that is
// not found is a StartError (exit 128, the runtime's message) with nothing made; a process that
// exits at once is an Error with its code; a pod stopped mid-run, whose PID 1 ignores SIGTERM
// and which started processes in other sessions, is killed whole after the grace period.
func TestBadInputAndStop(t *testing.T) {
	needRoot(t)
	c := newCluster(t)
	for _, tc := range []struct {
		name    string
		command []string
		want    podrun.Result
	}{
		{"not-found", []string{"no-such-program-ain"}, podrun.Result{ExitCode: 128, Reason: "StartError",
			Message: `exec: "no-such-program-ain": executable file not found in $PATH`}},
		{"no-such-path", []string{"/opt/none/prog"}, podrun.Result{ExitCode: 128, Reason: "StartError",
			Message: `exec: "/opt/none/prog": stat /opt/none/prog: no such file or directory`}},
		{"exits-at-once", []string{"/bin/sh", "-c", "exit 3"}, podrun.Result{ExitCode: 3, Reason: "Error"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := start(t, podrun.Spec{Pod: simplePod(tc.name, tc.command...), IP: c.ip(), Network: c.net})
			if r := waitDone(t, p, 5*time.Second); r != tc.want {
				t.Errorf("result %+v, want %+v; log:\n%s", r, tc.want, p.Log())
			}
		})
	}
	t.Run("stop-mid-run", func(t *testing.T) {
		// PID 1 is sh, which has no SIGTERM handler (so the kernel drops SIGTERM to a namespace's
		// init), and two sleeps in sessions of their own, as sshd's sessions are.
		p, err := podrun.Start(podrun.Spec{Pod: simplePod("stop-mid-run", "/bin/sh", "-c",
			"setsid sleep 300 & setsid sleep 301 & echo started; while :; do sleep 1; done"), IP: c.ip(), Network: c.net})
		if err != nil {
			t.Fatal(err)
		}
		deadline := time.Now().Add(5 * time.Second)
		for !strings.Contains(p.Log(), "started") || len(p.ProcessesLeft()) < 5 {
			if time.Now().After(deadline) {
				t.Fatalf("pod did not start its processes: %v; log:\n%s", p.ProcessesLeft(), p.Log())
			}
			time.Sleep(50 * time.Millisecond)
		}
		begin := time.Now()
		if err := p.Stop(time.Second); err != nil {
			t.Fatal(err)
		}
		if took := time.Since(begin); took > 5*time.Second {
			t.Errorf("Stop took %s", took)
		}
		r, err := p.Wait(context.Background())
		if err != nil || r.ExitCode != 137 || r.Signal != "killed" {
			t.Errorf("result %+v (%v), want SIGKILL after the grace period", r, err)
		}
		assertGone(t, p)
		if err := p.Stop(time.Second); err != nil { // twice is fine
			t.Error(err)
		}
	})
}

// The kubelet's hostname: spec.hostname or the name, cut to 63 and stripped of a trailing '-'/'.'.
func TestHostname(t *testing.T) {
	long := strings.Repeat("a", 62) + "-b"
	for _, tc := range []struct {
		pod  corev1.Pod
		want string
	}{
		{corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "qlora-master-0"}}, "qlora-master-0"},
		{corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "x"}, Spec: corev1.PodSpec{Hostname: "qlora-node-0-0"}}, "qlora-node-0-0"},
		{corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: long}}, strings.Repeat("a", 62)},
	} {
		if got := podrun.Hostname(&tc.pod); got != tc.want {
			t.Errorf("%s/%s: %q, want %q", tc.pod.Name, tc.pod.Spec.Hostname, got, tc.want)
		}
	}
}
