package sandbox

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/ain-hpc/ain/pkg/next"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// SimulatedNote is said once wherever the sandbox shows its workloads.
const SimulatedNote = "Nodes and containers are simulated (kwok): pods go through their phases and print recorded log samples; no GPU, RDMA device or container runs. The control plane (API server, scheduler, controllers, the job operators and their webhooks) is real."

// RealPodsNote replaces SimulatedNote where the sandbox runs real pods.
const RealPodsNote = "Nodes are simulated (kwok); pods of the nccl-tests, mpi-operator and training images run their programs as real processes (sshd, Open MPI, torchrun with gloo) in network namespaces of their own where the sandbox can (`ain sandbox status` says which did and why not: probes that read the simulated node, a kubeflow.org/v1 MPIJob), other pods print recorded log samples. No GPU or RDMA device: NCCL's figures come from the simulated fabric. The control plane (API server, scheduler, controllers, the job operators and their webhooks) is real."

// CommandNote is what a command run on the sandbox of kubeconfig (its state folder holds it;
// else the one getenv leads to) says of it, once: what is real and what simulated.
func CommandNote(kubeconfig string, getenv func(string) string) string {
	dirs := []string{filepath.Dir(kubeconfig)}
	if dir, err := StateDir(getenv); err == nil {
		dirs = append(dirs, dir)
	}
	for _, dir := range dirs {
		if st, err := LoadState(dir); err == nil {
			return st.PodsNote()
		}
	}
	return "the control plane is real, the GPU nodes and the fabric are simulated (`ain sandbox status` says which pods ran their real programs)"
}

// PodsNote says in a line what runs in the sandbox's pods, for a command's note.
func (s *State) PodsNote() string {
	if s.RealPods() {
		return "the control plane is real; pods of the nccl-tests, mpi-operator and training images run their real programs (sshd, Open MPI, torchrun) where the sandbox can (`ain sandbox status` says which did); the GPU nodes, NCCL's output and the fabric's figures are simulated"
	}
	return "the control plane is real, the GPU nodes and what runs in the pods are simulated (logs are recorded samples)"
}

// simulatedNote is what the sandbox of st simulates.
func simulatedNote(st *State) string {
	if st.RealPods() {
		return RealPodsNote
	}
	return SimulatedNote
}

// Options for Up.
type Options struct {
	Dir    string // state folder (see StateDir)
	Cache  string // binary cache (see CacheDir)
	Config Config
	// Out receives progress; nil discards it.
	Out io.Writer
	// AgentCommand is the argv that runs RunAgent for this sandbox (the state folder is passed
	// in the environment as AIN_SANDBOX_STATE). The CLI passes `ain sandbox agent`.
	AgentCommand []string
	AgentEnv     []string
	// Timeout bounds the start-up once the binaries are built (default: 3 minutes, plus the
	// time kwok needs to make more than 300 nodes Ready; see startTimeout).
	Timeout time.Duration
	// DieWithParent has the kernel kill every component when the calling process dies (for
	// tests); the CLI leaves it off so that the sandbox outlives `ain sandbox up`.
	DieWithParent bool
}

// ErrNotRunning is returned for a state folder without a running sandbox.
var ErrNotRunning = errors.New("no sandbox is running")

// Up builds the binaries if needed and starts the sandbox described by opts. When the sandbox
// in opts.Dir already runs, it returns its state with running set to true and starts nothing.
func Up(ctx context.Context, opts Options) (st *State, running bool, err error) {
	out := opts.Out
	if out == nil {
		out = io.Discard
	}
	cfg := opts.Config.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, false, err
	}
	sc, err := LoadScenario(cfg.Scenario)
	if err != nil {
		return nil, false, err
	}
	if len(opts.AgentCommand) == 0 {
		return nil, false, errors.New("sandbox: Options.AgentCommand is required")
	}
	dir, err := filepath.Abs(opts.Dir)
	if err != nil {
		return nil, false, err
	}
	if strings.Contains(dir, ",") {
		return nil, false, &StateDirError{Dir: dir}
	}
	l := Layout{dir}
	for _, d := range []string{dir, l.Logs(), l.Config(), l.PodLogs()} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return nil, false, err
		}
	}
	unlock, err := lockFile(l.Lock(), 0o600)
	if err != nil {
		return nil, false, err
	}
	defer unlock()

	old, _ := LoadState(dir)
	if old != nil && old.Stack() != cfg.Stack {
		// Its etcd data holds the other stack's CRDs: mpijobs.kubeflow.org cannot change owner
		// (v1 and v2beta1 are two unrelated schemas under one name).
		return nil, false, &StackMismatchError{Dir: dir, Running: old.Stack(), Want: cfg.Stack}
	}
	if old != nil {
		if healthy(ctx, old) {
			return old, true, nil
		}
		fmt.Fprintln(out, "A previous sandbox here is partly down: stopping what is left and starting again.")
		stopAll(old, out)
	}

	if err := ensure(ctx, opts.Cache, upComponents(cfg), out, nil); err != nil {
		return nil, false, err
	}
	timeout := opts.Timeout
	if timeout == 0 {
		timeout = startTimeout(cfg.Nodes)
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()

	u := &upRun{opts: opts, cfg: cfg, sc: sc, l: l, out: out, t0: time.Now(), timeout: timeout,
		st: &State{Config: cfg, StartedAt: time.Now().UTC(), Dir: dir, Kubeconfig: l.Kubeconfig()}}
	defer func() {
		if err != nil {
			u.undo(ctx, err)
		}
	}()
	if err := u.credentials(old); err != nil {
		return u.st, false, err
	}
	fmt.Fprintf(out, "Starting the %s sandbox in %s (all on 127.0.0.1)\n", cfg.Stack, dir)
	if err := u.startEtcd(ctx); err != nil {
		return u.st, false, err
	}
	k, err := u.startAPIServer(ctx)
	if err != nil {
		return u.st, false, err
	}
	if err := u.createObjects(ctx, k); err != nil {
		return u.st, false, err
	}
	if err := u.registerWebhooks(ctx, k); err != nil {
		return u.st, false, err
	}
	procs, err := u.startComponents(ctx)
	if err != nil {
		return u.st, false, err
	}
	if err := u.waitReady(ctx, k, procs); err != nil {
		return u.st, false, err
	}
	fmt.Fprintf(out, "Sandbox up in %s.\n", time.Since(u.t0).Round(100*time.Millisecond))
	return u.st, false, nil
}

// upRun is one start of the sandbox: what Up has decided and what it has started so far.
type upRun struct {
	opts Options
	cfg  Config
	sc   *Scenario
	l    Layout
	out  io.Writer
	t0   time.Time
	st   *State
	pki  *pki
	// timeout is Up's overall limit (Options.Timeout or startTimeout).
	timeout time.Duration
}

// started are the processes whose readiness Up waits for after all are started.
type started struct {
	cm, sched, kwok, agent, operator *Proc
	current                          []*Proc
}

// undo stops what a start that failed or was interrupted had started, by pid, and says so, so
// nothing is left running and the user sees what was undone.
func (u *upRun) undo(ctx context.Context, err error) {
	if len(u.st.Procs) > 0 {
		why, _, _ := strings.Cut(err.Error(), "\n")
		if errors.Is(ctx.Err(), context.Canceled) {
			why = "interrupted" // a component seen exiting meanwhile is a consequence, not the cause
		}
		fmt.Fprintf(u.out, "Start-up did not finish (%s): stopping what was started.\n", why)
	}
	stopAll(u.st, u.out)
	if u.st.Webhook.On && u.st.Stack() == StackLegacy {
		releaseWebhookCerts(u.st.Dir)
	}
	_ = os.Remove(u.l.State())
}

// credentials makes the PKI, picks the ports (an earlier start's when they are free, so
// kubeconfigs handed out stay valid) and writes every component's kubeconfig.
func (u *upRun) credentials(old *State) error {
	p, err := ensurePKI(u.l.PKI())
	if err != nil {
		return err
	}
	u.pki = p
	if old != nil && old.Ports.allFree() {
		u.st.Ports = old.Ports
	} else if u.st.Ports, err = newPorts(); err != nil {
		return err
	}
	u.st.Server = fmt.Sprintf("https://127.0.0.1:%d", u.st.Ports.APIServer)
	return writeCredentials(u.l, p, u.st.Server)
}

func (u *upRun) step(format string, a ...any) {
	fmt.Fprintf(u.out, "  %-28s %s\n", fmt.Sprintf(format, a...), time.Since(u.t0).Round(100*time.Millisecond))
}

// start starts one component and records it in the state (a starter).
func (u *upRun) start(name, version, bin string, args, env []string, ports map[string]int) (*Proc, error) {
	return u.startWith(name, version, bin, args, env, ports)
}

// startWith is start with extra open files for the process (fd 3 on).
func (u *upRun) startWith(name, version, bin string, args, env []string, ports map[string]int, extra ...*os.File) (*Proc, error) {
	pr, err := startProc(name, version, bin, args, env, filepath.Join(u.l.Logs(), name+".log"), u.opts.DieWithParent, extra...)
	if err != nil {
		return nil, err
	}
	pr.Ports = ports
	u.st.Procs = append(u.st.Procs, pr)
	if err := saveState(u.st); err != nil {
		return nil, err
	}
	return &u.st.Procs[len(u.st.Procs)-1], nil
}

var plainHTTP = &http.Client{Timeout: 2 * time.Second}

func (u *upRun) startEtcd(ctx context.Context) error {
	ports, l := u.st.Ports, u.l
	etcd, err := u.start("etcd", EtcdVersion, component("etcd").Bin(u.opts.Cache, "etcd"), []string{
		"--name=ain-sandbox", "--data-dir=" + l.Etcd(),
		"--listen-client-urls=http://127.0.0.1:" + strconv.Itoa(ports.EtcdClient),
		"--advertise-client-urls=http://127.0.0.1:" + strconv.Itoa(ports.EtcdClient),
		"--listen-peer-urls=http://127.0.0.1:" + strconv.Itoa(ports.EtcdPeer),
		"--initial-advertise-peer-urls=http://127.0.0.1:" + strconv.Itoa(ports.EtcdPeer),
		"--initial-cluster=ain-sandbox=http://127.0.0.1:" + strconv.Itoa(ports.EtcdPeer),
		"--unsafe-no-fsync", "--quota-backend-bytes=4294967296", "--log-level=warn",
	}, nil, map[string]int{"client": ports.EtcdClient, "peer": ports.EtcdPeer})
	if err != nil {
		return err
	}
	if err := waitHTTP(ctx, etcd, plainHTTP, fmt.Sprintf("http://127.0.0.1:%d/health", ports.EtcdClient), nil, 30*time.Second); err != nil {
		return err
	}
	u.step("etcd ready")
	return nil
}

// startAPIServer starts kube-apiserver, waits until it is ready and returns a client of it.
func (u *upRun) startAPIServer(ctx context.Context) (*kube, error) {
	l, p, st := u.l, u.pki, u.st
	audit := filepath.Join(l.Config(), "audit-policy.yaml")
	if err := os.WriteFile(audit, []byte(auditPolicy), 0o600); err != nil {
		return nil, err
	}
	api, err := u.start("kube-apiserver", KubernetesVersion, component("kubernetes").Bin(u.opts.Cache, "kube-apiserver"), []string{
		"--etcd-servers=http://127.0.0.1:" + strconv.Itoa(st.Ports.EtcdClient),
		"--bind-address=127.0.0.1", "--advertise-address=127.0.0.1",
		"--secure-port=" + strconv.Itoa(st.Ports.APIServer),
		"--tls-cert-file=" + p.path("apiserver.crt"), "--tls-private-key-file=" + p.path("apiserver.key"),
		"--client-ca-file=" + p.path("ca.crt"),
		"--token-auth-file=" + filepath.Join(l.Config(), "tokens.csv"),
		"--authorization-mode=RBAC",
		"--service-account-key-file=" + p.path("sa.pub"),
		"--service-account-signing-key-file=" + p.path("sa.key"),
		"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
		"--service-cluster-ip-range=10.96.0.0/16",
		"--allow-privileged=true",
		"--endpoint-reconciler-type=none",
		"--kubelet-preferred-address-types=InternalIP",
		"--kubelet-certificate-authority=" + p.path("ca.crt"),
		"--audit-policy-file=" + audit,
		"--audit-log-path=" + filepath.Join(l.Logs(), "audit.log"),
		"--audit-log-maxsize=100", "--audit-log-maxbackup=1",
		"--profiling=false",
	}, nil, map[string]int{"https": st.Ports.APIServer})
	if err != nil {
		return nil, err
	}
	cfgAdmin, err := restConfig(l.Kubeconfig())
	if err != nil {
		return nil, err
	}
	secure := tlsClient(p.ca.Cert)
	if err := waitHTTP(ctx, api, secure, st.Server+"/readyz", map[string]string{"Authorization": "Bearer " + cfgAdmin.BearerToken}, 120*time.Second); err != nil {
		return nil, err
	}
	u.step("kube-apiserver ready")
	return newKube(cfgAdmin)
}

// createObjects applies kwok's (and the legacy stack's) CRDs, creates the nodes, the shared
// claim, the port-forwards and the GPU Operator's operands.
func (u *upRun) createObjects(ctx context.Context, k *kube) error {
	cache, cfg := u.opts.Cache, u.cfg
	kwokCRDs := map[string]bool{"logs.kwok.x-k8s.io": true, "clusterlogs.kwok.x-k8s.io": true, "portforwards.kwok.x-k8s.io": true, "clusterportforwards.kwok.x-k8s.io": true}
	if err := k.applyCRDs(ctx, filepath.Join(component("kwok").Dir(cache), "crds"), func(n string) bool { return kwokCRDs[n] }); err != nil {
		return err
	}
	if cfg.Stack == StackLegacy {
		if err := k.applyCRDs(ctx, filepath.Join(component("training-operator").Dir(cache), "crds"), nil); err != nil {
			return err
		}
	}
	if err := k.ensureNodes(ctx, cfg, u.sc, u.st.Ports.Kwok); err != nil {
		return err
	}
	// Namespace default appears shortly after the API server is ready.
	var pvcErr error
	if err := poll(ctx, 30*time.Second, func() (bool, error) {
		pvcErr = k.ensureSharedPVC(ctx, "default", DefaultSharedClaim, false)
		return pvcErr == nil, nil
	}); err != nil {
		return fmt.Errorf("%v: %w", err, pvcErr)
	}
	if err := k.ensurePortForwards(ctx, cfg.PortForwards); err != nil {
		return err
	}
	if !cfg.NoGPUOperator {
		if err := k.ensureGPUOperator(ctx); err != nil {
			return err
		}
	}
	u.step("CRDs and %d nodes created", cfg.Nodes)
	return nil
}

// registerWebhooks registers the current stack's CRDs and webhooks, or the legacy
// training-operator's webhook when this sandbox holds its certificates.
func (u *upRun) registerWebhooks(ctx context.Context, k *kube) error {
	st := u.st
	if u.cfg.Stack != StackLegacy {
		if err := k.prepareCurrent(ctx, u.l, u.pki, u.opts.Cache, st); err != nil {
			return err
		}
		u.step("%s CRDs and webhooks registered", u.cfg.Stack)
		return nil
	}
	wc, reason := claimWebhookCerts(st.Dir)
	if wc == nil {
		st.Webhook = WebhookState{Reason: reason}
		// A configuration left by an earlier start would refuse every PyTorchJob.
		_ = k.cs.AdmissionregistrationV1().ValidatingWebhookConfigurations().Delete(ctx, "validator.training-operator.kubeflow.org", metav1.DeleteOptions{})
		return nil
	}
	st.Webhook = WebhookState{On: true, URL: fmt.Sprintf("https://127.0.0.1:%d/validate-kubeflow-org-v1-pytorchjob", st.Ports.Webhook)}
	return k.ensureOperatorObjects(ctx, wc, st.Ports.Webhook)
}

// startComponents starts kube-controller-manager, kube-scheduler, kwok, the stack's job
// controllers and the agent.
func (u *upRun) startComponents(ctx context.Context) (*started, error) {
	l, p, st, cache := u.l, u.pki, u.st, u.opts.Cache
	k8s := component("kubernetes")
	var s started
	var err error
	s.cm, err = u.start("kube-controller-manager", KubernetesVersion, k8s.Bin(cache, "kube-controller-manager"), []string{
		"--kubeconfig=" + l.kubeconfigFor("controller-manager"),
		"--authentication-kubeconfig=" + l.kubeconfigFor("controller-manager"),
		"--authorization-kubeconfig=" + l.kubeconfigFor("controller-manager"),
		"--bind-address=127.0.0.1", "--secure-port=" + strconv.Itoa(st.Ports.ControllerMgr),
		"--cert-dir=" + filepath.Join(l.PKI(), "controller-manager"),
		"--leader-elect=false",
		"--service-account-private-key-file=" + p.path("sa.key"),
		"--root-ca-file=" + p.path("ca.crt"),
		"--use-service-account-credentials=false",
		"--cluster-name=ain-sandbox",
		"--controllers=*",
		// kwok's node status, every 20-30 s (data/stages/node.yaml), is the simulated kubelets'
		// only heartbeat (no node Leases). The default grace (50 s, k8s.io/kubernetes v1.37.2
		// pkg/controller/nodelifecycle/config/v1alpha1/defaults.go) left 20 s for load: with
		// 1000 nodes probed on two cores kwok's heartbeats fell that far behind, the controller
		// set nodes Unknown and marked their pods not Ready (MarkPodsNotReady), and a probe pod
		// that needed Ready never ended (ain waited out its 5-minute probe timeout). A node the
		// sandbox takes down (AnnoNodeDown) goes Unknown through its own stage, not this grace.
		"--node-monitor-grace-period=" + nodeMonitorGrace.String(),
		// ain creates the nodes without a Ready condition and kwok's first status may come
		// minutes later at 1000 nodes: until then the controller judges a node by this grace,
		// counted from the node's creation (default 1 m), and past it set late nodes Unknown
		// and tainted them, churn in the middle of the start-up. Up's whole limit covers the
		// creation and the Ready wait both.
		"--node-startup-grace-period=" + max(nodeMonitorGrace, u.timeout).String(),
		"--profiling=false",
	}, nil, map[string]int{"https": st.Ports.ControllerMgr})
	if err != nil {
		return nil, err
	}
	s.sched, err = u.start("kube-scheduler", KubernetesVersion, k8s.Bin(cache, "kube-scheduler"), []string{
		"--kubeconfig=" + l.kubeconfigFor("scheduler"),
		"--authentication-kubeconfig=" + l.kubeconfigFor("scheduler"),
		"--authorization-kubeconfig=" + l.kubeconfigFor("scheduler"),
		"--bind-address=127.0.0.1", "--secure-port=" + strconv.Itoa(st.Ports.Scheduler),
		"--cert-dir=" + filepath.Join(l.PKI(), "scheduler"),
		"--leader-elect=false",
		"--profiling=false",
	}, nil, map[string]int{"https": st.Ports.Scheduler})
	if err != nil {
		return nil, err
	}
	if s.kwok, err = u.startKwok(); err != nil {
		return nil, err
	}
	if u.cfg.Stack != StackLegacy {
		if s.current, err = startCurrent(u.start, l, cache, st); err != nil {
			return nil, err
		}
	} else if st.Webhook.On {
		s.operator, err = u.start("training-operator", TrainingOperatorVersion, component("training-operator").Bin(cache, "training-operator.v1"), []string{
			"--webhook-server-port=" + strconv.Itoa(st.Ports.Webhook),
			"--metrics-bind-address=127.0.0.1:" + strconv.Itoa(st.Ports.OperatorMetric),
			"--health-probe-bind-address=127.0.0.1:" + strconv.Itoa(st.Ports.OperatorHealth),
			"--enable-scheme=pytorchjob", "--enable-scheme=mpijob",
			"--leader-elect=false",
		}, []string{"KUBECONFIG=" + l.kubeconfigFor("training-operator")},
			map[string]int{"webhook": st.Ports.Webhook, "metrics": st.Ports.OperatorMetric, "health": st.Ports.OperatorHealth})
		if err != nil {
			return nil, err
		}
	}
	if s.agent, err = u.startAgent(ctx); err != nil {
		return nil, err
	}
	return &s, nil
}

func (u *upRun) startKwok() (*Proc, error) {
	l, p, st := u.l, u.pki, u.st
	stages, err := stagesYAML()
	if err != nil {
		return nil, err
	}
	stages = append(kwokOptions(u.cfg.Nodes), stages...)
	stagesFile := filepath.Join(l.Config(), "kwok-stages.yaml")
	if err := os.WriteFile(stagesFile, stages, 0o600); err != nil {
		return nil, err
	}
	return u.start("kwok", KwokVersion, component("kwok").Bin(u.opts.Cache, "kwok"), []string{
		"--kubeconfig=" + l.kubeconfigFor("kwok"),
		"--config=" + stagesFile,
		"--manage-nodes-with-annotation-selector=kwok.x-k8s.io/node=fake",
		"--node-ip=127.0.0.1", "--node-port=" + strconv.Itoa(st.Ports.Kwok),
		"--server-address=127.0.0.1:" + strconv.Itoa(st.Ports.Kwok),
		"--tls-cert-file=" + p.path("kwok.crt"), "--tls-private-key-file=" + p.path("kwok.key"),
		"--enable-crds=Logs,ClusterLogs,PortForward,ClusterPortForward",
		"--cidr=10.244.0.0/16",
	}, nil, map[string]int{"kubelet": st.Ports.Kwok})
}

// startAgent prepares the real pods' files when the mode is on, then starts the agent.
func (u *upRun) startAgent(ctx context.Context) (*Proc, error) {
	agentEnv := append([]string{"AIN_SANDBOX_STATE=" + u.st.Dir, "AIN_SANDBOX_AGENT=1"}, u.opts.AgentEnv...)
	var extra []*os.File
	if !u.cfg.SimulatePods {
		lock, err := u.prepareRealPods(ctx)
		if err != nil {
			return nil, err
		}
		if lock != nil {
			// The agent inherits the lock (a flock belongs to the open file, which the child
			// shares): taken and held in one act, however long the build above took.
			defer lock.Close()
			extra = append(extra, lock)
			agentEnv = append(agentEnv, envRealPodsLock+"=3")
		}
	}
	if err := saveState(u.st); err != nil {
		return nil, err
	}
	agentBin, err := filepath.Abs(u.opts.AgentCommand[0])
	if err != nil {
		return nil, err
	}
	return u.startWith("agent", "", agentBin, u.opts.AgentCommand[1:], agentEnv, nil, extra...)
}

// prepareRealPods takes the machine's real-pod lock and builds what real pods need, once per
// sandbox. A machine that cannot run them (not root, a program missing, another sandbox holding
// the lock) gets the samples, with the reason in the state (status, notes and the demo say it),
// and no lock.
func (u *upRun) prepareRealPods(ctx context.Context) (*os.File, error) {
	off := func(why string) (*os.File, error) {
		u.st.RealPodsOff = why
		fmt.Fprintf(u.out, "real pods: off: %s; the pods print recorded samples\n", why)
		return nil, nil
	}
	// The machine first (a user who is not root cannot open the lock either), then the lock.
	var unavailable *RealPodsUnavailableError
	if err := checkRealPodsMachine(); errors.As(err, &unavailable) {
		return off(unavailable.Error())
	}
	lock, busy, err := lockRealPods(u.st.Dir, 5*time.Second)
	switch {
	case err != nil:
		return off(fmt.Sprintf("the machine's real-pod lock: %v", err))
	case busy != "":
		return off(busy)
	}
	if err := prepareRealPods(ctx, u.l.realPodsDir(), u.opts.Cache, u.out); errors.As(err, &unavailable) {
		lock.Close()
		return off(unavailable.Error())
	} else if err != nil {
		lock.Close()
		return nil, fmt.Errorf("real pods (--real-pods=false plays every pod from samples): %w", err)
	}
	return lock, nil
}

// waitReady waits for every component to answer, the nodes to be Ready and the GPU Operator's
// operands to run, then saves the state.
func (u *upRun) waitReady(ctx context.Context, k *kube, s *started) error {
	st := u.st
	insecure := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	if err := waitHTTP(ctx, s.cm, insecure, fmt.Sprintf("https://127.0.0.1:%d/healthz", st.Ports.ControllerMgr), nil, 60*time.Second); err != nil {
		return err
	}
	if err := waitHTTP(ctx, s.sched, insecure, fmt.Sprintf("https://127.0.0.1:%d/healthz", st.Ports.Scheduler), nil, 60*time.Second); err != nil {
		return err
	}
	u.step("controller-manager, scheduler ready")
	// The default namespace's shared claim, bound by the controller-manager's volume binder: a
	// preflight right after up would otherwise find it Pending.
	if err := k.ensureSharedPVC(ctx, "default", DefaultSharedClaim, true); err != nil {
		return err
	}
	// kwok marks nodes Ready at a few per second on a loaded 2-core machine (393 of 1000 in the
	// first 90 s, issue 16's preflight scale benchmark): the wait grows with the node count.
	if err := waitNodesReady(ctx, k, u.cfg.Nodes, []*Proc{s.kwok, s.cm}, nodesReadyTimeout(u.cfg.Nodes)); err != nil {
		return err
	}
	u.step("%d nodes Ready, untainted", u.cfg.Nodes)
	if s.operator != nil {
		err := u.waitRestarting(ctx, s.operator, func(p *Proc) error {
			if err := waitHTTP(ctx, p, plainHTTP, fmt.Sprintf("http://127.0.0.1:%d/readyz", st.Ports.OperatorHealth), nil, 90*time.Second); err != nil {
				return err
			}
			return waitTCP(ctx, p, st.Ports.Webhook, 30*time.Second)
		})
		if err != nil {
			return err
		}
		u.step("training-operator + webhook ready")
	}
	if s.current != nil {
		if err := k.waitCurrent(ctx, s.current, u.opts.Cache, st, u.waitRestarting); err != nil {
			return err
		}
		u.step("mpi-operator, jobset, trainer + webhooks ready")
	}
	if !u.cfg.NoGPUOperator {
		// A cluster with the GPU Operator has its operands running before GPU jobs come (a
		// preflight right after `sandbox up` found them still Pending).
		if err := k.waitGPUOperator(ctx, 90*time.Second); err != nil {
			return err
		}
		u.step("GPU Operator's driver, device plugin and dcgm-exporter ready")
	}
	if !alive(*s.agent) {
		return fmt.Errorf("sandbox agent exited:\n%s", tailFile(s.agent.Log, 20))
	}
	return saveState(st)
}

// starter starts one component of the sandbox and records it in the state.
type starter func(name, version, bin string, args, env []string, ports map[string]int) (*Proc, error)

// StateDirError says that the state folder's path cannot be used: kwok reads its stages from
// --config, a comma-separated list flag (sigs.k8s.io/kwok v0.8.0 pkg/config/flags.go,
// StringSliceP), so a path with a comma is split into two that do not exist.
type StateDirError struct{ Dir string }

func (e *StateDirError) Error() string {
	return fmt.Sprintf("the sandbox state folder %s has a comma in its path, which kwok's --config (a comma-separated list) cannot take: "+
		"choose a folder without one (--state-dir, or $AIN_SANDBOX_STATE)", e.Dir)
}

// StackMismatchError says that the sandbox in Dir was started with another stack.
type StackMismatchError struct {
	Dir           string
	Running, Want Stack
}

func (e *StackMismatchError) Error() string {
	return fmt.Sprintf("the sandbox in %s was started with the %s stack, not %s; its cluster keeps that stack's CRDs "+
		"(mpijobs.kubeflow.org is kubeflow.org/v1 on one, v2beta1 on the other): stop it and delete its state first, "+
		"or use another --state-dir", e.Dir, e.Running, e.Want)
}

// NextCommands stops the sandbox and deletes its state.
func (e *StackMismatchError) NextCommands() []next.Command {
	return []next.Command{"sandbox down --purge"}
}

// kwokOptions is kwok's configuration for a sandbox of n nodes: kwok's defaults, except that it
// plays pod stages (the simulated kubelets' status updates: Running, Succeeded, deletion) with
// one worker per 50 nodes instead of 4 in all, and node stages (the heartbeats) with one per 100
// nodes. kwok stands in for every node's kubelet, and kubelets work side by side; with 4 workers
// a 1000-node preflight's 3000 pod stage plays queued behind each other for tens of seconds
// (issue 16), and 1000 nodes' heartbeats, 40 a second, fell behind the same way under load. A KwokConfiguration read from a file gets no
// defaults (sigs.k8s.io/kwok v0.8.0 pkg/config: only a missing one is defaulted), so every
// defaulted option is written out with its default (pkg/apis/config/v1alpha1
// zz_generated.defaults.go); the command-line flags still override these.
func kwokOptions(n int) []byte {
	return fmt.Appendf(nil, `---
apiVersion: config.kwok.x-k8s.io/v1alpha1
kind: KwokConfiguration
options:
  cidr: 10.0.0.0/24
  manageAllNodes: false
  enableDebuggingHandlers: true
  enableContentionProfiling: false
  enableProfilingHandler: true
  podPlayStageParallelism: %d
  nodePlayStageParallelism: %d
  nodeLeaseParallelism: 4
  podsOnNodeSyncParallelism: 1
  enablePodsOnNodeSyncListPager: true
  enablePodsOnNodeSyncStreamWatch: false
`, max(4, n/50), max(4, n/100))
}

// nodeMonitorGrace is kube-controller-manager's --node-monitor-grace-period in the sandbox: four
// of kwok's longest heartbeat gaps (30 s, data/stages/node.yaml).
const nodeMonitorGrace = 2 * time.Minute

const auditPolicy = `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived"]
rules:
- level: None
  resources:
  - group: coordination.k8s.io
    resources: ["leases"]
- level: None
  nonResourceURLs: ["/healthz*", "/readyz*", "/livez*", "/version", "/openapi*"]
- level: Metadata
`

func tlsClient(caPEM []byte) *http.Client {
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(caPEM)
	return &http.Client{Timeout: 3 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
}

// nodesReadyTimeout is how long kwok may take to make n nodes Ready: 600 ms a node, at least
// 90 s. On the loaded 2-core machine of issue 16, kwok made 932 of 1000 nodes Ready in 5 minutes
// (about 3 a second).
func nodesReadyTimeout(n int) time.Duration {
	return max(90*time.Second, time.Duration(n)*600*time.Millisecond)
}

// startTimeout is Up's default overall limit: 3 minutes, which a normal sandbox (up to 150
// nodes) never outgrows, or, for more nodes, the Ready wait plus the same 90 s for everything
// else (1000 nodes: 11.5 minutes; the fixed 3 minutes stopped issue 16's benchmark at 393 Ready
// nodes).
func startTimeout(n int) time.Duration {
	return max(3*time.Minute, nodesReadyTimeout(n)+90*time.Second)
}

// healthy reports whether every recorded process runs and the API server answers.
func healthy(ctx context.Context, st *State) bool {
	if len(st.Procs) == 0 {
		return false
	}
	for _, p := range st.Procs {
		if !alive(p) {
			return false
		}
	}
	ca, err := os.ReadFile(filepath.Join(Layout{st.Dir}.PKI(), "ca.crt"))
	if err != nil {
		return false
	}
	resp, err := tlsClient(ca).Get(st.Server + "/livez")
	if err != nil {
		return false
	}
	resp.Body.Close()
	// 401 without a token still proves it serves.
	return resp.StatusCode == http.StatusOK || resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden
}

// stopAll stops the recorded processes in reverse start order.
func stopAll(st *State, out io.Writer) []error {
	var errs []error
	for i := len(st.Procs) - 1; i >= 0; i-- {
		p := st.Procs[i]
		wasAlive := alive(p)
		if err := stopProc(p, 10*time.Second); err != nil {
			errs = append(errs, err)
			continue
		}
		if wasAlive {
			fmt.Fprintf(out, "  stopped %-24s pid %d\n", p.Name, p.PID)
		}
	}
	return errs
}

// Down stops every process of the sandbox in dir, by pid. With purge it also removes the state
// folder (etcd data, certificates, kubeconfig, logs).
func Down(ctx context.Context, dir string, purge bool, out io.Writer) error {
	if out == nil {
		out = io.Discard
	}
	dir, err := filepath.Abs(dir)
	if err != nil {
		return err
	}
	st, err := LoadState(dir)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	if st != nil {
		if errs := stopAll(st, out); len(errs) > 0 {
			return errors.Join(errs...)
		}
		if st.Stack() == StackLegacy {
			releaseWebhookCerts(dir)
		}
		st.Procs = nil
		if err := saveState(st); err != nil && !purge {
			return err
		}
	} else if !purge {
		return ErrNotRunning
	}
	if purge {
		if _, err := os.Stat(dir); err == nil {
			if err := os.RemoveAll(dir); err != nil {
				return err
			}
			fmt.Fprintf(out, "  removed %s\n", dir)
		}
	}
	return nil
}

// lockFile takes an exclusive flock on path (created with perm) until the returned func runs.
func lockFile(path string, perm os.FileMode) (func(), error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, perm)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		f.Close()
		return nil, err
	}
	return func() {
		_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		f.Close()
	}, nil
}

// upComponents is what Up builds: the stack's components, without CoreDNS where no pod will run
// for real (--real-pods=false, or a machine that cannot: not root, programs missing), since only
// real pods resolve through it. Another sandbox holding the real-pod lock is found later (by
// prepareRealPods): CoreDNS is built then all the same, for this sandbox's next start.
func upComponents(cfg Config) []Component {
	comps := cfg.Stack.Components()
	if !cfg.SimulatePods && checkRealPodsMachine() == nil {
		return comps
	}
	out := comps[:0:0]
	for _, c := range comps {
		if c.Name != "coredns" {
			out = append(out, c)
		}
	}
	return out
}
