package preflight

import (
	"context"
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// CheckGPUOperator is the check of the GPU Operator's operands a GPU job depends on, on the nodes
// the job would use: the device plugin (without it no pod gets a GPU), the driver (without it the
// device plugin has nothing to advertise) and dcgm-exporter (without it there are no GPU metrics,
// but jobs run). Allocatable nvidia.com/gpu alone says nothing about them: kubelet keeps a
// resource's capacity after its plugin went away (issue 31).
const CheckGPUOperator = "gpu-operator"

// The GPU Operator's names, read in NVIDIA/gpu-operator (commit a22dbf6, 2026-08):
//   - controllers/state_manager.go: the node labels. gpu.present=true marks a GPU node
//     (commonGPULabelKey); gpuStateLabels sets each nvidia.com/gpu.deploy.<operand> to "true" on
//     it, and every operand's DaemonSet selects nodes by its label = "true", so an administrator
//     turns an operand off on a node by setting the label to "false". gpu.deploy.operands=false
//     turns off all of them (hasOperandsDisabled). The source sets no other value ("pre-installed"
//     is not a label value; a driver installed on the host is the ClusterPolicy's driver.enabled
//     = false, which leaves the label "true" and creates no driver DaemonSet).
//   - assets/state-device-plugin/0500_daemonset.yaml: DaemonSet nvidia-device-plugin-daemonset,
//     pods labelled app=nvidia-device-plugin-daemonset, nodeSelector gpu.deploy.device-plugin.
//   - assets/state-dcgm-exporter/0800_daemonset.yaml: nvidia-dcgm-exporter, app=nvidia-dcgm-exporter,
//     nodeSelector gpu.deploy.dcgm-exporter.
//   - assets/state-driver/0500_daemonset.yaml: nvidia-driver-daemonset, app=nvidia-driver-daemonset,
//     nodeSelector gpu.deploy.driver; its startup probe passes once the driver is loaded, so a
//     driver pod that is not Ready is a driver that is not ready.
//   - The namespace is the install's ("FILLED BY THE OPERATOR" in the manifests); README.md installs
//     into gpu-operator, so that is where ain looks when it may not list pods cluster-wide.
const (
	gpuPresentLabel    = "nvidia.com/gpu.present"
	gpuOperandsLabel   = "nvidia.com/gpu.deploy.operands"
	gpuOperatorDefault = "gpu-operator"
)

// operand is one GPU Operator DaemonSet ain looks at.
type operand struct {
	label    string // nvidia.com/gpu.deploy.* on the node
	app      string // the pods' app label (= the DaemonSet's name)
	selector string // the label selector that finds its pods, for messages and fixes
	// oldSelector is the one releases before the selector's label need ("": the same)
	oldSelector string
	what        string // for messages
	required    bool   // a GPU job cannot run without it (else: WARN)
	missing     string // what its absence means
	fix         string
}

var gpuOperands = []operand{
	{label: "nvidia.com/gpu.deploy.driver", app: "nvidia-driver-daemonset", selector: driverComponent, oldSelector: "app=nvidia-driver-daemonset", what: "driver", required: true,
		missing: "GPU pods cannot start", fix: "kubectl -n NS logs POD -c nvidia-driver-ctr (a kernel without headers, a Secure Boot key, a driver still compiling)"},
	{label: "nvidia.com/gpu.deploy.device-plugin", app: "nvidia-device-plugin-daemonset", selector: "app=nvidia-device-plugin-daemonset", what: "device plugin", required: true,
		missing: "no pod gets a GPU on that node", fix: "kubectl -n NS describe pod POD; it waits for the toolkit and driver validations (nvidia-operator-validator)"},
	{label: "nvidia.com/gpu.deploy.dcgm-exporter", app: "nvidia-dcgm-exporter", selector: "app=nvidia-dcgm-exporter", what: "dcgm-exporter", required: false,
		missing: "no GPU metrics (jobs run)", fix: "enable dcgmExporter in the ClusterPolicy, or kubectl -n NS describe pod POD"},
}

// gpuOperatorInputs is what the check reads: the candidate nodes and the operand pods found
// (namespace searched, whether the search was cluster-wide).
type gpuOperatorInputs struct {
	// nodes are the job's candidate nodes (the first candidates of them), then those left out
	// only for too few GPUs; need is how many nodes the job needs (0: unknown).
	nodes      []corev1.Node
	candidates int
	need       int
	pods       []corev1.Pod
	where      string // "any namespace" or "namespace gpu-operator"
	listErr    error
}

// driverComponent is the label every driver pod of the GPU Operator carries, whichever way it was
// deployed: the ClusterPolicy's nvidia-driver-daemonset (assets/state-driver/0500_daemonset.yaml)
// and an NVIDIADriver resource's nvidia-<type>-driver-<os>-<hash> DaemonSets, whose app label is
// generated (manifests/state-driver/0500_daemonset.yaml, internal/state/driver.go AppName).
// Releases before v23.9.0 (commit bd806dd2d added the label) label the ClusterPolicy's pods with
// app only, so both are read, and the driver's fixes name both.
const driverComponent = "app.kubernetes.io/component=nvidia-driver"

// operandApp is the operand a pod belongs to, by gpuOperands' app names ("" for none).
func operandApp(p *corev1.Pod) string {
	if p.Labels["app.kubernetes.io/component"] == "nvidia-driver" {
		return gpuOperands[0].app
	}
	return p.Labels["app"]
}

// listOperandPods lists the operand pods cluster-wide, or in the operator's default namespace
// when that is forbidden: the pods selected by app, then the driver pods selected by component
// (a label selector cannot OR two keys), without repeats.
func listOperandPods(ctx context.Context, o Options) ([]corev1.Pod, string, error) {
	apps := make([]string, len(gpuOperands))
	for i, op := range gpuOperands {
		apps[i] = op.app
	}
	list := func(ns string) ([]corev1.Pod, error) {
		var out []corev1.Pod
		seen := map[string]bool{}
		for _, sel := range []string{"app in (" + strings.Join(apps, ",") + ")", driverComponent} {
			pl, err := o.Kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: sel})
			if err != nil {
				return nil, err
			}
			for _, p := range pl.Items {
				if k := p.Namespace + "/" + p.Name; !seen[k] {
					seen[k] = true
					out = append(out, p)
				}
			}
		}
		return out, nil
	}
	pods, err := list(metav1.NamespaceAll)
	if err == nil {
		return pods, "any namespace", nil
	}
	if !apierrors.IsForbidden(err) {
		return nil, "", err
	}
	pods, err = list(gpuOperatorDefault)
	if err != nil {
		return nil, "namespace " + gpuOperatorDefault, err
	}
	return pods, "namespace " + gpuOperatorDefault, nil
}

// podRank orders the pods of one operand on one node, to judge the one that counts: a Ready pod,
// then one still running or starting, then a finished one (an evicted copy the DaemonSet
// controller has already replaced is listed until it is garbage-collected).
func podRank(p *corev1.Pod) int {
	// A pod being deleted goes first, Ready or not: during an OnDelete driver upgrade the old pod
	// stays Ready while it terminates, and its replacement is what the node will have.
	if p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed || p.DeletionTimestamp != nil {
		return 0
	}
	if ok, _ := podIsReady(p); ok {
		return 2
	}
	return 1
}

// checkGPUOperator checks the GPU Operator's operands on the nodes a GPU job would use.
// nodes are the candidates of the nodes check; gpuShort the nodes it left out only for too few
// allocatable GPUs (a device plugin or driver that stopped is the usual reason, and the operand
// pods say which).
func checkGPUOperator(ctx context.Context, o Options, nodes, gpuShort []corev1.Node) []Check {
	if o.Nodes > 0 && o.GPUsPerNode == 0 {
		return nil // a CPU job
	}
	if r := o.Profile.Spec.GPUResource; r != "" && !strings.HasPrefix(r, "nvidia.com/") {
		return nil // another vendor's GPUs (amd.com/gpu): not the NVIDIA GPU Operator's
	}
	in := gpuOperatorInputs{nodes: append(nodes[:len(nodes):len(nodes)], gpuShort...), candidates: len(nodes), need: o.Nodes}
	if len(in.nodes) == 0 {
		return nil // the nodes check already failed
	}
	in.pods, in.where, in.listErr = listOperandPods(ctx, o)
	return judgeGPUOperator(in, o.Profile.Spec.GPUResource)
}

// finding is one node's problem with one operand.
type finding struct {
	status Status
	kind   string // groups findings into one check row
	line   string
	fix    string
}

// judgeGPUOperator is the pure part of the check.
func judgeGPUOperator(in gpuOperatorInputs, gpuResource string) []Check {
	if gpuResource == "" {
		gpuResource = "nvidia.com/gpu"
	}
	if in.listErr != nil {
		return []Check{{Name: CheckGPUOperator, Status: Warn,
			Message:  "cannot list the GPU Operator's pods (" + in.where + "): device plugin, driver and dcgm-exporter not checked",
			Evidence: []string{in.listErr.Error()}, Fix: "ask for list on pods cluster-wide, or in the operator's namespace (gpu-operator)"}}
	}
	// pods by app, then by node; namespaces seen, for the fix text.
	byApp := map[string]map[string]*corev1.Pod{}
	seen := map[string]bool{}
	ns := gpuOperatorDefault
	for i := range in.pods {
		p := &in.pods[i]
		app := operandApp(p)
		if byApp[app] == nil {
			byApp[app] = map[string]*corev1.Pod{}
		}
		if cur := byApp[app][p.Spec.NodeName]; p.Spec.NodeName != "" && (cur == nil || podRank(p) > podRank(cur)) {
			byApp[app][p.Spec.NodeName] = p
		}
		seen[app] = true
		ns = p.Namespace
	}
	var fs []finding
	var okNodes []string
	okCandidates := 0
	for i := range in.nodes {
		n := &in.nodes[i]
		gpus := alloc(n, corev1.ResourceName(gpuResource))
		labelled := false
		for k := range n.Labels {
			if strings.HasPrefix(k, "nvidia.com/gpu.deploy.") {
				labelled = true
			}
		}
		onNode := false
		for _, op := range gpuOperands {
			if byApp[op.app][n.Name] != nil {
				onNode = true
			}
		}
		if !labelled && !onNode {
			if gpus > 0 {
				fs = append(fs, finding{Warn, "no-operator",
					fmt.Sprintf("%s: %s allocatable %d, no nvidia.com/gpu.deploy.* label, no operand pod", n.Name, gpuResource, gpus),
					"nothing to do if the driver and device plugin were installed by hand; the GPU Operator (helm install -n gpu-operator nvidia/gpu-operator, with driver.enabled=false for a host driver) adds driver readiness and dcgm-exporter metrics"})
			}
			continue
		}
		if n.Labels[gpuOperandsLabel] == "false" {
			st := Warn
			if gpus == 0 {
				st = Fail
			}
			fs = append(fs, finding{st, "operands-off",
				fmt.Sprintf("%s: %s=false (the operator deploys no operand here), %s allocatable %d", n.Name, gpuOperandsLabel, gpuResource, gpus),
				"kubectl label node " + n.Name + " " + gpuOperandsLabel + "- (remove the label) unless the node is meant to be left out"})
			continue
		}
		bad := false
		for _, op := range gpuOperands {
			f, ok := judgeOperand(op, n, gpus, byApp[op.app][n.Name], seen[op.app], ns, gpuResource)
			if !ok {
				fs = append(fs, f)
				bad = bad || f.status == Fail
			}
		}
		if !bad {
			okNodes = append(okNodes, n.Name)
			if i < in.candidates {
				okCandidates++
			}
		}
	}
	if in.need > 0 && okCandidates >= in.need {
		// Enough healthy nodes remain for the job: a broken node is worth a WARN (a rank the
		// scheduler puts there fails), not a refusal; on a large cluster some node is always
		// restarting a driver.
		for i := range fs {
			if fs[i].status == Fail {
				fs[i].status = Warn
				fs[i].line += fmt.Sprintf(" (%d healthy node(s) are enough for the job's %d)", okCandidates, in.need)
			}
		}
	}
	return gpuOperatorChecks(fs, okNodes, in.where)
}

// judgeOperand judges one operand on one node; ok is true when there is nothing to say.
func judgeOperand(op operand, n *corev1.Node, gpus int64, pod *corev1.Pod, anyPod bool, ns, gpuResource string) (finding, bool) {
	val, has := n.Labels[op.label]
	sev := Warn
	if op.required {
		sev = Fail
	}
	fix := strings.ReplaceAll(op.fix, "NS", ns)
	switch {
	case pod != nil:
		if ready, why := podIsReady(pod); !ready {
			return finding{sev, op.app + "-notready",
				fmt.Sprintf("%s: %s/%s (%s) not ready: %s; %s", n.Name, pod.Namespace, pod.Name, op.what, why, op.missing),
				strings.ReplaceAll(fix, "POD", pod.Name)}, false
		}
		if has && val != "true" {
			return finding{Warn, op.app + "-disagree",
				fmt.Sprintf("%s: %s=%s, yet %s/%s runs on it", n.Name, op.label, val, pod.Namespace, pod.Name),
				"the labels and the pods disagree: the node's labels were edited by hand, or the operator has not reconciled yet"}, false
		}
		return finding{}, true
	case has && val == "true":
		// The operator's labels say it deploys the operand here, but there is no pod.
		if op.app == "nvidia-driver-daemonset" && !anyPod {
			// driver.enabled=false: a host driver, no driver DaemonSet anywhere. The device
			// plugin's state tells whether it works.
			return finding{}, true
		}
		if !op.required {
			return finding{Warn, op.app + "-absent",
				fmt.Sprintf("%s: %s=true but no %s pod (%s): %s", n.Name, op.label, op.what, op.selector, op.missing),
				strings.ReplaceAll(fix, "POD", "-l "+op.selector)}, false
		}
		if gpus > 0 && !anyPod {
			return finding{Warn, op.app + "-disagree",
				fmt.Sprintf("%s: %s=true but no %s pod (%s) in the cluster, while %s allocatable is %d: the labels say GPU Operator, the pods say a %s installed some other way (or a simulated node)", n.Name, op.label, op.what, op.selector, gpuResource, gpus, op.what),
				"nothing to do if GPU pods run; otherwise check how the " + op.what + " was installed (kubectl get ds -A | grep -i nvidia)"}, false
		}
		return finding{sev, op.app + "-absent",
			fmt.Sprintf("%s: %s=true but no %s pod (%s) on it (%s allocatable %d): %s", n.Name, op.label, op.what, op.selector, gpuResource, gpus, op.missing),
			fmt.Sprintf("kubectl -n %s get ds,pods -o wide -l %s%s (a taint the DaemonSet does not tolerate, or its pod on this node deleted and not yet recreated)", ns, op.selector, olderRelease(op))}, false
	case has && strings.HasPrefix(val, "paused-for-"):
		// The operator's upgrade controller pauses an operand while it upgrades the driver
		// (gpu-operator controllers/nodelabeling_controller.go: paused-for-driver-upgrade);
		// relabelling it would fight the upgrade.
		return finding{Warn, op.app + "-paused",
			fmt.Sprintf("%s: %s=%s: the GPU Operator is upgrading the driver here; %s until it is done", n.Name, op.label, val, op.missing),
			"wait for the upgrade: kubectl get node " + n.Name + " -L nvidia.com/gpu-driver-upgrade-state (do not relabel it)"}, false
	case has:
		// Turned off on this node ("false" or anything else).
		if op.required && gpus == 0 {
			return finding{Fail, op.app + "-off",
				fmt.Sprintf("%s: %s=%s and %s allocatable 0: %s", n.Name, op.label, val, gpuResource, op.missing),
				"kubectl label node " + n.Name + " " + op.label + "=true --overwrite"}, false
		}
		if !op.required {
			return finding{Warn, op.app + "-off",
				fmt.Sprintf("%s: %s=%s: %s", n.Name, op.label, val, op.missing),
				"kubectl label node " + n.Name + " " + op.label + "=true --overwrite, if metrics are wanted"}, false
		}
		return finding{}, true
	default:
		if !op.required && n.Labels[gpuPresentLabel] == "true" {
			return finding{Warn, op.app + "-off",
				fmt.Sprintf("%s: no %s label and no %s pod: %s", n.Name, op.label, op.what, op.missing),
				"enable dcgmExporter in the GPU Operator's ClusterPolicy to get GPU metrics"}, false
		}
		return finding{}, true
	}
}

// olderRelease names the selector of GPU Operator releases before v23.9, when it differs.
func olderRelease(op operand) string {
	if op.oldSelector == "" {
		return ""
	}
	return " (before v23.9: -l " + op.oldSelector + ")"
}

// podIsReady reports a pod's readiness and, when not ready, why (phase and container reasons).
func podIsReady(p *corev1.Pod) (bool, string) {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue {
			return true, ""
		}
	}
	why := []string{"phase " + string(p.Status.Phase)}
	for _, cs := range append(append([]corev1.ContainerStatus{}, p.Status.InitContainerStatuses...), p.Status.ContainerStatuses...) {
		switch {
		case cs.State.Waiting != nil && cs.State.Waiting.Reason != "":
			why = append(why, cs.Name+" "+cs.State.Waiting.Reason)
		case cs.State.Terminated != nil && cs.State.Terminated.ExitCode != 0:
			why = append(why, fmt.Sprintf("%s exited %d", cs.Name, cs.State.Terminated.ExitCode))
		case cs.State.Running != nil && !cs.Ready:
			why = append(why, cs.Name+" running, not ready")
		}
	}
	return false, strings.Join(why, ", ")
}

// gpuOperatorChecks groups findings into rows: one per kind, FAILs first.
func gpuOperatorChecks(fs []finding, okNodes []string, where string) []Check {
	if len(fs) == 0 {
		return []Check{{Name: CheckGPUOperator, Status: Pass,
			Message: fmt.Sprintf("driver and device plugin ready on %d node(s) (pods searched in %s)", len(okNodes), where)}}
	}
	type group struct {
		status Status
		lines  []string
		fix    string
	}
	groups := map[string]*group{}
	var kinds []string
	for _, f := range fs {
		g := groups[f.kind]
		if g == nil {
			g = &group{status: f.status, fix: f.fix}
			groups[f.kind] = g
			kinds = append(kinds, f.kind)
		}
		if f.status == Fail {
			g.status = Fail
		}
		g.lines = append(g.lines, f.line)
	}
	sort.SliceStable(kinds, func(i, j int) bool {
		return groups[kinds[i]].status == Fail && groups[kinds[j]].status != Fail
	})
	var out []Check
	for _, k := range kinds {
		g := groups[k]
		msg := g.lines[0]
		if len(g.lines) > 1 {
			msg = fmt.Sprintf("%s (and %d more node(s))", g.lines[0], len(g.lines)-1)
		}
		out = append(out, Check{Name: CheckGPUOperator, Status: g.status, Message: msg, Evidence: limit(g.lines), Fix: g.fix})
	}
	return out
}
