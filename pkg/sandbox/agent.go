package sandbox

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"text/template"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"

	"github.com/ain-hpc/ain/internal/lazyre"
	"github.com/ain-hpc/ain/pkg/nccl"
)

// Pod annotations the agent sets and the kwok stages read. Users may set them in a pod
// template to override the scenario for that pod.
const (
	AnnoPrefix        = "sandbox.ain.dev/"
	AnnoStartAfter    = AnnoPrefix + "start-after"
	AnnoReadyAfter    = AnnoPrefix + "ready-after"
	AnnoCompleteAfter = AnnoPrefix + "complete-after"
	AnnoOutcome       = AnnoPrefix + "outcome"
	AnnoExitCode      = AnnoPrefix + "exit-code"
	AnnoSample        = AnnoPrefix + "sample"
	AnnoLogs          = AnnoPrefix + "logs"
	// AnnoTerminationMessage carries the first container's termination message (what a probe
	// the agent ran wrote to its terminationMessagePath, or the log's tail under
	// FallbackToLogsOnError) to the stages, which put it in state.terminated.message as a kubelet
	// does. Set with AnnoLogs, in the same patch.
	AnnoTerminationMessage = AnnoPrefix + "termination-message"
	// AnnoNodeDown on a node stands for a kubelet that stopped posting status: kwok's node stages
	// stay off it and the node-down stage (data/stages/node.yaml) sets its Ready condition Unknown,
	// "NodeStatusUnknown", as kube-controller-manager's node lifecycle controller does, and keeps it
	// so until the annotation is removed (kwok's node-initialize then makes it Ready again).
	AnnoNodeDown = AnnoPrefix + "node-down"
	// LabelSimulated marks the sandbox's nodes.
	LabelSimulated = AnnoPrefix + "simulated"
)

// Labels the agent reads to tell a pod's job, role and index, for each stack's controllers.
const (
	// training-operator v1 (kubeflow.org/v1 PyTorchJob, MPIJob).
	labelReplicaType  = "training.kubeflow.org/replica-type"
	labelReplicaIndex = "training.kubeflow.org/replica-index"
	labelJobName      = "training.kubeflow.org/job-name"
	// mpi-operator v0.8.0 (kubeflow.org/v2beta1 MPIJob) sets job-name, job-role (launcher or worker)
	// and replica-index, but no replica-type (pkg/controller defaultLabels, newWorker, newLauncherPodTemplate).
	labelJobRole = "training.kubeflow.org/job-role"
	// JobSet v0.12.0 labels the pods of a JobSet (a TrainJob's, for Trainer v2) with its name and the
	// replicated job's name (api/jobset/v1alpha2 JobSetNameKey, ReplicatedJobNameKey); Trainer's
	// runtimes name them "node" and "launcher". A pod's rank within an Indexed Job is its completion index.
	labelJobSetName       = "jobset.sigs.k8s.io/jobset-name"
	labelReplicatedJob    = "jobset.sigs.k8s.io/replicatedjob-name"
	labelJobCompletionIdx = "batch.kubernetes.io/job-completion-index"
)

// podJob returns the job a pod belongs to (as the label key and value that name it), its role in
// lower case and its index, whichever stack's controller made it.
func podJob(p *corev1.Pod) (key, job, role string, index int) {
	key = labelJobName
	if job = p.Labels[labelJobName]; job == "" {
		if job = p.Labels[labelJobSetName]; job != "" {
			key = labelJobSetName
		}
	}
	for _, k := range []string{labelReplicaType, labelJobRole, labelReplicatedJob} {
		if role = strings.ToLower(p.Labels[k]); role != "" {
			break
		}
	}
	idx := p.Labels[labelReplicaIndex]
	if idx == "" {
		idx = p.Labels[labelJobCompletionIdx]
	}
	index, _ = strconv.Atoi(idx)
	return key, job, role, index
}

// RunAgent simulates the container side of the sandbox's pods until ctx ends: for every pod bound
// to a node it picks a rule of the scenario (sample, outcome, timing) and records it in the pod's
// annotations for the kwok stages; once the pod has an IP it renders the sample into a CRI log
// file and creates a kwok Logs object, so `kubectl logs` returns it through the API server.
func RunAgent(ctx context.Context, stateDir string, log io.Writer) error {
	st, err := LoadState(stateDir)
	if err != nil {
		return fmt.Errorf("sandbox agent: %w", err)
	}
	sc, err := LoadScenario(st.Config.Scenario)
	if err != nil {
		return err
	}
	cfg, err := restConfig(Layout{stateDir}.kubeconfigFor("agent"))
	if err != nil {
		return err
	}
	// The agent is the container side of every simulated node's kubelet, and a kubelet's client
	// may send 50 requests a second, bursts of 100 (KubeletConfiguration kubeAPIQPS/kubeAPIBurst
	// defaults, k8s.io/kubernetes v1.37.2 pkg/kubelet/apis/config/v1beta1/defaults.go): so many
	// per node. (kwok, the status side, has no client-side limit at all: sigs.k8s.io/kwok v0.8.0
	// pkg/utils/client/clientset.go uses an always-accepting rate limiter.) With one client at 50
	// a second for 1000 nodes, the agent's 3 requests a pod alone made a 1000-node preflight
	// take a minute (issue 16).
	nodes := max(1, st.Config.Nodes)
	cfg.QPS, cfg.Burst = 50*float32(nodes), 100*nodes
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	k, err := newKube(cfg)
	if err != nil {
		return err
	}
	a := &agent{cs: cs, kube: k, sc: sc, st: st, stateDir: stateDir, dir: Layout{stateDir}.PodLogs(), log: log}
	if fi, err := os.Stat(Layout{stateDir}.State()); err == nil {
		a.stMod = fi.ModTime()
	}
	if err := os.MkdirAll(a.dir, 0o755); err != nil {
		return err
	}
	if st.Config.RealPods {
		a.real = newRealPods(Layout{stateDir}.realPodsDir(), log)
		// After the workers below are done (deferred calls run last in, first out: this one
		// after wg.Wait returned): every real pod is stopped and the bridge removed.
		defer a.real.close()
	}
	inf := coreinformers.NewPodInformer(cs, metav1.NamespaceAll, 10*time.Minute, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	a.lister = corelisters.NewPodLister(inf.GetIndexer())
	q := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[string]())
	enqueue := func(obj any) {
		if key, err := cache.MetaNamespaceKeyFunc(obj); err == nil {
			q.Add(key)
		}
	}
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    enqueue,
		UpdateFunc: func(_, o any) { enqueue(o) },
		// A deleted pod's real process is stopped (sync finds the pod gone).
		DeleteFunc: func(obj any) {
			if key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj); err == nil {
				q.Add(key)
			}
		},
	}); err != nil {
		return err
	}
	go inf.RunWithContext(ctx)
	cache.WaitForCacheSync(ctx.Done(), inf.HasSynced)
	fmt.Fprintf(log, "sandbox agent: scenario %s, watching pods\n", sc.Name)
	go a.watchDownNodes(ctx)
	go func() {
		<-ctx.Done()
		q.ShutDown()
	}()
	// Kubelets work side by side, one per node: so many pods are synced at once (the queue never
	// hands out one key twice at a time).
	var wg sync.WaitGroup
	for range agentWorkers {
		wg.Go(func() {
			for {
				key, quit := q.Get()
				if quit {
					return
				}
				if err := a.sync(ctx, key); err != nil {
					fmt.Fprintf(log, "sandbox agent: %s: %v\n", key, err)
					q.AddRateLimited(key)
				} else {
					q.Forget(key)
				}
				q.Done(key)
			}
		})
	}
	wg.Wait()
	return nil
}

// agentWorkers is how many pods the agent syncs at once.
const agentWorkers = 8

type agent struct {
	// mu guards st, sc, stMod and traffic: several workers sync pods at once.
	mu       sync.Mutex
	cs       kubernetes.Interface
	kube     *kube
	lister   corelisters.PodLister
	sc       *Scenario
	st       *State
	stateDir string
	stMod    time.Time
	dir      string
	log      io.Writer
	// real runs the pods of the real-image table as real processes (Config.RealPods); nil
	// when the mode is off.
	real *realPods
	// traffic is what the simulated collectives sent over each node's RDMA ports: node ->
	// "mlx5_0:1" -> bytes (sent and received alike). The counter probes read it (SampleData.Traffic).
	traffic map[string]map[string]uint64
}

// reload picks up a scenario changed by SetScenario (the state file changed).
func (a *agent) reload() {
	fi, err := os.Stat(Layout{a.stateDir}.State())
	if err != nil || !fi.ModTime().After(a.stMod) {
		return
	}
	st, err := LoadState(a.stateDir)
	if err != nil {
		return
	}
	sc, err := LoadScenario(st.Config.Scenario)
	if err != nil {
		fmt.Fprintf(a.log, "sandbox agent: %v\n", err)
		return
	}
	if sc.Name != a.sc.Name {
		fmt.Fprintf(a.log, "sandbox agent: scenario %s\n", sc.Name)
	}
	a.st, a.sc, a.stMod = st, sc, fi.ModTime()
}

func (a *agent) sync(ctx context.Context, key string) error {
	ns, name, _ := cache.SplitMetaNamespaceKey(key)
	pod, err := a.lister.Pods(ns).Get(name)
	if apierrors.IsNotFound(err) {
		if a.real != nil {
			a.real.stop(key)
		}
		return nil
	}
	if err != nil {
		return err
	}
	if a.real != nil && (pod.DeletionTimestamp != nil || !a.real.startedFor(key, string(pod.UID))) {
		// Deleted, or a new pod under the name of one that ran: its process goes.
		a.real.stop(key)
	}
	if pod.Spec.NodeName == "" || pod.DeletionTimestamp != nil {
		return nil
	}
	ann := pod.Annotations
	if img, ok := a.realImageOf(pod); ok {
		return a.syncReal(ctx, pod, img)
	}
	if _, ok := ann[AnnoStartAfter]; !ok {
		a.mu.Lock()
		a.reload()
		rule := matchRule(a.sc, pod, a.st.Config.Fabric, a.workersReady)
		want := plan(a.sc, rule, pod)
		a.mu.Unlock()
		// Real Multus writes network-status during the pod sandbox's CNI ADD, before the
		// kubelet reports the pod Running (multus-cni pkg/multus/multus.go CmdAdd ends with
		// k8s.SetNetworkStatus, every delegate's result, the cluster network's included);
		// readers (bench rdma's server address, profile detect) may look as soon as the pod
		// runs. So it is written with the plan, before kwok's stages start the pod; the
		// default network's address, which kwok only gives later, is added then (below).
		if st := networkStatus(pod); st != "" && pod.Annotations[annoNetworkStatus] == "" {
			want[annoNetworkStatus] = st
		}
		return a.annotate(ctx, pod, want)
	}
	if _, ok := ann[AnnoLogs]; ok || pod.Status.PodIP == "" {
		return nil
	}
	file, msg := "", ""
	if sample := ann[AnnoSample]; sample != "" {
		var err error
		if file, msg, err = a.writeLogs(ctx, pod, sample); err != nil {
			var te *sampleError
			if !errors.As(err, &te) {
				return err
			}
			// A bad sample name or template: say so once and let the pod go on without logs.
			fmt.Fprintf(a.log, "sandbox agent: %s/%s: %v\n", pod.Namespace, pod.Name, err)
			file = ""
		}
	}
	if file == "" {
		file = "none"
	}
	ann = map[string]string{AnnoLogs: file}
	if st := networkStatus(pod); st != "" && ownNetworkStatus(pod) {
		ann[annoNetworkStatus] = st // now with the pod IP on the default network
	}
	if msg != "" {
		ann[AnnoTerminationMessage] = msg
	}
	return a.annotate(ctx, pod, ann)
}

// syncReal plays pod as a real process: the start stage makes it Running with an IP (its
// readiness and end left to the process), then the process starts at that IP.
func (a *agent) syncReal(ctx context.Context, pod *corev1.Pod, img realImage) error {
	ann := pod.Annotations
	if _, ok := ann[AnnoStartAfter]; !ok {
		// ready-after other than 0s takes the start stage that leaves the pod unready
		// (ain-pod-start-unready); the stages that would make it Ready or end it on a timer
		// skip real pods.
		want := map[string]string{AnnoStartAfter: "0s", AnnoReadyAfter: "real", AnnoReal: "true"}
		if st := networkStatus(pod); st != "" && ann[annoNetworkStatus] == "" {
			want[annoNetworkStatus] = st
		}
		return a.annotate(ctx, pod, want)
	}
	if _, ended := ann[AnnoRealExit]; ended || pod.Status.PodIP == "" || pod.Status.Phase != corev1.PodRunning {
		return nil
	}
	return a.startReal(ctx, pod, img)
}

// plan turns a rule into the annotations the stages read, keeping those already set.
func plan(sc *Scenario, r *Rule, pod *corev1.Pod) map[string]string {
	t := sc.Timing
	outcome, sample, exit := "", "", 0
	if r != nil {
		t = r.Timing.or(sc.Timing)
		outcome, sample, exit = r.Outcome, r.Sample, r.ExitCode
	}
	if outcome == "" {
		switch ownerKind(pod) {
		case "PyTorchJob", "MPIJob", "Job":
			outcome = "Succeeded"
		default:
			outcome = "Running"
		}
	}
	if outcome == "Failed" && exit == 0 {
		exit = 1
	}
	want := map[string]string{
		AnnoStartAfter:    t.StartAfter.String(),
		AnnoReadyAfter:    t.ReadyAfter.String(),
		AnnoCompleteAfter: t.CompleteAfter.String(),
		AnnoOutcome:       outcome,
		AnnoExitCode:      strconv.Itoa(exit),
		AnnoSample:        sample,
	}
	for k := range want {
		if v, ok := pod.Annotations[k]; ok {
			want[k] = v
		}
	}
	return want
}

func (a *agent) annotate(ctx context.Context, pod *corev1.Pod, ann map[string]string) error {
	patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": ann}})
	_, err := a.cs.CoreV1().Pods(pod.Namespace).Patch(ctx, pod.Name, types.MergePatchType, patch, metav1.PatchOptions{FieldManager: "ain-sandbox-agent"})
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

// writeLogs renders the sample for pod into a CRI-format file and points a kwok Logs object at it.
// It returns the file and the first container's termination message.
func (a *agent) writeLogs(ctx context.Context, pod *corev1.Pod, sample string) (file, msg string, err error) {
	a.mu.Lock()
	d := a.sampleData(pod)
	a.mu.Unlock()
	text, err := RenderSample(sample, d)
	if err != nil {
		return "", "", &sampleError{err}
	}
	a.mu.Lock()
	a.account(d, text)
	a.mu.Unlock()
	dir := filepath.Join(a.dir, pod.Namespace+"_"+pod.Name+"_"+string(pod.UID))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", "", err
	}
	if script, ok := runsProbe(pod); ok {
		// The IB port probe runs for real: its script over the node's simulated sysfs tree.
		out, written, err := runProbe(ctx, script, text, dir, pod.Spec.Containers[0].TerminationMessagePath)
		if err != nil {
			return "", "", &sampleError{fmt.Errorf("running the probe over %s: %w", sample, err)}
		}
		text, msg = out, written
	}
	if len(pod.Spec.Containers) > 0 && pod.Annotations[AnnoOutcome] == "Failed" {
		code, _ := strconv.Atoi(pod.Annotations[AnnoExitCode])
		msg = terminationMessage(&pod.Spec.Containers[0], msg, text, code)
	}
	file, err = a.writeLogFile(ctx, pod, text)
	return file, msg, err
}

// writeLogFile writes text as pod's CRI log file and points a kwok Logs object at it, so the
// API server serves it (`kubectl logs`).
func (a *agent) writeLogFile(ctx context.Context, pod *corev1.Pod, text string) (string, error) {
	dir := filepath.Join(a.dir, pod.Namespace+"_"+pod.Name+"_"+string(pod.UID))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	file := filepath.Join(dir, "0.log")
	start := time.Now().UTC()
	if pod.Status.StartTime != nil {
		start = pod.Status.StartTime.UTC()
	}
	if err := os.WriteFile(file, CRILog(text, start), 0o644); err != nil {
		return "", err
	}
	var containers []string
	for _, c := range pod.Spec.Containers {
		containers = append(containers, c.Name)
	}
	logs := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "kwok.x-k8s.io/v1alpha1",
		"kind":       "Logs",
		"metadata": map[string]any{
			"name":      pod.Name,
			"namespace": pod.Namespace,
			"ownerReferences": []any{map[string]any{
				"apiVersion": "v1", "kind": "Pod", "name": pod.Name, "uid": string(pod.UID),
			}},
		},
		"spec": map[string]any{"logs": []any{map[string]any{
			"containers": toAny(containers),
			"logsFile":   file,
			"follow":     false,
		}}},
	}}
	if err := a.kube.apply(ctx, logs); err != nil {
		return "", err
	}
	return file, nil
}

func toAny(ss []string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}

type sampleError struct{ err error }

func (e *sampleError) Error() string { return e.err.Error() }
func (e *sampleError) Unwrap() error { return e.err }

// SampleData is what a sample template sees.
type SampleData struct {
	Pod, Namespace, Node, PodIP, HostIP string
	NodeIndex                           int // N of gpu-node-N
	Job, Role                           string
	Index                               int // replica index
	Rank, WorldSize                     int // from the container env (RANK, WORLD_SIZE), else derived
	Fabric                              string
	Hosts                               []string // the job's worker pod names, sorted (MPI launchers)
	NodesOf                             []string // the job's nodes, one per worker
	Env                                 map[string]string
	GPUs                                int
	PID                                 int // a plausible process id, stable per pod
	Time                                time.Time
	// LinkRate is this node's port rate as sysfs prints it (the scenario's nodes.linkRates, else
	// DefaultLinkRate). PathGbps is the rate in Gb/s of the slower end between this pod's node and
	// the nodes of the other pods of its pair run (perftest server and client): what a two-node
	// test between them can reach.
	LinkRate string
	PathGbps float64
	// Command is the first container's command and args joined by spaces.
	Command string
	// Traffic is what the simulated collectives sent (and received) over this node's RDMA ports
	// so far, by port ("mlx5_0:1"): the counter samples add it to their counters (Counter).
	Traffic map[string]uint64
}

// Counter is the value of an RDMA port counter on this node: a plausible reading since boot
// (different per node) plus what the simulated collectives moved. port_xmit_data and
// port_rcv_data count 4-byte words (kernel Documentation/ABI/stable/sysfs-class-infiniband);
// packets are 4 KiB (the IB MTU); error counters stay 0.
func (d SampleData) Counter(port, name string) uint64 {
	base := uint64(1_000_000_000) + uint64(d.NodeIndex)*7_340_033
	moved := d.Traffic[port]
	switch name {
	case "port_xmit_data", "port_rcv_data":
		return base + moved/4
	case "port_xmit_packets", "port_rcv_packets":
		return base/1024 + moved/4096
	}
	return 0
}

// DefaultLinkRate is every simulated port's rate unless the scenario says otherwise: 4X HDR, the
// fabric the nccl-tests samples' numbers are modelled on.
const DefaultLinkRate = "200 Gb/sec (4X HDR)"

// labelPairRun groups the pods of one probe or pair run (pkg/preflight's LabelProbeRun) and
// labelPairRole marks the server and client of a pair run (LabelPairRole); not imported:
// preflight's tests use the sandbox.
const (
	labelPairRun  = "ain.dev/probe-run"
	labelPairRole = "ain.dev/pair-role"
)

func (a *agent) sampleData(pod *corev1.Pod) SampleData {
	d := SampleData{
		Pod: pod.Name, Namespace: pod.Namespace, Node: pod.Spec.NodeName,
		PodIP: pod.Status.PodIP, HostIP: pod.Status.HostIP,
		Fabric: a.st.Config.Fabric, Env: map[string]string{}, Time: time.Now().UTC(),
	}
	jobKey := ""
	jobKey, d.Job, d.Role, d.Index = podJob(pod)
	d.NodeIndex, _ = strconv.Atoi(strings.TrimPrefix(pod.Spec.NodeName, "gpu-node-"))
	d.Traffic = maps.Clone(a.traffic[pod.Spec.NodeName])
	d.LinkRate = linkRate(a.sc, pod.Spec.NodeName)
	d.PathGbps = rateGbps(d.LinkRate)
	// Only a pair's two pods share a link; a probe run's pods (one per node, 1000 in a large
	// preflight) do not, and looking each one's peers up would cost the agent O(nodes) a pod.
	if run := pod.Labels[labelPairRun]; run != "" && pod.Labels[labelPairRole] != "" {
		peers, _ := a.lister.Pods(pod.Namespace).List(labels.SelectorFromSet(labels.Set{labelPairRun: run}))
		for _, p := range peers {
			if p.Spec.NodeName != "" {
				d.PathGbps = min(d.PathGbps, rateGbps(linkRate(a.sc, p.Spec.NodeName)))
			}
		}
	}
	if len(pod.Spec.Containers) > 0 {
		c := pod.Spec.Containers[0]
		d.Command = strings.Join(append(append([]string{}, c.Command...), c.Args...), " ")
	}
	for _, c := range pod.Spec.Containers {
		for _, e := range c.Env {
			if e.Value != "" {
				d.Env[e.Name] = e.Value
			}
		}
		if q, ok := c.Resources.Limits["nvidia.com/gpu"]; ok {
			d.GPUs += int(q.Value())
		}
	}
	h := 0
	for _, c := range string(pod.UID) {
		h = (h*31 + int(c)) % 90000
	}
	d.PID = 100 + h
	if d.Job != "" {
		sel := labels.SelectorFromSet(labels.Set{jobKey: d.Job})
		pods, _ := a.lister.Pods(pod.Namespace).List(sel)
		type w struct {
			idx        int
			name, node string
		}
		var ws []w
		hasMaster := false
		for _, p := range pods {
			_, _, role, i := podJob(p)
			switch role {
			case "worker", "node": // "node": Trainer v2's replicated job of training nodes
				ws = append(ws, w{i, p.Name, p.Spec.NodeName})
			case "master":
				hasMaster = true
			}
		}
		sort.Slice(ws, func(i, j int) bool { return ws[i].idx < ws[j].idx })
		for _, x := range ws {
			d.Hosts = append(d.Hosts, x.name)
			d.NodesOf = append(d.NodesOf, x.node)
		}
		d.WorldSize = len(ws)
		if hasMaster {
			d.WorldSize++
			if d.Role == "worker" {
				d.Rank = d.Index + 1
			}
		} else {
			d.Rank = d.Index
		}
	}
	if v, err := strconv.Atoi(d.Env["RANK"]); err == nil {
		d.Rank = v
	} else if v, err := strconv.Atoi(d.Env["PET_NODE_RANK"]); err == nil {
		d.Rank = v
	}
	if v, err := strconv.Atoi(d.Env["WORLD_SIZE"]); err == nil {
		d.WorldSize = v
	} else if v, err := strconv.Atoi(d.Env["PET_NNODES"]); err == nil {
		d.WorldSize = v
	}
	if d.WorldSize == 0 {
		d.WorldSize = 1
	}
	if d.GPUs == 0 {
		d.GPUs = 1
	}
	return d
}

// account adds what a simulated nccl-tests allreduce sent to its nodes' RDMA ports, when its
// output says NCCL used IB or RoCE (a socket fallback moves nothing there): per node 2(n-1)/n x
// size for each timed iteration of both the out-of-place and in-place passes, plus the warm-up,
// spread over the devices NCCL's log names.
func (a *agent) account(d SampleData, text string) {
	if !strings.Contains(text, "# Collective test starting") {
		a.accountTraining(d, text)
		return
	}
	if len(d.NodesOf) < 2 {
		return
	}
	runs, err := nccl.ParsePerf(strings.NewReader(text))
	if err != nil || len(runs) == 0 {
		return
	}
	rep, err := nccl.AnalyzeLog(strings.NewReader(text))
	if err != nil || (rep.Transport != nccl.TransportIB && rep.Transport != nccl.TransportRoCE) {
		return
	}
	iters, warm := 20, 5 // nccl-tests' -n and -w defaults
	if m := itersHeader().FindStringSubmatch(text); m != nil {
		warm, _ = strconv.Atoi(m[1])
		iters, _ = strconv.Atoi(m[2])
	}
	n := float64(len(d.NodesOf))
	var sent float64
	for _, row := range runs[len(runs)-1].Rows {
		sent += 2 * (n - 1) / n * float64(row.Size) * float64(2*iters+warm)
	}
	a.addTraffic(d.NodesOf, a.trafficDevices(rep.Devices), sent)
	fmt.Fprintf(a.log, "sandbox agent: %s/%s: all_reduce_perf over %s moved %.0f bytes per node\n", d.Namespace, d.Pod, rep.Transport, sent)
}

// Simulated gradient traffic of one training rank (the qlora samples): the ring allreduce of
// the LoRA adapters' bf16 gradients (41,943,040 trainable parameters, as the samples print, x 2
// bytes) for trainSteps optimizer steps. The number is illustrative: ain's check of a training
// job only asks that every node's HCAs moved.
const (
	trainGradBytes = 41_943_040 * 2
	trainSteps     = 80
)

// accountTraining adds what a training rank of a multi-rank job sent to its own node's RDMA
// ports, when its log says NCCL set up its communicator over IB or RoCE (a socket fallback
// moves nothing there). Each rank's pod accounts its own node.
func (a *agent) accountTraining(d SampleData, text string) {
	if d.WorldSize < 2 || d.Node == "" || !strings.Contains(text, "Init COMPLETE") {
		return
	}
	rep, err := nccl.AnalyzeLog(strings.NewReader(text))
	if err != nil || (rep.Transport != nccl.TransportIB && rep.Transport != nccl.TransportRoCE) {
		return
	}
	n := float64(d.WorldSize)
	sent := 2 * (n - 1) / n * trainGradBytes * trainSteps
	a.addTraffic([]string{d.Node}, a.trafficDevices(rep.Devices), sent)
	fmt.Fprintf(a.log, "sandbox agent: %s/%s: training rank %d/%d over %s moved %.0f bytes on %s\n", d.Namespace, d.Pod, d.Rank, d.WorldSize, rep.Transport, sent, d.Node)
}

// trafficDevices are the ports simulated traffic crosses: the scenario's trafficPort (a
// wrong-HCA scenario), else the devices NCCL's log names, else mlx5_0:1.
func (a *agent) trafficDevices(logged []string) []string {
	switch {
	case a.sc != nil && a.sc.Nodes.TrafficPort != "":
		return []string{a.sc.Nodes.TrafficPort}
	case len(logged) > 0:
		return logged
	}
	return []string{"mlx5_0:1"}
}

// addTraffic spreads sent bytes per node over devs on each of nodes.
func (a *agent) addTraffic(nodes, devs []string, sent float64) {
	if a.traffic == nil {
		a.traffic = map[string]map[string]uint64{}
	}
	for _, node := range nodes {
		if a.traffic[node] == nil {
			a.traffic[node] = map[string]uint64{}
		}
		for _, dev := range devs {
			a.traffic[node][dev] += uint64(sent / float64(len(devs)))
		}
	}
}

var itersHeader = lazyre.New(`warmup iters: (\d+) iters: (\d+)`)

// linkRate is the port rate of a node (gpu-node-N) in scenario sc.
func linkRate(sc *Scenario, node string) string {
	if sc != nil {
		if r, ok := sc.Nodes.LinkRates[strings.TrimPrefix(node, "gpu-node-")]; ok {
			return r
		}
	}
	return DefaultLinkRate
}

// rateGbps reads "200 Gb/sec (4X HDR)" as 200 (0 when it is not a rate).
func rateGbps(rate string) float64 {
	f := strings.Fields(rate)
	if len(f) == 0 {
		return 0
	}
	v, _ := strconv.ParseFloat(f[0], 64)
	return v
}

// ownerKind is the kind of the pod's controller ("none" when it has none).
func ownerKind(pod *corev1.Pod) string {
	for _, o := range pod.OwnerReferences {
		if o.Controller != nil && *o.Controller {
			return o.Kind
		}
	}
	if len(pod.OwnerReferences) > 0 {
		return pod.OwnerReferences[0].Kind
	}
	return "none"
}

// workersReady reports whether every worker of pod's job (role worker or node) is Ready, and
// there is at least one.
func (a *agent) workersReady(pod *corev1.Pod) bool {
	key, job, _, _ := podJob(pod)
	if job == "" {
		return false
	}
	pods, err := a.lister.Pods(pod.Namespace).List(labels.SelectorFromSet(labels.Set{key: job}))
	if err != nil {
		return false
	}
	n := 0
	for _, p := range pods {
		if _, _, role, _ := podJob(p); role != "worker" && role != "node" {
			continue
		}
		n++
		ready := false
		for _, c := range p.Status.Conditions {
			ready = ready || c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue
		}
		if !ready {
			return false
		}
	}
	return n > 0
}

// matchRule returns the first rule of sc that fits pod, or nil. workersReady answers
// Match.WorkersReady (nil: never ready).
func matchRule(sc *Scenario, pod *corev1.Pod, fabric string, workersReady func(*corev1.Pod) bool) *Rule {
	if workersReady == nil {
		workersReady = func(*corev1.Pod) bool { return false }
	}
	for i := range sc.Rules {
		if sc.Rules[i].Match.fits(pod, fabric, workersReady) {
			return &sc.Rules[i]
		}
	}
	return nil
}

func (m Match) fits(pod *corev1.Pod, fabric string, workersReady func(*corev1.Pod) bool) bool {
	if m.Owner != "" && !strings.EqualFold(m.Owner, ownerKind(pod)) {
		return false
	}
	if m.Role != "" {
		if _, _, role, _ := podJob(pod); !strings.EqualFold(m.Role, role) {
			return false
		}
	}
	if m.Node != "" && m.Node != pod.Spec.NodeName {
		return false
	}
	if m.Fabric != "" && m.Fabric != fabric {
		return false
	}
	if m.Command != "" {
		found := false
		for _, c := range append(append([]corev1.Container{}, pod.Spec.InitContainers...), pod.Spec.Containers...) {
			if strings.Contains(strings.Join(append(append([]string{}, c.Command...), c.Args...), " "), m.Command) {
				found = true
			}
		}
		if !found {
			return false
		}
	}
	for k, v := range m.Env {
		got := ""
		for _, c := range pod.Spec.Containers {
			for _, e := range c.Env {
				if e.Name == k && e.Value != "" {
					got = e.Value
				}
			}
		}
		if got != v {
			return false
		}
	}
	hasInit := func(name string) bool {
		for _, c := range pod.Spec.InitContainers {
			if c.Name == name {
				return true
			}
		}
		return false
	}
	if m.InitContainer != "" && !hasInit(m.InitContainer) {
		return false
	}
	if m.NoInitContainer != "" && hasInit(m.NoInitContainer) {
		return false
	}
	for k, v := range m.Labels {
		if pod.Labels[k] != v {
			return false
		}
	}
	for k, v := range m.Annotations {
		if pod.Annotations[k] != v {
			return false
		}
	}
	if m.WorkersReady != nil && workersReady(pod) != *m.WorkersReady {
		return false
	}
	return true
}

// RenderSample renders the sample file (relative to samples/) for d.
func RenderSample(name string, d SampleData) (string, error) {
	raw, err := samples.ReadFile("samples/" + name)
	if err != nil {
		return "", fmt.Errorf("sample %s: %w", name, err)
	}
	if d.LinkRate == "" {
		d.LinkRate = DefaultLinkRate
	}
	if d.PathGbps == 0 {
		d.PathGbps = rateGbps(d.LinkRate)
	}
	t, err := template.New(name).Funcs(sampleFuncs).Option("missingkey=zero").Parse(string(raw))
	if err != nil {
		return "", fmt.Errorf("sample %s: %w", name, err)
	}
	var b bytes.Buffer
	if err := t.Execute(&b, d); err != nil {
		return "", fmt.Errorf("sample %s: %w", name, err)
	}
	return strings.TrimLeft(b.String(), "\n"), nil
}

var sampleFuncs = template.FuncMap{
	"add": func(a, b int) int { return a + b },
	"mul": func(a, b int) int { return a * b },
	"sub": func(a, b int) int { return a - b },
	"mod": func(a, b int) int {
		if b == 0 {
			return 0
		}
		return a % b
	},
	"seq": func(n int) []int {
		s := make([]int, n)
		for i := range s {
			s[i] = i
		}
		return s
	},
	"index0": func(ss []string, i int) string {
		if i < 0 || i >= len(ss) {
			return ""
		}
		return ss[i]
	},
	"or0": func(a, b string) string {
		if a != "" {
			return a
		}
		return b
	},
	"hex":      func(i int) string { return fmt.Sprintf("%x", i) },
	"contains": strings.Contains,
	"list2":    func(a, b string) []string { return []string{a, b} },
	"atoi": func(s string) int {
		n, _ := strconv.Atoi(s)
		return max(n, 1)
	},
	"arg":         argOf,
	"bwRows":      perftestBWRows,
	"latRows":     perftestLatRows,
	"iperfReport": iperfReport,
}

// CRILog formats text as a container runtime log (one "TIME stdout F line" per line), the
// format kwok serves logs from.
func CRILog(text string, start time.Time) []byte {
	var b bytes.Buffer
	lines := strings.Split(strings.TrimRight(text, "\n"), "\n")
	for i, line := range lines {
		ts := start.Add(time.Duration(i) * time.Millisecond)
		b.WriteString(ts.Format("2006-01-02T15:04:05.000000000Z07:00"))
		b.WriteString(" stdout F ")
		b.WriteString(line)
		b.WriteByte('\n')
	}
	return b.Bytes()
}
