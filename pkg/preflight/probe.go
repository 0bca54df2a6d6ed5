package preflight

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/ain-hpc/ain/pkg/next"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/ain-hpc/ain/pkg/counters"
	"github.com/ain-hpc/ain/pkg/ibport"
	"github.com/ain-hpc/ain/pkg/profile"
)

// Labels on probe pods: LabelProbe says which probe, LabelProbeRun groups one run's pods (one
// watch, one DeleteCollection), LabelProbeShard splits a large run for its cleanup.
const (
	LabelProbe      = "ain.dev/probe"
	LabelProbeRun   = "ain.dev/probe-run"
	LabelProbeShard = "ain.dev/probe-shard"
	AnnotationFor   = "ain.dev/probe-node"
	labelManaged    = "app.kubernetes.io/managed-by"
	probeIB         = "ib-ports"
	probeDNS        = "dns"
	probeCounters   = "counters"
	probeParallel   = 16
	// NoSMFix is the fix of a port that is LinkUp but INIT.
	NoSMFix = "no subnet manager: start opensm/UFM or enable the switch SM (then `sminfo` on a node shows it)"
)

func runID() string {
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// probePod is a pod that runs cmd once on node (or anywhere when node is "").
func probePod(o Options, run, kind, name, node string, cmd string, env []corev1.EnvVar, rdma bool) *corev1.Pod {
	zero := int64(0)
	deadline := int64(o.ProbeTimeout / time.Second)
	res := corev1.ResourceRequirements{
		Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("10m"), corev1.ResourceMemory: resource.MustParse("16Mi")},
		Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("64Mi")},
	}
	p := o.Profile
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: name, Namespace: o.Namespace,
			Labels:      map[string]string{labelManaged: "ain", LabelProbe: kind, LabelProbeRun: run},
			Annotations: map[string]string{},
		},
		Spec: corev1.PodSpec{
			RestartPolicy:                 corev1.RestartPolicyNever,
			ActiveDeadlineSeconds:         &deadline,
			TerminationGracePeriodSeconds: &zero,
			AutomountServiceAccountToken:  new(bool),
			Containers: []corev1.Container{{
				Name: "probe", Image: o.ProbeImage, ImagePullPolicy: corev1.PullIfNotPresent,
				Command: []string{"/bin/sh", "-c", cmd}, Env: env, Resources: res,
			}},
		},
	}
	restrictedPod(pod)
	if node != "" {
		// Pinned: it must run on this node, whatever its taints say (a probe is read-only).
		pod.Spec.NodeName = node
		pod.Spec.Tolerations = []corev1.Toleration{{Operator: corev1.TolerationOpExists}}
		pod.Annotations[AnnotationFor] = node
	}
	if rdma && p.RDMA() {
		// Request the RDMA resource (and join the Multus networks) so the pod sees exactly the
		// devices, ports and GIDs a rank would see.
		q := p.RDMAQuantity()
		c := &pod.Spec.Containers[0]
		c.Resources.Requests[corev1.ResourceName(p.Spec.RDMA.Resource)] = q
		c.Resources.Limits[corev1.ResourceName(p.Spec.RDMA.Resource)] = q
		if len(p.Spec.Networks) > 0 {
			pod.Annotations["k8s.v1.cni.cncf.io/networks"] = strings.Join(p.Spec.Networks, ",")
		}
	}
	return pod
}

// probeOutcome is what a probe pod left behind.
type probeOutcome struct {
	pod     *corev1.Pod
	created bool
	err     error // creating it
	log     []byte
	logErr  error
	// fromMessage: log is the container's termination message, not a log read.
	fromMessage bool
}

// runProbes creates the pods, waits (one watch) until each has ended or the timeout, reads the
// logs of those that ended, and deletes them all (one DeleteCollection), also when ctx is
// cancelled (Ctrl-C).
func runProbes(ctx context.Context, o Options, run, kind string, pods []*corev1.Pod) []*probeOutcome {
	outs := make([]*probeOutcome, len(pods))
	for i, p := range pods {
		outs[i] = &probeOutcome{pod: p}
	}
	sel := LabelProbeRun + "=" + run
	shards := labelShards(pods)
	owner := ownProbes(o, run, kind, pods)
	defer func() {
		if !handOff(o, owner, len(pods)) {
			cleanupProbes(o, sel, shards, pods)
		}
	}()
	pctx, cancel := context.WithTimeout(ctx, o.ProbeTimeout)
	defer cancel()
	// Follow the run's pods from before the first create: one label-selected watch, read at
	// once so the server never drops a slow watcher.
	tr := &podTracker{pods: map[string]*corev1.Pod{}, changed: make(chan struct{}, 1)}
	w, werr := o.Kube.CoreV1().Pods(o.Namespace).Watch(pctx, metav1.ListOptions{LabelSelector: sel, AllowWatchBookmarks: true})
	if werr == nil {
		go tr.follow(pctx, o, sel, w)
	}
	// Create, probeParallel at a time.
	eachBounded(len(outs), probeParallel, func(i int) {
		out := outs[i]
		if pctx.Err() != nil {
			out.err = pctx.Err()
			return
		}
		created, err := createPod(o, out.pod)
		if err != nil {
			out.err = err
			return
		}
		out.created = true
		out.pod = created
	})
	done := map[string]bool{}
	if werr == nil {
		tr.wait(pctx, outs, done)
	}
	// Logs of the pods that ended, and of those still Running at the timeout: the dump is
	// printed at once, so a pod that did not exit in time has usually said all it had to. A pod
	// whose termination message holds its whole result needs no log read (termmsg.go).
	eachBounded(len(outs), probeParallel, func(i int) {
		out := outs[i]
		if !out.created || (!done[out.pod.Name] && out.pod.Status.Phase != corev1.PodRunning) {
			return
		}
		if msg, ok := resultMessage(out.pod); ok {
			out.log, out.fromMessage = msg, true
			return
		}
		lctx, lcancel := context.WithTimeout(ctx, 20*time.Second)
		defer lcancel()
		out.log, out.logErr = o.Kube.CoreV1().Pods(o.Namespace).GetLogs(out.pod.Name, &corev1.PodLogOptions{Container: "probe"}).Do(lctx).Raw()
	})
	return outs
}

// eachBounded runs fn(0) ... fn(n-1), each in its own goroutine but at most limit at a time,
// and returns when all have: the probes' API calls, bounded so a large cluster does not send
// hundreds of requests at once.
func eachBounded(n, limit int, fn func(i int)) {
	var wg sync.WaitGroup
	sem := make(chan struct{}, limit)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			fn(i)
		}()
	}
	wg.Wait()
}

// createPod creates a probe pod. Its context is not the caller's: a create cut off by Ctrl-C
// could still land on the server after the cleanup ran, so every create started is finished
// (bounded) before the cleanup. A namespace just created may not have its default
// ServiceAccount yet: that is retried for a few seconds.
func createPod(o Options, pod *corev1.Pod) (*corev1.Pod, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs := o.Kube
	if o.FanOut != nil {
		cs = o.FanOut
	}
	for {
		created, err := cs.CoreV1().Pods(o.Namespace).Create(ctx, pod, metav1.CreateOptions{})
		if err == nil || !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "serviceaccount") || ctx.Err() != nil {
			return created, err
		}
		select {
		case <-ctx.Done():
			return nil, err
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// podTracker keeps the latest state of a run's probe pods, from one watch.
type podTracker struct {
	mu      sync.Mutex
	pods    map[string]*corev1.Pod
	changed chan struct{}
}

func (t *podTracker) set(p *corev1.Pod) {
	t.mu.Lock()
	t.pods[p.Name] = p
	t.mu.Unlock()
	select {
	case t.changed <- struct{}{}:
	default:
	}
}

// follow reads the watch until ctx ends. When the server closes it (a busy server drops slow
// watchers), it watches again from the last resource version seen; only when that is too old
// does it resync with one list.
func (t *podTracker) follow(ctx context.Context, o Options, sel string, w watch.Interface) {
	rv := ""
	for {
		for ev := range w.ResultChan() {
			switch p, ok := ev.Object.(*corev1.Pod); {
			case ev.Type == watch.Error:
				rv = "" // 410 Gone and friends: resync
			case ok && ev.Type == watch.Bookmark:
				rv = p.ResourceVersion
			case ok:
				rv = p.ResourceVersion
				t.set(p)
			}
		}
		w.Stop()
		for {
			if ctx.Err() != nil {
				return
			}
			var err error
			if rv != "" {
				w, err = o.Kube.CoreV1().Pods(o.Namespace).Watch(ctx, metav1.ListOptions{LabelSelector: sel, ResourceVersion: rv, AllowWatchBookmarks: true})
				if apierrors.IsResourceExpired(err) || apierrors.IsGone(err) {
					rv = ""
				}
			} else {
				var l *corev1.PodList
				if l, err = o.Kube.CoreV1().Pods(o.Namespace).List(ctx, metav1.ListOptions{LabelSelector: sel}); err == nil {
					for i := range l.Items {
						t.set(&l.Items[i])
					}
					rv = l.ResourceVersion
					w, err = o.Kube.CoreV1().Pods(o.Namespace).Watch(ctx, metav1.ListOptions{LabelSelector: sel, ResourceVersion: rv, AllowWatchBookmarks: true})
				}
			}
			if err == nil {
				break
			}
			select {
			case <-ctx.Done():
				return
			case <-time.After(time.Second):
			}
		}
	}
}

// wait returns when every created pod has ended (marked in done) or ctx ends; each outcome gets
// its pod's latest state.
func (t *podTracker) wait(ctx context.Context, outs []*probeOutcome, done map[string]bool) {
	for {
		t.mu.Lock()
		pending := 0
		for _, out := range outs {
			if !out.created {
				continue
			}
			if p := t.pods[out.pod.Name]; p != nil {
				out.pod = p
			}
			ph := out.pod.Status.Phase
			if ph == corev1.PodSucceeded || ph == corev1.PodFailed {
				done[out.pod.Name] = true
			} else {
				pending++
			}
		}
		t.mu.Unlock()
		if pending == 0 {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-t.changed:
		}
	}
}

// Cleanup of a large run: the API server deletes a DeleteCollection's objects one after another
// (kube-apiserver --delete-collection-workers, default 1: k8s.io/apiserver v0.37.2
// pkg/server/options/etcd.go, used by pkg/registry/generic/registry/store.go DeleteCollection),
// each a write to etcd and an event to every pod watcher: at 1000 probe pods, seconds that the
// user waits for after the answer is known (issue 16). A run of more than shardPods pods is split
// by LabelProbeShard into at most maxShards selectors deleted side by side, so the server spreads
// the deletes over its cores; the requests stay constant in the node count.
const (
	shardPods = 64
	maxShards = 8
)

// A run of more than shardPods pods is deleted by the cluster's garbage collector, not by ain: a
// ConfigMap made for the run owns its pods (ownerReferences), and one delete of it with
// propagationPolicy Background hands them to kube-controller-manager's garbage collector, which
// deletes dependents whose owner is gone. At 1000 nodes the user then has the answer about 6 s
// sooner (the sharded DeleteCollection below took that long on the loaded 2-core machine: each
// pod is an update and a delete in etcd and two events to every pod watcher), and the pods go in
// the next minute or so (the collector's client sends 20 requests a second by default,
// kube-controller-manager --kube-api-qps). ain says so. When the ConfigMap cannot be made or
// deleted (no right, a quota), ain deletes the pods itself.

// ownProbes makes the ConfigMap that owns a large run's pods and points them at it; nil when the
// run is small or the ConfigMap cannot be made.
func ownProbes(o Options, run, kind string, pods []*corev1.Pod) *corev1.ConfigMap {
	if len(pods) <= shardPods {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cm, err := o.Kube.CoreV1().ConfigMaps(o.Namespace).Create(ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{
			Name: "ain-probe-" + run, Namespace: o.Namespace,
			Labels: map[string]string{labelManaged: "ain", LabelProbe: kind, LabelProbeRun: run},
		},
		Data: map[string]string{
			"pods":  strconv.Itoa(len(pods)),
			"about": "owns the " + kind + " probe pods of one ain run: deleting it deletes them",
		},
	}, metav1.CreateOptions{})
	if err != nil {
		return nil
	}
	for _, p := range pods {
		p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: cm.Name, UID: cm.UID}}
	}
	return cm
}

// handOff deletes owner so that the garbage collector deletes its n pods, and says so; false
// when there is no owner or it could not be deleted (the caller then deletes the pods).
func handOff(o Options, owner *corev1.ConfigMap, n int) bool {
	if owner == nil {
		return false
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	bg := metav1.DeletePropagationBackground
	err := o.Kube.CoreV1().ConfigMaps(o.Namespace).Delete(ctx, owner.Name, metav1.DeleteOptions{PropagationPolicy: &bg})
	if err != nil && !apierrors.IsNotFound(err) {
		return false
	}
	if o.Progress == nil {
		return true
	}
	o.Progress(fmt.Sprintf("%d probe pods left to the garbage collector (their owner, configmap %s, is deleted); `kubectl get pods -l %s=%s` lists those not yet gone",
		n, owner.Name, LabelProbeRun, owner.Labels[LabelProbeRun]))
	return true
}

// labelShards splits pods into the shards of their cleanup (LabelProbeShard, when more than
// one) and returns how many there are.
func labelShards(pods []*corev1.Pod) int {
	shards := min(maxShards, max(1, (len(pods)+shardPods-1)/shardPods))
	for i, p := range pods {
		if shards > 1 {
			p.Labels[LabelProbeShard] = strconv.Itoa(i % shards)
		}
	}
	return shards
}

// cleanupProbes deletes a run's probe pods with a fresh context: it runs after Ctrl-C too. With
// shards > 1 the pods carry LabelProbeShard 0..shards-1 and each shard is deleted by its own
// DeleteCollection, all at once.
func cleanupProbes(o Options, sel string, shards int, pods []*corev1.Pod) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	zero := int64(0)
	errs := make([]error, shards)
	eachBounded(shards, shards, func(i int) {
		s := sel
		if shards > 1 {
			s += "," + LabelProbeShard + "=" + strconv.Itoa(i)
		}
		errs[i] = o.Kube.CoreV1().Pods(o.Namespace).DeleteCollection(ctx, metav1.DeleteOptions{GracePeriodSeconds: &zero}, metav1.ListOptions{LabelSelector: s})
	})
	if !slices.ContainsFunc(errs, apierrors.IsForbidden) {
		return
	}
	for _, p := range pods { // no deletecollection right: one by one
		_ = o.Kube.CoreV1().Pods(o.Namespace).Delete(ctx, p.Name, metav1.DeleteOptions{GracePeriodSeconds: &zero})
	}
}

// source names where out.log came from.
func (out *probeOutcome) source() string {
	if out.fromMessage {
		return "termination message"
	}
	return "log"
}

// notRun explains a probe that gave no log.
func notRun(out *probeOutcome) string {
	if out.err != nil {
		return "creating the probe pod: " + out.err.Error()
	}
	p := out.pod
	s := "probe pod " + p.Name + " " + string(p.Status.Phase)
	if p.Status.Phase == "" {
		s = "probe pod " + p.Name + " not started"
	}
	if p.Status.Reason != "" || p.Status.Message != "" {
		s += ": " + strings.TrimSpace(p.Status.Reason+" "+p.Status.Message)
	}
	for _, c := range p.Status.Conditions {
		if c.Status == corev1.ConditionFalse && c.Message != "" {
			s += "; " + string(c.Type) + ": " + c.Message
		}
	}
	for _, cs := range p.Status.ContainerStatuses {
		if w := cs.State.Waiting; w != nil && w.Reason != "" {
			s += "; " + w.Reason + " " + w.Message
		}
	}
	if out.logErr != nil {
		s += "; reading its log: " + out.logErr.Error()
	}
	return s
}

// runIBProbes runs one sysfs-dump probe pod per node.
func runIBProbes(ctx context.Context, o Options, nodes []corev1.Node) []*probeOutcome {
	run := runID()
	pods := make([]*corev1.Pod, len(nodes))
	for i, n := range nodes {
		pods[i] = withResultMessage(probePod(o, run, probeIB, fmt.Sprintf("ain-ibprobe-%s-%d", run, i), n.Name, ibport.SysfsDumpCommand, nil, true))
	}
	return runProbes(ctx, o, run, probeIB, pods)
}

// NodeCounters is one node's RDMA port counters as a probe pod read them.
type NodeCounters struct {
	Node string
	Snap *counters.Snapshot
	// Err says why there is no snapshot (the probe did not run, no counters).
	Err string
}

// ProbeCounters snapshots the RDMA port counters (sysfs counters and hw_counters) of the named
// nodes, one probe pod per node holding the RDMA resource, in parallel (one watch, one cleanup).
// `ain bench allreduce` takes one before and one after each run: the bytes each HCA carried.
func ProbeCounters(ctx context.Context, o Options, nodes []string) []NodeCounters {
	o.defaults()
	run := runID()
	pods := make([]*corev1.Pod, len(nodes))
	for i, n := range nodes {
		pods[i] = withResultMessage(probePod(o, run, probeCounters, fmt.Sprintf("ain-counters-%s-%d", run, i), n, counters.ProbeCommand, nil, true))
	}
	outs := runProbes(ctx, o, run, probeCounters, pods)
	res := make([]NodeCounters, len(nodes))
	for i, out := range outs {
		res[i].Node = nodes[i]
		if out.log == nil {
			res[i].Err = notRun(out)
			continue
		}
		s, err := counters.Parse(bytes.NewReader(out.log))
		switch {
		case err != nil:
			res[i].Err = "reading the counters: " + err.Error()
		case len(s.Ports) == 0:
			res[i].Err = "no RDMA port counters in the probe's output"
		default:
			res[i].Snap = s
		}
	}
	return res
}

// NodePorts is what the IB port probe saw on one node.
type NodePorts struct {
	Node  string
	Ports []ibport.Port
	// Err says why there is nothing (the probe did not run, no device).
	Err string
}

// named is nodes known by name only: what the IB port probe needs of a node it is told to probe.
func named(nodes []string) []corev1.Node {
	ns := make([]corev1.Node, len(nodes))
	for i, n := range nodes {
		ns[i].Name = n
	}
	return ns
}

// ProbePorts runs the IB port probe on the named nodes and returns every port it saw, per node
// (for `ain bench allreduce`, which judges busbw against the rate the ports really run at).
func ProbePorts(ctx context.Context, o Options, nodes []string) []NodePorts {
	o.defaults()
	outs := runIBProbes(ctx, o, named(nodes))
	res := make([]NodePorts, len(nodes))
	for i, out := range outs {
		res[i].Node = nodes[i]
		if out.log == nil {
			res[i].Err = notRun(out)
			continue
		}
		rep, err := ibport.Parse(bytes.NewReader(out.log))
		if err != nil || len(rep.Ports) == 0 {
			res[i].Err = "no RDMA port in the probe's output"
			continue
		}
		res[i].Ports = rep.Ports
	}
	return res
}

// probeIBPorts runs one probe pod per candidate node and reads its sysfs dump.
func probeIBPorts(ctx context.Context, o Options, nodes []corev1.Node) []Check {
	outs := runIBProbes(ctx, o, nodes)
	if ctx.Err() != nil {
		return nil
	}
	var checks []Check
	var ready []string
	gids := map[int]int{}
	rates := map[string]bool{}
	wantGID, gidFixed := -1, false
	if o.Profile.Spec.Fabric == profile.FabricRoCE && o.Profile.Spec.GIDIndex != "" && o.Profile.Spec.GIDIndex != "auto" {
		if v, err := strconv.Atoi(o.Profile.Spec.GIDIndex); err == nil && v >= 0 {
			wantGID, gidFixed = v, true
		}
	}
	for i, out := range outs {
		node := nodes[i].Name
		if out.log == nil {
			checks = append(checks, Check{Name: CheckIBPorts, Target: node, Status: Fail,
				Message: "the IB port probe did not run to the end within " + o.ProbeTimeout.String(), Evidence: []string{notRun(out)},
				Fix: "kubectl describe node " + node + "; the probe requests " + quantity(int64(o.Profile.Spec.RDMA.Count)) + " " + o.Profile.Spec.RDMA.Resource + " and runs " + o.ProbeImage + " (--probe-image to use a mirror)"})
			continue
		}
		rep, err := ibport.Parse(bytes.NewReader(out.log))
		if err != nil || len(rep.Ports) == 0 {
			checks = append(checks, Check{Name: CheckIBPorts, Target: node, Status: Fail,
				Message:  "no RDMA device visible in a pod that requests " + o.Profile.Spec.RDMA.Resource,
				Evidence: []string{"probe pod " + out.pod.Name + " printed no /sys/class/infiniband port (" + strconv.Itoa(len(out.log)) + " bytes of " + out.source() + ")"},
				Fix:      "check the node has an HCA (ibstat on the node) and that the RDMA device plugin's config selects it (ifNames/devices/vendors in rdma-shared-dev-plugin's config)"})
			continue
		}
		var bad []ibport.Port
		for _, p := range rep.Ports {
			if !p.Ready {
				bad = append(bad, p)
			}
			if p.Rate != nil {
				rates[p.LinkLayer+", "+*p.Rate] = true
			}
		}
		if len(bad) > 0 {
			checks = append(checks, badPorts(node, out, bad))
			continue
		}
		if ll := linkLayers(rep.Ports); o.Profile.Spec.Fabric == profile.FabricRoCE && ll["InfiniBand"] ||
			o.Profile.Spec.Fabric == profile.FabricIB && ll["Ethernet"] && !ll["InfiniBand"] {
			// The profile and the ports disagree: say so rather than judge one by the other.
			want := map[string]string{profile.FabricRoCE: "Ethernet", profile.FabricIB: "InfiniBand"}[o.Profile.Spec.Fabric]
			checks = append(checks, Check{Name: CheckIBPorts, Target: node, Status: Warn,
				Message:  fmt.Sprintf("the profile's fabric is %s but the ports' link layer here is not %s", o.Profile.Spec.Fabric, want),
				Evidence: limit(linkLayerLines(out.log)),
				Fix:      "set the profile's fabric from the link layer (InfiniBand: ib, Ethernet: roce), or use other nodes"})
			continue
		}
		if o.Profile.Spec.Fabric == profile.FabricRoCE {
			// The pod's own GID: by its Multus addresses (on the pod the watch delivered) when
			// it has them, else by netdev name.
			gc := chooseGID(rep, ParseNetworkStatus(out.pod.Annotations[NetworkStatusAnnotation]))
			ev := append([]string{gc.Rule}, gidLines(out.log)...)
			switch {
			case gc.Unmatched && gc.ByAddr:
				// The ports carry RoCE v2 IPv4 GIDs, none with the pod's address: the device is
				// not on the pod's RDMA network, and a QP built on another's GID fails.
				checks = append(checks, Check{Name: CheckIBPorts, Target: node, Status: Fail,
					Message: fmt.Sprintf("no RoCE v2 GID with the probe pod's address on %s (the GIDs there are other netdevs'): NCCL cannot set up queue pairs on them",
						strings.Join(gc.Missing, ", ")),
					Evidence: ev,
					Fix:      "attach the RoCE network of this device to the ranks: a Multus NetworkAttachmentDefinition (macvlan, host-device or SR-IOV) on it in the profile's spec.networks"})
				continue
			case gc.Unmatched:
				// The GID table has RoCE v2 IPv4 GIDs, but on netdevs the pod does not have: a QP
				// built on them fails ("ibv_modify_qp failed with 19 No such device").
				checks = append(checks, Check{Name: CheckIBPorts, Target: node, Status: Fail,
					Message: fmt.Sprintf("RoCE v2 GIDs only on netdevs outside the pod (%s); the pod's interfaces are %s: NCCL cannot set up queue pairs on them",
						strings.Join(gc.Missing, "; "), strings.Join(rep.Netdevs, ", ")),
					Evidence: ev,
					Fix:      "attach the RoCE network to the ranks: a Multus NetworkAttachmentDefinition (macvlan, host-device or SR-IOV) on this device in the profile's spec.networks"})
				continue
			case gc.Index == nil:
				checks = append(checks, Check{Name: CheckIBPorts, Target: node, Status: Warn,
					Message:  "RoCE ports ACTIVE, but no single RoCE v2 IPv4 GID index of the pod (they differ between ports, or none is RoCE v2)",
					Evidence: ev, Fix: "leave the profile's gidIndex at auto (NCCL >= 2.21 picks per port), or check the RoCE netdev has an IPv4 address"})
				continue
			}
			gids[*gc.Index]++
			if gidFixed && *gc.Index != wantGID {
				by := "by netdev name"
				if gc.ByAddr {
					by = "by the pod's address"
				}
				checks = append(checks, Check{Name: CheckIBPorts, Target: node, Status: Warn,
					Message:  fmt.Sprintf("the pod's RoCE v2 GID index here is %d (%s), the profile's gidIndex (NCCL_IB_GID_INDEX) is %d", *gc.Index, by, wantGID),
					Evidence: ev, Fix: fmt.Sprintf("set gidIndex: %d in the profile, or auto (NCCL >= 2.21 picks the pod's GID with spec.addrRange)", *gc.Index)})
				continue
			}
			if u := rep.Unsteered(); !gidFixed && o.Profile.Spec.AddrRange == "" && len(u) > 0 {
				checks = append(checks, Check{Name: CheckIBPorts, Target: node, Status: Warn,
					Message: "nothing steers NCCL to the pod's RoCE v2 GID: with gidIndex auto and no spec.addrRange (NCCL_IB_ADDR_RANGE), NCCL takes the first IPv4 RoCE v2 GID in table order, another netdev's: " +
						strings.Join(u, "; "),
					Evidence: ev,
					Fix:      "set spec.addrRange to the RoCE network's subnet (profile detection reads it from the NetworkAttachmentDefinition's IPAM), or gidIndex to the pod's index",
					Next:     []next.Command{"profile detect"}})
				continue
			}
			node += " (" + gc.Rule + ")"
		}
		ready = append(ready, node)
	}
	if len(ready) > 0 {
		msg := fmt.Sprintf("%d of %d node(s): every IB/RoCE port ACTIVE (LinkUp)", len(ready), len(nodes))
		if len(rates) > 0 {
			msg += " (" + strings.Join(slices.Sorted(maps.Keys(rates)), "; ") + ")"
		}
		if len(gids) > 0 {
			var parts []string
			for _, k := range slices.Sorted(maps.Keys(gids)) {
				parts = append(parts, fmt.Sprintf("%d on %d node(s)", k, gids[k]))
			}
			msg += "; RoCE v2 GID index " + strings.Join(parts, ", ")
		}
		ev := ready
		checks = append([]Check{{Name: CheckIBPorts, Status: Pass, Message: msg, Evidence: limit(ev)}}, checks...)
	}
	return checks
}

// badPorts is the FAIL of a node whose ports are not ready, with the sysfs lines as evidence.
func badPorts(node string, out *probeOutcome, bad []ibport.Port) Check {
	var names []string
	reasons := map[string]bool{}
	want := map[string]bool{}
	for _, p := range bad {
		names = append(names, fmt.Sprintf("%s:%d", p.Device, p.Port))
		reasons[p.Reason] = true
		base := fmt.Sprintf("/sys/class/infiniband/%s/ports/%d/", p.Device, p.Port)
		want[base+"state"], want[base+"phys_state"] = true, true
	}
	var ev []string
	sc := bufio.NewScanner(bytes.NewReader(out.log))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		i := strings.Index(line, "/sys/class/infiniband/")
		if i < 0 {
			continue
		}
		path, _, _ := strings.Cut(line[i:], ":")
		if want[path] {
			ev = append(ev, line[i:])
		}
	}
	c := Check{Name: CheckIBPorts, Target: node, Status: Fail, Evidence: limit(ev)}
	p := bad[0]
	switch {
	case reasons[ibport.ReasonNoSM] && p.LinkLayer != "Ethernet":
		c.Message = fmt.Sprintf("%s: physical state LinkUp but state %s: no subnet manager has brought the port(s) up; NCCL skips them and falls back to sockets", strings.Join(names, ", "), p.State)
		c.Fix = NoSMFix
	default:
		c.Message = fmt.Sprintf("%s not ready: %s (state %s, physical %s)", strings.Join(names, ", "), p.Reason, p.State, orDash(p.PhysState))
		c.Fix = ibport.Fix(p.Reason, p.LinkLayer)
	}
	return c
}

func linkLayers(ports []ibport.Port) map[string]bool {
	m := map[string]bool{}
	for _, p := range ports {
		m[p.LinkLayer] = true
	}
	return m
}

func linkLayerLines(log []byte) []string {
	var ev []string
	sc := bufio.NewScanner(bytes.NewReader(log))
	for sc.Scan() {
		if l := strings.TrimSpace(sc.Text()); strings.HasSuffix(strings.SplitN(l, ":", 2)[0], "/link_layer") {
			ev = append(ev, l)
		}
	}
	return ev
}

func gidLines(log []byte) []string {
	var ev []string
	sc := bufio.NewScanner(bytes.NewReader(log))
	for sc.Scan() {
		l := sc.Text()
		if strings.Contains(l, "/gid_attrs/types/") && strings.Contains(l, "RoCE v2") || strings.Contains(l, "/gid_attrs/ndevs/") {
			ev = append(ev, strings.TrimSpace(l))
		}
	}
	return limit(ev)
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// ProbeIBPorts runs the IB port probe on the named nodes only (the nodes of a job whose NCCL fell
// back to sockets, say) and returns its checks: one PASS for the ready nodes, one FAIL or WARN
// per other node.
func ProbeIBPorts(ctx context.Context, o Options, nodes []string) []Check {
	o.defaults()
	return probeIBPorts(ctx, o, named(nodes))
}
