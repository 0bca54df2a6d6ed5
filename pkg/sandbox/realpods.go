package sandbox

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	authnv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/ain-hpc/ain/pkg/sandbox/podrun"
)

// Annotations of a pod that runs as a real process (State.RealPods). The agent sets AnnoReal
// with the plan instead of a sample; the kwok stages then leave Ready and the end to the
// process: AnnoRealReady when podrun's readiness probe passes (at start without a probe),
// AnnoRealExit (the terminated reason: Completed, Error or StartError) with AnnoOutcome,
// AnnoExitCode, AnnoTerminationMessage and AnnoLogs when it ends (data/stages/pod.yaml,
// ain-pod-real-ready and ain-pod-real-exit).
const (
	AnnoReal      = AnnoPrefix + "real"
	AnnoRealReady = AnnoPrefix + "real-ready"
	AnnoRealExit  = AnnoPrefix + "real-exit"
)

// realImage is how one container image runs on this machine: Debian's programs stand for the
// image's (the host's / is every image's root, podrun.Image), with the image's own settings.
type realImage struct {
	// SSHPort is the port the image's sshd listens on (its Dockerfile's sshd_config).
	SSHPort int
	// Train is a training image: torchrun and python, with the stand-in modules of trl, peft
	// and bitsandbytes (realpods_train.go).
	Train bool
}

// realImages is the one table of images the sandbox runs for real; any other image keeps the
// simulation. Each row says where its fact comes from.
var realImages = map[string]realImage{
	// ain's default nccl-tests image (recipes/allreduce.yaml): sshd on 22, Debian/Ubuntu's
	// default; ain's worker readiness probe and the coreweave image's own docs use 22.
	"ghcr.io/coreweave/nccl-tests:12.4.1-cudnn-devel-ubuntu22.04-nccl2.21.5-1-85f9143": {SSHPort: 22},
	// The mpi-operator's base images (kubeflow/mpi-operator build/base/Dockerfile: `ARG
	// port=2222`, then `sed -i "s/[ #]\(.*Port \).*/ \1$port/g" /etc/ssh/ssh_config` and
	// `sed -i "s/#\(Port \).*/\1$port/g" /etc/ssh/sshd_config`: sshd listens on 2222 and ssh
	// connects to 2222; the openmpi images build FROM it).
	"mpioperator/base":            {SSHPort: 2222},
	"mpioperator/openmpi":         {SSHPort: 2222},
	"mpioperator/openmpi-builder": {SSHPort: 2222},
	// The qlora recipe's image (recipes/qlora.yaml): huggingface/trl 0.25.1, FROM
	// pytorch/pytorch:2.8.0-cuda12.8-cudnn9-runtime with trl[liger,peft,vlm]; torchrun and
	// python in /opt/conda/bin, first on PATH. Here: Debian's python3-torch 1.13 (gloo, no CUDA)
	// and the stand-ins of data/standins.
	"huggingface/trl": {Train: true},
}

// lookupRealImage finds image in realImages, by its full reference or by its name without
// tag or digest (the mpi-operator's images are tagged per release).
func lookupRealImage(image string) (realImage, bool) {
	if r, ok := realImages[image]; ok {
		return r, true
	}
	name := image
	if i := strings.IndexByte(name, '@'); i >= 0 {
		name = name[:i]
	}
	if i := strings.LastIndexByte(name, ':'); i > strings.LastIndexByte(name, '/') {
		name = name[:i]
	}
	name = strings.TrimPrefix(name, "docker.io/")
	r, ok := realImages[name]
	return r, ok
}

// ncclTestsBinary is where ain's image has all_reduce_perf (recipes/allreduce.yaml
// ncclTests.binary); the stand-in is bind-mounted there.
const ncclTestsBinary = "/opt/nccl_tests/build/all_reduce_perf"

// RealPodsUnavailableError is a machine that cannot run real pods: not root, or a program
// missing. The sandbox then plays every pod from samples and says why.
type RealPodsUnavailableError struct{ Why string }

func (e *RealPodsUnavailableError) Error() string { return e.Why }

// trainingOffFile, in the real pods' folder, says why the training image's pods are played from
// samples although real pods are on.
const trainingOffFile = "training-off"

// trainingOff is why the training image's pods are simulated in the sandbox whose real pods'
// folder is dir ("" when they run).
func trainingOff(dir string) string {
	b, _ := os.ReadFile(filepath.Join(dir, trainingOffFile))
	return strings.TrimSpace(string(b))
}

// realPodsDir holds what the real images need, made once per sandbox (prepareRealPods).
func (l Layout) realPodsDir() string { return filepath.Join(l.Dir, "realpods") }

// checkRealPodsMachine is why this machine cannot run real pods (a RealPodsUnavailableError),
// nil when it can: root and the programs podrun and the images' stand-ins use.
func checkRealPodsMachine() error {
	if os.Geteuid() != 0 {
		return &RealPodsUnavailableError{Why: "real pods need root (network and mount namespaces)"}
	}
	for _, prog := range []string{"mpicc", "mpirun", "orted", "sshd", "ssh", "ssh-keygen", "ip", "nsenter", "unshare"} {
		if _, err := exec.LookPath(prog); err != nil {
			if prog == "sshd" {
				if _, err := os.Stat("/usr/sbin/sshd"); err == nil {
					continue
				}
			}
			return &RealPodsUnavailableError{Why: fmt.Sprintf("this machine lacks %s (run scripts/debian-packages.sh as root)", prog)}
		}
	}
	return nil
}

// prepareRealPods builds CoreDNS into cache (reporting on w) when it is missing, the
// all_reduce_perf stand-in with mpicc, makes the images' sshd host key and writes their ssh
// settings into dir, unless they are there already.
func prepareRealPods(ctx context.Context, dir, cache string, w io.Writer) error {
	if err := checkRealPodsMachine(); err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if err := ensureCoreDNS(ctx, cache, dir, w); err != nil {
		return err
	}
	if err := writeStandIns(dir); err != nil {
		return err
	}
	// The training image needs Debian's python3-torch (a large package) in Debian's python3, the
	// one its stand-ins run (data/standins/bin/python), not the first python3 on PATH: without it, its pods
	// are played from samples, with the reason (trainingOff).
	off := filepath.Join(dir, trainingOffFile)
	if err := exec.CommandContext(ctx, "/usr/bin/python3", "-c", "import importlib.util, sys; sys.exit(importlib.util.find_spec('torch') is None)").Run(); err != nil {
		if err := os.WriteFile(off, []byte("this machine lacks python3-torch for the training image's torchrun (run scripts/debian-packages.sh as root)"), 0o644); err != nil {
			return err
		}
	} else if err := os.Remove(off); err != nil && !os.IsNotExist(err) {
		return err
	}
	// all_reduce_perf is made last (renamed into place): with it, the rest is there, unless
	// its source changed since.
	if src, err := os.ReadFile(filepath.Join(dir, "allreduce.c")); err == nil && string(src) == podrun.AllreduceStandIn {
		if _, err := os.Stat(filepath.Join(dir, "all_reduce_perf")); err == nil {
			return nil
		}
	}
	files := map[string]string{
		"allreduce.c": podrun.AllreduceStandIn,
		// The mpi-operator base image's ssh settings (build/base/Dockerfile:
		// StrictHostKeyChecking no, UserKnownHostsFile /dev/null in ssh_config; StrictModes no
		// in sshd_config), assumed for the coreweave image too (docs/sandbox-real-pods.md).
		"ssh_config":      "Host *\n    StrictHostKeyChecking no\n    UserKnownHostsFile /dev/null\n",
		"sshd_config":     "StrictModes no\nHostKey /etc/ssh/ssh_host_ed25519_key\n",
		"port-2222.conf":  "Port 2222\n",
		"ssh_config-2222": "Host *\n    StrictHostKeyChecking no\n    UserKnownHostsFile /dev/null\n    Port 2222\n",
	}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			return err
		}
	}
	key := filepath.Join(dir, "ssh_host_ed25519_key")
	_ = os.Remove(key)
	_ = os.Remove(key + ".pub")
	steps := [][]string{
		{"ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", key},
		{"mpicc", "-O1", "-o", filepath.Join(dir, "all_reduce_perf.tmp"), filepath.Join(dir, "allreduce.c")},
	}
	for _, s := range steps {
		if out, err := exec.CommandContext(ctx, s[0], s[1:]...).CombinedOutput(); err != nil {
			return fmt.Errorf("%s: %v\n%s", strings.Join(s, " "), err, out)
		}
	}
	return os.Rename(filepath.Join(dir, "all_reduce_perf.tmp"), filepath.Join(dir, "all_reduce_perf"))
}

// podrunImage maps r onto this machine with the files prepareRealPods made in dir.
func podrunImage(r realImage, dir string) podrun.Image {
	img := podrun.Image{
		Files: map[string]string{
			ncclTestsBinary:                     filepath.Join(dir, "all_reduce_perf"),
			"/etc/ssh/ssh_host_ed25519_key":     filepath.Join(dir, "ssh_host_ed25519_key"),
			"/etc/ssh/ssh_config.d/image.conf":  filepath.Join(dir, "ssh_config"),
			"/etc/ssh/sshd_config.d/image.conf": filepath.Join(dir, "sshd_config"),
		},
		Dirs: []string{"/run/sshd"},
	}
	if r.SSHPort == 2222 {
		img.Files["/etc/ssh/sshd_config.d/port.conf"] = filepath.Join(dir, "port-2222.conf")
		img.Files["/etc/ssh/ssh_config.d/image.conf"] = filepath.Join(dir, "ssh_config-2222")
	}
	if r.Train {
		img = trainImage(img, dir)
	}
	return img
}

// kwok gives pod IPs from --cidr (up.go: 10.244.0.0/16) counting up from the subnet's first
// address (sigs.k8s.io/kwok v0.8.0 pkg/kwok/controllers/utils.go ipPool.new: index++ from the
// network address), as the sandbox's nodes have no podCIDR. The pods' bridge is that subnet;
// the host's address on it is the subnet's last usable one, which kwok reaches last.
const (
	realPodCIDR    = "10.244.0.0/16"
	realPodGateway = "10.244.255.254"
)

// realPods runs the agent's real pods: one podrun.Pod per pod UID on one bridge, resolving
// through the cluster DNS started with the bridge.
type realPods struct {
	dir string
	log io.Writer
	// cs and dnsKubeconfig are the API server as the agent and as CoreDNS reach it.
	cs            kubernetes.Interface
	dnsKubeconfig string

	// trainingOff is why the training image's pods are simulated ("" when they run).
	trainingOff string

	mu   sync.Mutex
	net  *podrun.Network
	dns  *clusterDNS
	pods map[string]*podrun.Pod // by pod key (namespace/name)
	uids map[string]string      // pod key -> the UID it was started for
}

func newRealPods(dir string, log io.Writer, cs kubernetes.Interface, dnsKubeconfig string) *realPods {
	return &realPods{dir: dir, log: log, cs: cs, dnsKubeconfig: dnsKubeconfig, trainingOff: trainingOff(dir),
		pods: map[string]*podrun.Pod{}, uids: map[string]string{}}
}

// network makes the bridge and starts the cluster DNS on first use.
func (r *realPods) network(ctx context.Context) (*podrun.Network, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.net != nil {
		return r.net, nil
	}
	// One bridge per machine can hold the subnet: a second one's route would lose to the
	// first, and probes would go to the wrong pods. The agent holds the machine's real-pod lock
	// (lockRealPods), so a bridge of ours that holds the address is one a killed agent left:
	// removed when no pod is on it any more; pods still on it (their namespaces outlive the
	// agent) are named, not killed.
	if out, _ := exec.Command("ip", "-o", "addr", "show", "to", realPodGateway+"/32").Output(); len(strings.TrimSpace(string(out))) > 0 {
		dev := strings.TrimSuffix(strings.Fields(string(out) + " ? ?")[1], ":")
		ports, _ := exec.Command("ip", "-o", "link", "show", "master", dev).Output()
		if !strings.HasPrefix(dev, "ainbr") || len(strings.TrimSpace(string(ports))) > 0 {
			return nil, fmt.Errorf("%s holds the real pods' address %s with pods still on it, left by an agent that was killed (`ip netns list | grep ainpod` names them; `ip netns pids NAME` their processes): stop them, then `ip link del %s`", dev, realPodGateway, dev)
		}
		if out, err := exec.Command("ip", "link", "del", dev).CombinedOutput(); err != nil {
			return nil, fmt.Errorf("%s holds the real pods' address %s and could not be removed: %v: %s", dev, realPodGateway, err, out)
		}
		fmt.Fprintf(r.log, "sandbox agent: removed %s, left by an agent that was killed (it held %s)\n", dev, realPodGateway)
	}
	n, err := podrun.NewNetworkGateway(realPodCIDR, net.ParseIP(realPodGateway))
	if err != nil {
		return nil, err
	}
	dns, err := startClusterDNS(ctx, r.cs, n, filepath.Join(r.dir, "coredns"), r.dir, r.dnsKubeconfig, r.log)
	if err != nil {
		_ = n.Close()
		return nil, err
	}
	fmt.Fprintf(r.log, "sandbox agent: cluster DNS: CoreDNS %s (pid %d) serving %s at %s\n", CoreDNSVersion, dns.cmd.Process.Pid, clusterDNSDomain, clusterDNSIP)
	r.net, r.dns = n, dns
	return n, nil
}

// has reports whether the pod of key was started as a real pod already.
func (r *realPods) has(key string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	_, ok := r.pods[key]
	return ok
}

// startedFor reports whether key's real pod, if any, was started for the pod with uid.
func (r *realPods) startedFor(key, uid string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	u, ok := r.uids[key]
	return !ok || u == uid
}

// stop ends the real pod of key, if any, and forgets it.
func (r *realPods) stop(key string) {
	r.mu.Lock()
	p := r.pods[key]
	delete(r.pods, key)
	delete(r.uids, key)
	r.mu.Unlock()
	if p != nil {
		if err := p.Stop(5 * time.Second); err != nil {
			fmt.Fprintf(r.log, "sandbox agent: %s: stopping the real pod: %v\n", key, err)
		}
	}
}

// close stops every real pod and CoreDNS, and removes the bridge.
func (r *realPods) close() {
	r.mu.Lock()
	keys := make([]string, 0, len(r.pods))
	for k := range r.pods {
		keys = append(keys, k)
	}
	r.mu.Unlock()
	var wg sync.WaitGroup
	for _, k := range keys {
		wg.Go(func() { r.stop(k) })
	}
	wg.Wait()
	r.mu.Lock()
	defer r.mu.Unlock()
	r.dns.stop()
	r.dns = nil
	if r.net != nil {
		_ = r.net.Close()
		r.net = nil
	}
}

// realImageOf is the table's row for pod's first container when the agent runs it for real,
// else why it is simulated.
func (a *agent) realImageOf(pod *corev1.Pod) (realImage, string) {
	off := ""
	if a.real == nil {
		a.mu.Lock()
		off = or(or(realPodsOff(a.st), a.realOff), RealPodsOffHint)
		a.mu.Unlock()
	}
	img, why := realDecision(off, pod)
	switch {
	case why == "" && img.Train && a.real.trainingOff != "":
		return realImage{}, a.real.trainingOff
	case why == "" && img.Train && !runsStandIn(pod):
		// The stand-ins are torch (gloo) and trl's sft; transformers and peft are import-only
		// (data/standins/README.md): a program of its own (the merge recipe's script) needs the
		// image's real libraries.
		return realImage{}, "the training image's stand-ins run trl's sft only; this program needs the image's own transformers and peft"
	}
	return img, why
}

// startReal starts pod as a real process at its IP and follows it: Ready when its probe passes,
// its end, its log. Errors are the pod's (a StartError), never the agent's.
func (a *agent) startReal(ctx context.Context, pod *corev1.Pod, img realImage) error {
	key := pod.Namespace + "/" + pod.Name
	if a.real.has(key) {
		return nil
	}
	n, err := a.real.network(ctx)
	if err != nil {
		return err
	}
	ip := net.ParseIP(pod.Status.PodIP).To4()
	if ip == nil || !n.Subnet.Contains(ip) {
		msg := fmt.Sprintf("pod IP %q is outside the real pods' network %s", pod.Status.PodIP, n.Subnet)
		return a.startFailed(ctx, pod, msg, "")
	}
	plan := realPlanOf(pod)
	if plan.ReadyAfter > 0 {
		// The scenario's slow start: the program starts ReadyAfter after the pod runs.
		started := time.Now()
		if pod.Status.StartTime != nil {
			started = pod.Status.StartTime.Time
		}
		if wait := time.Until(started.Add(plan.ReadyAfter)); wait > 0 {
			return retryAfter(wait)
		}
	}
	planDir, err := a.writePlan(pod, plan)
	if err != nil {
		return a.startFailed(ctx, pod, err.Error(), err.Error()+"\n")
	}
	secrets, configMaps, err := a.podSources(ctx, pod)
	if err != nil {
		return err
	}
	token, err := a.serviceAccountToken(ctx, pod)
	if err != nil {
		return err
	}
	spec := podrun.Spec{Pod: pod, Secrets: secrets, ConfigMaps: configMaps, IP: ip, Network: n,
		Image: withPlan(podrunImage(img, a.real.dir), planDir), ServiceAccountToken: token, Claims: claimDirs(a.real.dir, pod),
		// Other pods' names resolve as on a cluster: through cluster DNS, not /etc/hosts.
		Nameserver: clusterDNSIP}
	p, err := podrun.Start(spec)
	if err != nil {
		return a.startFailed(ctx, pod, err.Error(), err.Error()+"\n")
	}
	a.real.mu.Lock()
	a.real.pods[key], a.real.uids[key] = p, string(pod.UID)
	a.real.mu.Unlock()
	a.recordPodRun(pod, true, "")
	fmt.Fprintf(a.log, "sandbox agent: %s: running %q for real at %s (netns %s)\n", key, pod.Spec.Containers[0].Image, ip, p.NetNS())
	go a.followReal(ctx, pod.DeepCopy(), p)
	return nil
}

// startFailed ends pod as a container that could not start (StartError, exit 128, as runc's),
// recorded as a real run that did not start.
func (a *agent) startFailed(ctx context.Context, pod *corev1.Pod, msg, log string) error {
	a.recordPodRun(pod, true, "did not start: "+msg)
	return a.realEnded(ctx, pod, podrun.Result{ExitCode: 128, Reason: "StartError", Message: msg}, log,
		func(ctx context.Context) (string, error) { return a.writeLogFile(ctx, pod, log) })
}

// followReal reports p's readiness and end into pod's annotations.
func (a *agent) followReal(ctx context.Context, pod *corev1.Pod, p *podrun.Pod) {
	key := pod.Namespace + "/" + pod.Name
	rctx, cancel := context.WithCancel(ctx)
	go func() {
		select {
		case <-p.Done():
			cancel()
		case <-rctx.Done():
		}
	}()
	// The log is served while the process runs, as a kubelet's is: the Logs object now, the
	// file appended to while the process writes (kwok reads it on each request).
	log := a.startLog(ctx, pod, p)
	if p.WaitReady(rctx) {
		if err := a.retryAPI(rctx, pod, func() error { return a.annotate(ctx, pod, map[string]string{AnnoRealReady: "true"}) }); err != nil {
			fmt.Fprintf(a.log, "sandbox agent: %s: %v\n", key, err)
		}
	}
	r, err := p.Wait(ctx)
	cancel()
	log.finish()
	if err != nil {
		return // the agent stops: close() ends the pod
	}
	a.real.mu.Lock()
	current := a.real.pods[key] == p
	a.real.mu.Unlock()
	if !current {
		return // deleted meanwhile
	}
	if err := a.realEnded(ctx, pod, r, p.Log(), log.serve); err != nil {
		fmt.Fprintf(a.log, "sandbox agent: %s: %v\n", key, err)
	}
	// The container ended: its namespaces, mounts and folder go now (a kubelet keeps the
	// sandbox until deletion, but nothing here reads them afterwards).
	if err := p.Stop(time.Second); err != nil {
		fmt.Fprintf(a.log, "sandbox agent: %s: %v\n", key, err)
	}
}

// realLog is a real pod's CRI log while its process runs: copy appends what the process wrote
// since the last copy, every logRefresh, so a reader is at most that far behind the process (a
// PyTorchJob Succeeds when its master does, and a reader then wants the workers' last lines).
// The goroutine started by startLog, then finish, then serve use it in turn (done orders them).
type realLog struct {
	a      *agent
	ctx    context.Context
	pod    *corev1.Pod
	p      *podrun.Pod
	file   string
	cri    *criLog // nil when the file could not be made
	read   int64   // the count of the process's bytes copied so far
	served bool    // the Logs object is made
	tries  int     // failed applies of it: each waits twice as many copies as the one before
	wait   int     // copies to let pass before the next apply
	err    error   // the file's first write error
	stop   chan struct{}
	done   chan struct{}
}

// logRefresh: how often a real pod's log is copied to its file when the process wrote.
const logRefresh = 200 * time.Millisecond

// startLog makes pod's log file, serves it, and copies p's output to it until finish.
func (a *agent) startLog(ctx context.Context, pod *corev1.Pod, p *podrun.Pod) *realLog {
	l := &realLog{a: a, ctx: ctx, pod: pod, p: p, stop: make(chan struct{}), done: make(chan struct{})}
	file, err := a.logFile(pod)
	if err == nil {
		l.file = file
		l.cri, err = createCRILog(file)
	}
	if err != nil {
		fmt.Fprintf(a.log, "sandbox agent: %s/%s: the log file: %v\n", pod.Namespace, pod.Name, err)
		close(l.done)
		return l
	}
	l.copy()
	go l.copyEvery(logRefresh)
	return l
}

// copyEvery copies every period until finish stops it.
func (l *realLog) copyEvery(period time.Duration) {
	defer close(l.done)
	t := time.NewTicker(period)
	defer t.Stop()
	for {
		select {
		case <-t.C:
			l.copy()
		case <-l.stop:
			return
		}
	}
}

// copy appends the process's new output, and serves the file until that took (an API server
// restarting, say).
func (l *realLog) copy() {
	data, n, cut := l.p.LogSince(l.read)
	l.read = n
	if err := l.cri.add(data, time.Now(), cut); err != nil && l.err == nil {
		l.err = err
	}
	if l.served {
		return
	}
	if l.wait > 0 {
		l.wait--
		return
	}
	if err := l.a.serveLog(l.ctx, l.pod, l.file); err != nil {
		if l.tries == 0 {
			fmt.Fprintf(l.a.log, "sandbox agent: %s/%s: serving the log: %v (trying again)\n", l.pod.Namespace, l.pod.Name, err)
		}
		l.tries = min(l.tries+1, 5)
		l.wait = min(1<<l.tries, 25) // 0.4 s, 0.8 s, ... at most 5 s apart
		return
	}
	l.served = true
}

// finish copies the rest of the process's output (it has ended) and closes the file.
func (l *realLog) finish() {
	if l.cri == nil {
		return
	}
	close(l.stop)
	<-l.done
	l.copy()
	if err := l.cri.close(time.Now()); err != nil && l.err == nil {
		l.err = err
	}
}

// serve is realEnded's log step: the file is complete; the Logs object made again (an apply:
// a no-op when copy's took) and the file's path returned. A file that a write failed to (a full
// disk, say) is written whole from the output kept (its last 4 MiB, every line stamped with the
// pod's start), once more on each retry of realEnded: a follower then reads it all again.
func (l *realLog) serve(ctx context.Context) (string, error) {
	if l.cri == nil || l.err != nil {
		return l.a.writeLogFile(ctx, l.pod, l.p.Log())
	}
	return l.file, l.a.serveLog(ctx, l.pod, l.file)
}

// realEnded has logFile write (or finish) the pod's CRI log and return its path, and writes the
// end for the stages; log is the process's output.
func (a *agent) realEnded(ctx context.Context, pod *corev1.Pod, r podrun.Result, log string, logFile func(context.Context) (string, error)) error {
	var file string
	if err := a.retryAPI(ctx, pod, func() (err error) { file, err = logFile(ctx); return err }); err != nil {
		return err
	}
	outcome := "Succeeded"
	if r.ExitCode != 0 {
		outcome = "Failed"
	}
	msg := r.Message
	if len(pod.Spec.Containers) > 0 {
		msg = terminationMessage(&pod.Spec.Containers[0], msg, log, r.ExitCode)
	}
	fmt.Fprintf(a.log, "sandbox agent: %s/%s: exited %d (%s), %d bytes of log in %s\n", pod.Namespace, pod.Name, r.ExitCode, r.Reason, len(log), file)
	// A training rank's NCCL lines (the stand-in's) say what crossed the simulated fabric: the
	// agent counts it on the node's ports as for a sample, before the pod ends.
	a.mu.Lock()
	a.account(a.sampleData(pod), log)
	a.mu.Unlock()
	return a.retryAPI(ctx, pod, func() error {
		return a.annotate(ctx, pod, map[string]string{
			AnnoLogs: file, AnnoOutcome: outcome, AnnoExitCode: strconv.Itoa(r.ExitCode),
			AnnoTerminationMessage: msg, AnnoRealExit: r.Reason,
		})
	})
}

// retryAPI runs a write of pod's state until it takes, a bounded while through an API server
// that restarts (a kubelet keeps reporting a container's state; the state a real process
// reaches happens once). It stops, writing nothing, once pod is gone or another pod has its
// name (the kubelet's status manager skips a pod deleted and recreated, by UID); an error that
// is not transient is returned at once. The first failure is logged.
func (a *agent) retryAPI(ctx context.Context, pod *corev1.Pod, write func() error) error {
	key := pod.Namespace + "/" + pod.Name
	deadline := time.Now().Add(2 * time.Minute)
	wait := 500 * time.Millisecond
	for try := 0; ; try++ {
		if cur, err := a.lister.Pods(pod.Namespace).Get(pod.Name); apierrors.IsNotFound(err) || err == nil && cur.UID != pod.UID {
			return nil
		}
		err := write()
		if err == nil || apierrors.IsNotFound(err) {
			return err
		}
		if !transient(err) || time.Now().After(deadline) {
			return err
		}
		if try == 0 {
			fmt.Fprintf(a.log, "sandbox agent: %s: %v (trying again)\n", key, err)
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(wait):
		}
		wait = min(2*wait, 5*time.Second)
	}
}

// transient reports whether err may go away by itself: the API server away or overloaded.
func transient(err error) bool {
	var status apierrors.APIStatus
	if !errors.As(err, &status) {
		return true // no answer: connection refused or reset, EOF, a timeout
	}
	return apierrors.IsServerTimeout(err) || apierrors.IsTimeout(err) || apierrors.IsTooManyRequests(err) ||
		apierrors.IsInternalError(err) || apierrors.IsServiceUnavailable(err) || apierrors.IsConflict(err)
}

// podSources reads the Secrets and ConfigMaps pod's volumes, env and envFrom name.
func (a *agent) podSources(ctx context.Context, pod *corev1.Pod) (map[string]*corev1.Secret, map[string]*corev1.ConfigMap, error) {
	secretNames, cmNames := map[string]bool{}, map[string]bool{}
	for _, v := range pod.Spec.Volumes {
		switch {
		case v.Secret != nil:
			secretNames[v.Secret.SecretName] = true
		case v.ConfigMap != nil:
			cmNames[v.ConfigMap.Name] = true
		case v.Projected != nil:
			for _, s := range v.Projected.Sources {
				if s.Secret != nil {
					secretNames[s.Secret.Name] = true
				}
				if s.ConfigMap != nil {
					cmNames[s.ConfigMap.Name] = true
				}
			}
		}
	}
	for _, c := range pod.Spec.Containers {
		for _, e := range c.EnvFrom {
			if e.SecretRef != nil {
				secretNames[e.SecretRef.Name] = true
			}
			if e.ConfigMapRef != nil {
				cmNames[e.ConfigMapRef.Name] = true
			}
		}
		for _, e := range c.Env {
			if f := e.ValueFrom; f != nil && f.SecretKeyRef != nil {
				secretNames[f.SecretKeyRef.Name] = true
			} else if f != nil && f.ConfigMapKeyRef != nil {
				cmNames[f.ConfigMapKeyRef.Name] = true
			}
		}
	}
	secrets, cms := map[string]*corev1.Secret{}, map[string]*corev1.ConfigMap{}
	for name := range secretNames {
		s, err := a.cs.CoreV1().Secrets(pod.Namespace).Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			continue // podrun says so as a kubelet would (or skips it when optional)
		}
		if err != nil {
			return nil, nil, err
		}
		secrets[name] = s
	}
	for name := range cmNames {
		c, err := a.cs.CoreV1().ConfigMaps(pod.Namespace).Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			return nil, nil, err
		}
		cms[name] = c
	}
	return secrets, cms, nil
}

// serviceAccountToken asks the API server for a token of the pod's service account bound to
// the pod, as the kubelet does for a projected serviceAccountToken source; "" when the pod has
// none.
func (a *agent) serviceAccountToken(ctx context.Context, pod *corev1.Pod) (string, error) {
	var src *corev1.ServiceAccountTokenProjection
	for _, v := range pod.Spec.Volumes {
		if v.Projected == nil {
			continue
		}
		for _, s := range v.Projected.Sources {
			if s.ServiceAccountToken != nil {
				src = s.ServiceAccountToken
			}
		}
	}
	if src == nil {
		return "", nil
	}
	sa := pod.Spec.ServiceAccountName
	if sa == "" {
		sa = "default"
	}
	tr := &authnv1.TokenRequest{Spec: authnv1.TokenRequestSpec{
		ExpirationSeconds: src.ExpirationSeconds,
		BoundObjectRef:    &authnv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: pod.Name, UID: pod.UID},
	}}
	if src.Audience != "" {
		tr.Spec.Audiences = []string{src.Audience}
	}
	out, err := a.cs.CoreV1().ServiceAccounts(pod.Namespace).CreateToken(ctx, sa, tr, metav1.CreateOptions{})
	if err != nil {
		return "", fmt.Errorf("service account token for %s: %w", sa, err)
	}
	return out.Status.Token, nil
}
