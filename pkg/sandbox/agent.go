package sandbox

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
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
	if st.RealPods() {
		lock, busy, err := inheritedRealPodsLock(stateDir)
		switch {
		case err != nil:
			return err
		case busy != "":
			// Another sandbox took the machine's real-pod network since Up looked.
			a.realOff = busy
			fmt.Fprintf(log, "sandbox agent: real pods off: %s\n", busy)
		default:
			defer lock.Close()
			a.real = newRealPods(Layout{stateDir}.realPodsDir(), log, cs, Layout{stateDir}.kubeconfigFor("coredns"))
			// After the workers below are done (deferred calls run last in, first out: this one
			// after wg.Wait returned): every real pod is stopped and the bridge removed.
			defer a.real.close()
		}
	}
	inf := coreinformers.NewPodInformer(cs, metav1.NamespaceAll, 10*time.Minute, cache.Indexers{
		cache.NamespaceIndex: cache.MetaNamespaceIndexFunc,
		podNodeIndex:         podNodeName,
	})
	a.lister = corelisters.NewPodLister(inf.GetIndexer())
	a.pods = inf.GetIndexer()
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
	// Each node's dcgm-exporter page, reached through its exporter pod's port 9400.
	if _, err := a.startDCGM(ctx); err != nil {
		fmt.Fprintf(log, "sandbox agent: dcgm-exporter pages: %v\n", err)
	}
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
				var later retryAfter
				if err := a.sync(ctx, key); errors.As(err, &later) {
					q.Forget(key)
					q.AddAfter(key, time.Duration(later))
				} else if err != nil {
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
	mu     sync.Mutex
	cs     kubernetes.Interface
	kube   *kube
	lister corelisters.PodLister
	// pods is the lister's store, indexed by node too (podNodeIndex).
	pods     cache.Indexer
	sc       *Scenario
	st       *State
	stateDir string
	stMod    time.Time
	dir      string
	log      io.Writer
	// real runs the pods of the real-image table as real processes (State.RealPods); nil
	// when the mode is off.
	real *realPods
	// realOff is why real is nil although the state asks for real pods.
	realOff string
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
	img, simulated := a.realImageOf(pod)
	if why := ann[AnnoSimulated]; why != "" {
		simulated = why // decided when the pod was planned
	}
	var p *realPlan // the scenario's plan, made once, when the pod is first seen
	if _, real := ann[AnnoReal]; simulated == "" && !real {
		p, simulated = a.planRealPod(pod)
	}
	if simulated == "" {
		return a.syncReal(ctx, pod, img, p)
	}
	if _, ok := ann[AnnoStartAfter]; !ok {
		a.mu.Lock()
		a.reload()
		rule := matchRule(a.sc, pod, a.st.Config.Fabric, a.workersReady)
		want := plan(a.sc, rule, pod)
		a.mu.Unlock()
		want[AnnoSimulated] = simulated
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
	// Recorded when it runs (has an IP), as a real pod's process starts then: a pod whose
	// template carries the plan's annotations is counted too.
	ann = map[string]string{AnnoLogs: file, AnnoSimulated: simulated}
	if st := networkStatus(pod); st != "" && ownNetworkStatus(pod) {
		ann[annoNetworkStatus] = st // now with the pod IP on the default network
	}
	if msg != "" {
		ann[AnnoTerminationMessage] = msg
	}
	if err := a.annotate(ctx, pod, ann); err != nil {
		return err
	}
	a.recordPodRun(pod, false, simulated)
	return nil
}

// retryAfter is a sync that is not due yet: the pod's key is queued again after it.
type retryAfter time.Duration

func (r retryAfter) Error() string { return "due in " + time.Duration(r).String() }

// syncReal plays pod as a real process: the start stage makes it Running with an IP (its
// readiness and end left to the process), then the process starts at that IP. The scenario's
// rule for the pod becomes its plan (realPlan).
func (a *agent) syncReal(ctx context.Context, pod *corev1.Pod, img realImage, p *realPlan) error {
	ann := pod.Annotations
	if p != nil { // not planned yet
		// ready-after other than 0s takes the start stage that leaves the pod unready
		// (ain-pod-start-unready); the stages that would make it Ready or end it on a timer
		// skip real pods.
		want := map[string]string{AnnoStartAfter: p.StartAfter.String(), AnnoReadyAfter: "real", AnnoReal: "true",
			AnnoRealPlan: p.annotation()}
		if v, ok := ann[AnnoStartAfter]; ok {
			want[AnnoStartAfter] = v
		}
		if st := networkStatus(pod); st != "" && ann[annoNetworkStatus] == "" {
			want[annoNetworkStatus] = st
		}
		// Recorded once its program starts (startReal).
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
	} else if script, ok := runsStorageProbe(pod); ok {
		// So does the storage probe, over the shared claim's simulated content (agent_storage.go).
		out, written, err := runStorageProbe(ctx, pod, script, text, dir)
		if err != nil {
			return "", "", &sampleError{fmt.Errorf("running the storage probe over %s: %w", sample, err)}
		}
		text, msg = out, written
	} else if script, ok := runsImageProbe(pod); ok {
		// And the image probe, over the image's simulated content (agent_image.go).
		out, written, err := runImageProbe(ctx, pod, script, text, dir)
		if err != nil {
			return "", "", &sampleError{fmt.Errorf("running the image probe over %s: %w", sample, err)}
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
	file, err := a.logFile(pod)
	if err != nil {
		return "", err
	}
	start := time.Now().UTC()
	if pod.Status.StartTime != nil {
		start = pod.Status.StartTime.UTC()
	}
	// The same log again (a retry after a failed annotation) is not rewritten: the rename is a
	// new file to a follower, which would read it all again.
	data := CRILog(text, start)
	if old, err := os.ReadFile(file); err != nil || !bytes.Equal(old, data) {
		if err := writeFileAtomic(file, data, 0o644); err != nil {
			return "", err
		}
	}
	return file, a.serveLog(ctx, pod, file)
}

// logFile is where pod's CRI log file goes (its folder made): <ns>_<name>_<uid>/0.log, a
// kubelet's /var/log/pods/<ns>_<name>_<uid>/<container>/0.log without the container's folder
// (the Logs object names the containers).
func (a *agent) logFile(pod *corev1.Pod) (string, error) {
	dir := filepath.Join(a.dir, pod.Namespace+"_"+pod.Name+"_"+string(pod.UID))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	return filepath.Join(dir, "0.log"), nil
}

// serveLog points a kwok Logs object at pod's log file, so the API server serves it.
func (a *agent) serveLog(ctx context.Context, pod *corev1.Pod, file string) error {
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
	return a.kube.apply(ctx, logs)
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

// podNodeIndex indexes the agent's pods by the node they are bound to: what runs on one node is
// looked up on every change of that node's state (nodedown.go, the dcgm-exporter pages), which at
// 1000 nodes must not scan every pod of the cluster each time.
const podNodeIndex = "node"

func podNodeName(obj any) ([]string, error) {
	if p, ok := obj.(*corev1.Pod); ok && p.Spec.NodeName != "" {
		return []string{p.Spec.NodeName}, nil
	}
	return nil, nil
}

// podsOn returns the pods bound to node.
func (a *agent) podsOn(node string) []*corev1.Pod {
	objs, _ := a.pods.ByIndex(podNodeIndex, node)
	pods := make([]*corev1.Pod, 0, len(objs))
	for _, o := range objs {
		if p, ok := o.(*corev1.Pod); ok {
			pods = append(pods, p)
		}
	}
	return pods
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
			if strings.Contains(commandLine(c), m.Command) {
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
