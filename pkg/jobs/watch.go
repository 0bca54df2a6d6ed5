package jobs

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	kubeflowv1 "github.com/kubeflow/training-operator/pkg/apis/kubeflow.org/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/dynamic/dynamicinformer"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/ain-hpc/ain/pkg/lazyre"
)

// PodInfo is one replica pod as ain shows it.
type PodInfo struct {
	Name     string    `json:"name"`
	Replica  string    `json:"replica"` // master, worker, launcher
	Index    int       `json:"index"`
	Phase    string    `json:"phase"`
	Ready    bool      `json:"ready"`
	Node     string    `json:"node,omitempty"`
	Restarts int32     `json:"restarts"`
	Started  time.Time `json:"started,omitempty"`
	// State is a short word for the container state: Waiting:REASON, Running, Terminated:REASON.
	State    string `json:"state,omitempty"`
	ExitCode *int32 `json:"exitCode,omitempty"`
	// Why explains a pod that is not progressing (unschedulable, image pull, crash loop, OOM).
	Why string `json:"why,omitempty"`
}

// Snapshot is a job's state at one moment.
type Snapshot struct {
	Kind      string    `json:"kind"`
	Name      string    `json:"name"`
	Namespace string    `json:"namespace"`
	Phase     string    `json:"phase"`
	Message   string    `json:"message,omitempty"`
	Created   time.Time `json:"created"`
	Started   time.Time `json:"started,omitempty"`
	Finished  time.Time `json:"finished,omitempty"`
	Pods      []PodInfo `json:"pods"`
	// Waiting explains an MPI launcher the controller holds back until every worker is Ready
	// (also in Message).
	Waiting    string                    `json:"waiting,omitempty"`
	Conditions []kubeflowv1.JobCondition `json:"conditions,omitempty"`
}

// Key is a compact summary used to print one line per state change.
func (s *Snapshot) Key() string {
	var b strings.Builder
	b.WriteString(s.Phase)
	b.WriteString("|" + s.Message)
	for _, p := range s.Pods {
		fmt.Fprintf(&b, "|%s:%s:%s:%v:%d:%s:%s", p.Name, p.Phase, p.Node, p.Ready, p.Restarts, p.State, p.Why)
	}
	return b.String()
}

// SnapshotOf builds a snapshot from a job and its pods; explain may add reasons to pods.
func SnapshotOf(job *unstructured.Unstructured, pods []corev1.Pod) Snapshot {
	st := StateOf(job)
	s := Snapshot{
		Kind: job.GetKind(), Name: job.GetName(), Namespace: job.GetNamespace(),
		Phase: st.Phase, Message: st.Message, Created: job.GetCreationTimestamp().Time, Conditions: st.Conditions,
		Started: st.Started, Finished: st.Finished,
	}
	if Terminal(s.Phase) && s.Finished.IsZero() {
		for _, c := range st.Conditions {
			if string(c.Type) == s.Phase {
				s.Finished = c.LastTransitionTime.Time
			}
		}
	}
	SortPods(pods)
	if w := launcherWait(job, pods); w != "" && !Terminal(s.Phase) {
		s.Waiting = w
		// The operator's own message then is only "MPIJob x is created.": the wait says more.
		if s.Message != "" && s.Phase != PhaseCreated && s.Phase != PhasePending {
			w = s.Message + "; " + w
		}
		s.Message = w
	}
	for i := range pods {
		s.Pods = append(s.Pods, podInfo(&pods[i]))
		// A TrainJob has no start time of its own: its first pod's start is the job's.
		if t := s.Pods[i].Started; st.Started.IsZero() && !t.IsZero() && (s.Started.IsZero() || t.Before(s.Started)) {
			s.Started = t
		}
	}
	return s
}

// launcherWait explains an MPI job whose launcher is held back until its workers are Ready
// (v2beta1 launcherCreationPolicy WaitForWorkersReady, a TrainJob's launcher dependsOn node
// Ready): "" when there is a launcher pod, or no worker yet, or the API does not hold it.
func launcherWait(job *unstructured.Unstructured, pods []corev1.Pod) string {
	holds := false
	switch job.GetKind() {
	case "MPIJob":
		p, _, _ := unstructured.NestedString(job.Object, "spec", "launcherCreationPolicy")
		holds = p == "WaitForWorkersReady"
	case TrainJobKind:
		// ain's MPI runtime (the recipe kind is on the TrainJob); a torch TrainJob has no launcher.
		holds = job.GetLabels()[LabelKind] == "MPIJob"
	}
	if !holds {
		return ""
	}
	workers, ready := 0, 0
	for i := range pods {
		switch Replica(&pods[i]) {
		case "launcher":
			return ""
		case "worker":
		case TrainerNodeJob:
			if job.GetKind() != TrainJobKind {
				continue
			}
		default:
			continue
		}
		workers++
		for _, c := range pods[i].Status.Conditions {
			if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue {
				ready++
			}
		}
	}
	if workers == 0 || ready == workers {
		return ""
	}
	if job.GetKind() == TrainJobKind {
		return fmt.Sprintf("%d/%d node pod(s) Ready; an MPI launcher starts only when every node is Ready (JobSet dependsOn)", ready, workers)
	}
	return fmt.Sprintf("%d/%d worker(s) Ready; the mpi-operator creates the launcher when every worker is Ready (launcherCreationPolicy: WaitForWorkersReady)", ready, workers)
}

// StuckError: a job that can never start, though its controller keeps it alive.
type StuckError struct {
	Kind, Namespace, Name string
	Why                   string
}

func (e *StuckError) Error() string {
	return fmt.Sprintf("%s %s/%s can never start: %s", e.Kind, e.Namespace, e.Name, e.Why)
}

// stuckWorker explains a v2beta1 MPIJob (launcherCreationPolicy WaitForWorkersReady) whose
// worker failed before the launcher was created: the mpi-operator v0.8.0 creates a worker pod
// only when it does not exist (mpi_job_controller.go getOrCreateWorker) and fails an MPIJob for
// a worker's failure only when the worker was evicted (updateMPIJobStatus), while the launcher
// waits for every worker to be Ready: the job would wait for ever. "" when that is not the case.
// A TrainJob's node Job fails by itself (backoffLimit), failing the JobSet and the TrainJob.
func stuckWorker(job *unstructured.Unstructured, pods []corev1.Pod) string {
	if job.GetKind() != "MPIJob" {
		return ""
	}
	if p, _, _ := unstructured.NestedString(job.Object, "spec", "launcherCreationPolicy"); p != "WaitForWorkersReady" {
		return ""
	}
	var failed *corev1.Pod
	for i := range pods {
		switch Replica(&pods[i]) {
		case RoleLauncher:
			return "" // started: the launcher's own outcome ends the job
		case "worker":
			if pods[i].Status.Phase == corev1.PodFailed && failed == nil {
				failed = &pods[i]
			}
		}
	}
	if failed == nil {
		return ""
	}
	why := string(failed.Status.Phase)
	if failed.Status.Reason != "" {
		why = failed.Status.Reason
	}
	for _, cs := range failed.Status.ContainerStatuses {
		if t := cs.State.Terminated; t != nil {
			why = fmt.Sprintf("%s, exit code %d", orStr(t.Reason, "Error"), t.ExitCode)
			if m := firstLine(t.Message); m != "" {
				why += ": " + m
			}
		}
	}
	return fmt.Sprintf("worker pod %s failed (%s) before every worker was Ready; the mpi-operator does not recreate a failed worker pod nor fail the MPIJob for it, and the launcher is created only once every worker is Ready (launcherCreationPolicy WaitForWorkersReady)",
		failed.Name, why)
}

// ControllerStalledError: the pod that decides a job's outcome (the launcher, else every pod)
// has finished, yet the job's status has not changed for StaleAfter: the controller that should
// record the end is not running or not reconciling the job. Outcome is that pod's phase.
type ControllerStalledError struct {
	Kind, Namespace, Name string
	Controller            string
	Outcome               string // Succeeded or Failed: what the pods say
	For                   time.Duration
}

func (e *ControllerStalledError) Error() string {
	return fmt.Sprintf("%s %s/%s still says it runs, but its pods ended %s %s ago and the job's status has not changed since: %s is not updating it (not running, or not reconciling this job)",
		e.Kind, e.Namespace, e.Name, e.Outcome, e.For.Round(time.Second), e.Controller)
}

// StaleAfter is how long a job may keep a non-final status once its pods ended before Watch
// says its controller is not updating it; a running controller records the end within seconds.
const StaleAfter = 90 * time.Second

// podsOutcome is the phase of the pod that decides the job (the current launcher, else every
// pod: Failed if one failed), "" while it runs or when there are no pods.
func podsOutcome(pods []corev1.Pod) string {
	if l, ok := CurrentLauncher(pods); ok {
		if l.Status.Phase == corev1.PodSucceeded || l.Status.Phase == corev1.PodFailed {
			return string(l.Status.Phase)
		}
		return ""
	}
	out := ""
	for _, p := range pods {
		switch p.Status.Phase {
		case corev1.PodFailed:
			out = string(corev1.PodFailed)
		case corev1.PodSucceeded:
			if out == "" {
				out = string(corev1.PodSucceeded)
			}
		default:
			return ""
		}
	}
	return out
}

// Controller names the controller that records a job's end on api, for messages.
func (a API) Controller() string {
	switch a {
	case APITrainer:
		return "the Kubeflow Trainer's controller (with JobSet's)"
	case APIMPIOperator:
		return "the mpi-operator"
	case APITrainingOperator:
		return "the training-operator"
	}
	return "its controller"
}

func orStr(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

func podInfo(p *corev1.Pod) PodInfo {
	pi := PodInfo{
		Name: p.Name, Replica: Replica(p), Index: ReplicaIndex(p),
		Phase: string(p.Status.Phase), Node: p.Spec.NodeName,
	}
	if p.Status.StartTime != nil {
		pi.Started = p.Status.StartTime.Time
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue {
			pi.Ready = true
		}
	}
	if len(p.Status.ContainerStatuses) > 0 {
		cs := p.Status.ContainerStatuses[0]
		pi.Restarts = cs.RestartCount
		switch {
		case cs.State.Waiting != nil:
			pi.State = "Waiting:" + cs.State.Waiting.Reason
		case cs.State.Running != nil:
			pi.State = "Running"
		case cs.State.Terminated != nil:
			pi.State = "Terminated:" + cs.State.Terminated.Reason
			code := cs.State.Terminated.ExitCode
			pi.ExitCode = &code
		}
	}
	pi.Why = ExplainPod(p)
	return pi
}

// WatchOptions tune Watch.
type WatchOptions struct {
	// OnChange is called with every new snapshot (from the watch goroutine, serialised).
	OnChange func(Snapshot)
	// Explain adds cluster context (node allocatable) to an unschedulable pod's reason.
	Explain func(ctx context.Context, pod *corev1.Pod) string
	// OnPodFinished is called once per pod when it reaches Succeeded or Failed, so its log can
	// be read before the operator or a clean-pod policy deletes it.
	OnPodFinished func(pod corev1.Pod)
	// StaleAfter overrides StaleAfter (tests).
	StaleAfter time.Duration
}

// Watch follows a job and its pods with informers (list once, then watch; the reflector
// re-lists and resumes by itself after a dropped connection or an API server restart) until the
// job ends, is deleted, or ctx is done. It returns the last snapshot.
func (c *Cluster) Watch(ctx context.Context, b Backend, name string, o WatchOptions) (Snapshot, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	w := &watcher{c: c, b: b, name: name, o: o, kind: b.Kind(), changed: make(chan struct{}, 1),
		explained: map[string]explanation{}, finished: map[string]bool{}}
	stop, err := w.startInformers(ctx)
	if err != nil {
		return Snapshot{}, err
	}
	defer func() {
		cancel() // stop the informers first, then wait for them
		stop()
	}()
	if !cache.WaitForCacheSync(ctx.Done(), w.jobInf.HasSynced, w.podInf.HasSynced) {
		return Snapshot{}, ctx.Err()
	}
	w.poke() // evaluate once after the initial list: a finished job sends no further event

	// A job that has no pods a while after creation is usually one the operator cannot make
	// pods for (invalid pod spec, quota, missing service account): its reason is only in the
	// job's events. Look at them then, at most every stuckCheck, and only while stuck.
	stuck := time.NewTicker(stuckCheck)
	defer stuck.Stop()
	defer func() {
		if w.recheck != nil {
			w.recheck.Stop()
		}
		if w.reexplain != nil {
			w.reexplain.Stop()
		}
	}()
	for {
		select {
		case <-ctx.Done():
			return w.last, ctx.Err()
		case <-w.changed:
		case <-stuck.C:
			if l := w.last; !l.Created.IsZero() && len(l.Pods) == 0 && !Terminal(l.Phase) && time.Since(l.Created) > stuckCheck {
				w.stuckWhy = c.jobWarning(ctx, w.kind, name)
			}
		}
		if snap, done, err := w.step(ctx); done || err != nil {
			return snap, err
		}
	}
}

// watcher is one Watch: its informers and what it remembers between looks.
type watcher struct {
	c              *Cluster
	b              Backend
	name, kind     string
	o              WatchOptions
	jobInf, podInf cache.SharedIndexInformer
	changed        chan struct{}

	last     Snapshot
	lastKey  string
	seen     bool // the job was there once
	stuckWhy string
	// Since when the decisive pods have ended while the job's resourceVersion stayed put.
	endedAt   time.Time
	endedRV   string
	recheck   *time.Timer
	reexplain *time.Timer            // pending look at a pod with no explanation yet
	explained map[string]explanation // pod/reason -> enriched explanation
	finished  map[string]bool
}

func (w *watcher) poke() {
	select {
	case w.changed <- struct{}{}:
	default:
	}
}

// startInformers starts the job's and its pods' informers, each poking w on any event; stop
// waits for them once ctx is cancelled.
func (w *watcher) startInformers(ctx context.Context) (stop func(), err error) {
	c, name := w.c, w.name
	byNamespace := cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc}
	w.jobInf = dynamicinformer.NewFilteredDynamicInformer(c.Dynamic, w.b.GVR(), c.Namespace, 0, byNamespace, func(lo *metav1.ListOptions) {
		lo.FieldSelector = fields.OneTermEqualSelector("metadata.name", name).String()
	}).Informer()
	w.podInf = coreinformers.NewFilteredPodInformer(c.Kube, c.Namespace, 0, byNamespace, func(lo *metav1.ListOptions) {
		lo.LabelSelector = w.b.PodSelector(name)
	})
	h := cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { w.poke() },
		UpdateFunc: func(any, any) { w.poke() },
		DeleteFunc: func(any) { w.poke() },
	}
	if _, err := w.jobInf.AddEventHandler(h); err != nil {
		return nil, err
	}
	if _, err := w.podInf.AddEventHandler(h); err != nil {
		return nil, err
	}
	var running sync.WaitGroup
	running.Go(func() { w.jobInf.RunWithContext(ctx) })
	running.Go(func() { w.podInf.RunWithContext(ctx) })
	return running.Wait, nil
}

// step looks at the job and its pods once: done when the job ended or was deleted, an error
// when it is stuck or its controller stopped updating it.
func (w *watcher) step(ctx context.Context) (Snapshot, bool, error) {
	if !w.jobInf.HasSynced() || !w.podInf.HasSynced() {
		return w.last, false, nil
	}
	obj, exists, err := w.jobInf.GetStore().GetByKey(w.c.Namespace + "/" + w.name)
	if err != nil {
		return w.last, true, err
	}
	if !exists {
		if !w.seen {
			return w.last, false, nil
		}
		w.last.Phase = PhaseDeleted
		w.last.Message = "the job was deleted while ain was watching it"
		if w.o.OnChange != nil {
			w.o.OnChange(w.last)
		}
		return w.last, true, nil
	}
	w.seen = true
	job := obj.(*unstructured.Unstructured)
	pods := w.pods()
	snap := SnapshotOf(job, pods)
	if Terminal(snap.Phase) {
		if listed, ok := w.listPods(ctx); ok {
			// The job's and the pods' events come on two watches: the job's terminal
			// condition can arrive before a pod's last update (its node, the launcher's exit
			// code). The snapshot ain keeps takes each pod from one read after it; a pod
			// already deleted there (cleanPodPolicy Running deletes the workers right after
			// the job ends) keeps its last state from the watch, where it ran.
			pods = mergePods(listed, pods)
			snap = SnapshotOf(job, pods)
		}
	} else if len(snap.Pods) == 0 && w.stuckWhy != "" {
		snap.Message = "no pods: " + w.stuckWhy
	}
	w.explain(ctx, &snap, pods)
	w.last = snap
	if k := snap.Key(); k != w.lastKey {
		w.lastKey = k
		if w.o.OnChange != nil {
			w.o.OnChange(snap)
		}
	}
	if Terminal(snap.Phase) {
		return snap, true, nil
	}
	if why := stuckWorker(job, pods); why != "" {
		return snap, true, &StuckError{Kind: w.kind, Namespace: w.c.Namespace, Name: w.name, Why: why}
	}
	if err := w.stalled(job, pods); err != nil {
		return snap, true, err
	}
	return snap, false, nil
}

// listPods reads the job's pods from the API server (not the informer's cache), telling
// OnPodFinished of each that ended; false where the read fails (the informer's view stands).
func (w *watcher) listPods(ctx context.Context) ([]corev1.Pod, bool) {
	lctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	l, err := w.c.Kube.CoreV1().Pods(w.c.Namespace).List(lctx, metav1.ListOptions{LabelSelector: w.b.PodSelector(w.name)})
	if err != nil {
		return nil, false
	}
	w.notifyFinished(l.Items)
	return l.Items, true
}

func (w *watcher) notifyFinished(pods []corev1.Pod) {
	for _, pod := range pods {
		if (pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed) && !w.finished[pod.Name] {
			w.finished[pod.Name] = true
			if w.o.OnPodFinished != nil {
				w.o.OnPodFinished(pod)
			}
		}
	}
}

// mergePods is fresh with the pods of older that fresh lacks.
func mergePods(fresh, older []corev1.Pod) []corev1.Pod {
	have := make(map[string]bool, len(fresh))
	for _, p := range fresh {
		have[p.Name] = true
	}
	out := append([]corev1.Pod(nil), fresh...)
	for _, p := range older {
		if !have[p.Name] {
			out = append(out, p)
		}
	}
	return out
}

// pods lists the job's pods, telling OnPodFinished of each once it has ended.
func (w *watcher) pods() []corev1.Pod {
	var pods []corev1.Pod
	for _, p := range w.podInf.GetStore().List() {
		pods = append(pods, *p.(*corev1.Pod))
	}
	w.notifyFinished(pods)
	return pods
}

// explanation is Explain's answer for a pod and reason, and when it was asked.
type explanation struct {
	text string
	at   time.Time
}

// lookAgainIn evaluates the job again after d (one timer, armed again by each call).
func (w *watcher) lookAgainIn(d time.Duration) {
	if w.reexplain == nil {
		w.reexplain = time.AfterFunc(d, w.poke)
	} else {
		w.reexplain.Reset(d)
	}
}

// explainAgain is how soon a pod with no explanation yet is asked about again.
const explainAgain = 5 * time.Second

// explain gives the pods that are not progressing Explain's cluster context, once per reason.
func (w *watcher) explain(ctx context.Context, snap *Snapshot, pods []corev1.Pod) {
	if w.o.Explain == nil {
		return
	}
	for i := range snap.Pods {
		pi := &snap.Pods[i]
		if !NeedsExplain(pi) {
			continue
		}
		// The Ready condition's transition is part of the key: the node lifecycle
		// controller flips it when the pod's node goes NotReady (MarkPodsNotReady).
		key := pi.Name + "/" + pi.Why + "/" + readySince(pods, pi.Name)
		e, ok := w.explained[key]
		// An explanation is kept; none is asked again a little later: the pod can go not Ready
		// (the node lifecycle controller, or the kubelet's probe) before its node's condition
		// says why.
		if !ok || e.text == "" && time.Since(e.at) >= explainAgain {
			e = explanation{at: time.Now()}
			for j := range pods {
				if pods[j].Name == pi.Name {
					e.text = w.o.Explain(ctx, &pods[j])
				}
			}
			w.explained[key] = e
			if e.text == "" {
				w.lookAgainIn(explainAgain)
			}
		}
		if e.text != "" {
			pi.Why = e.text
		}
	}
}

// stalled is a ControllerStalledError once the decisive pods have ended and the job's
// resourceVersion has not moved for staleAfter; until then it arranges to look again.
func (w *watcher) stalled(job *unstructured.Unstructured, pods []corev1.Pod) error {
	switch outcome := podsOutcome(pods); {
	case outcome == "":
		w.endedAt = time.Time{}
	case w.endedAt.IsZero() || job.GetResourceVersion() != w.endedRV:
		w.endedAt, w.endedRV = time.Now(), job.GetResourceVersion()
		if w.recheck != nil {
			w.recheck.Stop()
		}
		w.recheck = time.AfterFunc(w.o.staleAfter(), w.poke) // no event may come: look again then
	case time.Since(w.endedAt) >= w.o.staleAfter():
		return &ControllerStalledError{Kind: w.kind, Namespace: w.c.Namespace, Name: w.name,
			Controller: w.b.API().Controller(), Outcome: outcome, For: time.Since(w.endedAt)}
	}
	return nil
}

func (o WatchOptions) staleAfter() time.Duration {
	if o.StaleAfter > 0 {
		return o.StaleAfter
	}
	return StaleAfter
}

// NeedsExplain says whether a pod's reason needs cluster context (Cluster.ExplainPending):
// an unschedulable pod (node allocatable), or a Running pod that is not Ready with no reason of
// its own, whose node may be NotReady (it then runs nothing, and nothing else says so).
func NeedsExplain(pi *PodInfo) bool {
	if strings.HasPrefix(pi.Why, "unschedulable") {
		return true
	}
	return pi.Why == "" && pi.Node != "" && pi.Phase == string(corev1.PodRunning) && !pi.Ready
}

// readySince is the last transition time of the named pod's Ready condition ("" when none).
func readySince(pods []corev1.Pod, name string) string {
	for i := range pods {
		if pods[i].Name != name {
			continue
		}
		for _, c := range pods[i].Status.Conditions {
			if c.Type == corev1.PodReady {
				return c.LastTransitionTime.UTC().Format(time.RFC3339Nano)
			}
		}
	}
	return ""
}

// stuckCheck is how long a job may have no pods before ain looks at its events.
const stuckCheck = 15 * time.Second

// jobWarning returns the latest Warning event of the job (e.g. the operator's FailedCreatePod).
// A TrainJob's problems may be reported on its JobSet (same name), so that kind counts too.
func (c *Cluster) jobWarning(ctx context.Context, kind, name string) string {
	sel := fields.Set{"involvedObject.name": name, "type": corev1.EventTypeWarning}
	if kind != TrainJobKind {
		sel["involvedObject.kind"] = kind
	}
	l, err := c.Kube.CoreV1().Events(c.Namespace).List(ctx, metav1.ListOptions{FieldSelector: sel.String()})
	if err != nil || len(l.Items) == 0 {
		return ""
	}
	ev := l.Items[0]
	for _, e := range l.Items[1:] {
		if e.LastTimestamp.After(ev.LastTimestamp.Time) {
			ev = e
		}
	}
	return fmt.Sprintf("%s: %s", ev.Reason, firstLine(ev.Message))
}

// ExplainPod says in a sentence why a pod is not progressing, from its own status only
// ("" when nothing is wrong).
func ExplainPod(p *corev1.Pod) string {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable {
			return "unschedulable: " + c.Message
		}
	}
	// DisruptionTarget (k8s.io/api core/v1 PodConditionType) is set just before a pod is
	// deleted by the taint manager (its node NotReady/unreachable past the toleration), an
	// eviction, a preemption or the kubelet: the pod is going away, not merely slow.
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.DisruptionTarget && c.Status == corev1.ConditionTrue {
			s := "being terminated (" + c.Reason + ")"
			// "DeletionByTaintManager" (also "DeletionByPodGC" for a node that is gone) has no
			// constant in k8s.io/api: it is k8s.io/kubernetes pkg/apis/core's, set by
			// pkg/controller/tainteviction before it deletes the pod.
			if (c.Reason == "DeletionByTaintManager" || c.Reason == "DeletionByPodGC") && p.Spec.NodeName != "" {
				s += ": node " + p.Spec.NodeName + " is NotReady or unreachable past the pod's toleration"
			}
			if m := firstLine(c.Message); m != "" {
				s += ": " + m
			}
			return s
		}
	}
	for _, cs := range append(append([]corev1.ContainerStatus{}, p.Status.InitContainerStatuses...), p.Status.ContainerStatuses...) {
		if w := cs.State.Waiting; w != nil {
			switch w.Reason {
			case "ErrImagePull", "ImagePullBackOff", "InvalidImageName":
				return fmt.Sprintf("image pull failing for %s: %s", cs.Image, firstLine(w.Message))
			case "CrashLoopBackOff":
				s := fmt.Sprintf("crash-looping (%d restarts)", cs.RestartCount)
				if t := cs.LastTerminationState.Terminated; t != nil {
					s += fmt.Sprintf(": last exit code %d (%s)", t.ExitCode, t.Reason)
				}
				return s
			case "CreateContainerConfigError", "CreateContainerError", "RunContainerError":
				return fmt.Sprintf("%s: %s", w.Reason, firstLine(w.Message))
			}
		}
		if t := cs.State.Terminated; t != nil && t.Reason == "OOMKilled" {
			return "OOMKilled: the container exceeded its memory limit (a memory-backed /dev/shm counts too): raise spec.resources.memory or lower the batch size"
		}
		if t := cs.LastTerminationState.Terminated; t != nil && t.Reason == "OOMKilled" {
			return "OOMKilled earlier: the container exceeded its memory limit (a memory-backed /dev/shm counts too)"
		}
	}
	return ""
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	return s
}

// ExplainUnschedulable turns the scheduler's message plus node allocatable into a sentence, e.g.
// "0/3 nodes have 1 free rdma/rdma_shared_device_a (2 nodes have 0 allocatable: is the RDMA
// shared device plugin running?)".
func ExplainUnschedulable(pod *corev1.Pod, schedulerMsg string, nodes []corev1.Node) string {
	if len(pod.Spec.Containers) == 0 {
		return "unschedulable: " + schedulerMsg
	}
	req := corev1.ResourceList{}
	for _, c := range pod.Spec.Containers {
		for k, v := range c.Resources.Requests {
			q := req[k]
			q.Add(v)
			req[k] = q
		}
	}
	names := make([]string, 0, len(req))
	for k := range req {
		if strings.Contains(string(k), "/") { // extended resources: GPUs, RDMA
			names = append(names, string(k))
		}
	}
	sort.Strings(names)
	var parts []string
	for _, n := range names {
		want := req[corev1.ResourceName(n)]
		none, enough := 0, 0
		for _, node := range nodes {
			a, ok := node.Status.Allocatable[corev1.ResourceName(n)]
			switch {
			case !ok || a.IsZero():
				none++
			case a.Cmp(want) >= 0:
				enough++
			}
		}
		insufficient := strings.Contains(schedulerMsg, "Insufficient "+n)
		if !insufficient && none == 0 {
			continue
		}
		s := fmt.Sprintf("%d/%d nodes can hold %s %s", enough, len(nodes), want.String(), n)
		if insufficient {
			s = fmt.Sprintf("0/%d nodes have %s free %s", len(nodes), want.String(), n)
		}
		if none > 0 {
			s += fmt.Sprintf(" (%d node(s) have 0 allocatable: %s)", none, hintFor(n))
		} else if insufficient {
			s += " (all allocated to other pods: wait, or delete finished jobs with `ain delete`)"
		}
		parts = append(parts, s)
	}
	if m := missingPVCRE().FindStringSubmatch(schedulerMsg); m != nil {
		ns := pod.Namespace
		if ns == "" {
			ns = "the job's namespace"
		}
		parts = append(parts, fmt.Sprintf("the PersistentVolumeClaim %q does not exist in %s: create it (the shared model/data disk) or fix spec.volumes[].claimName", m[1], ns))
	}
	if strings.Contains(schedulerMsg, "untolerated taint") {
		parts = append(parts, "some nodes have taints the pod does not tolerate: add tolerations to the profile")
	}
	if strings.Contains(schedulerMsg, "didn't match pod anti-affinity rules") {
		parts = append(parts, "the job's ranks run one per node (required anti-affinity on "+HostnameTopologyKey+"): the nodes that could hold this rank already run one of its ranks, so the job needs more free nodes, or fewer nodes with more GPUs each (spec.nodes, spec.gpusPerNode)")
	}
	if strings.Contains(schedulerMsg, "didn't match Pod's node affinity/selector") {
		parts = append(parts, "the profile's nodeSelector matches no free node")
	}
	if len(parts) == 0 {
		return "unschedulable: " + schedulerMsg
	}
	return "unschedulable: " + strings.Join(parts, "; ") + " [scheduler: " + schedulerMsg + "]"
}

var missingPVCRE = lazyre.New(`persistentvolumeclaim "([^"]+)" not found`)

func hintFor(resource string) string {
	switch {
	case strings.HasPrefix(resource, "rdma/"):
		return "is the RDMA shared device plugin running there?"
	case strings.Contains(resource, "gpu"):
		return "is the NVIDIA device plugin running there?"
	case strings.HasPrefix(resource, "nvidia.com/"):
		return "is the SR-IOV network device plugin running there?"
	}
	return "is its device plugin running there?"
}
