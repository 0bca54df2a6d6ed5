package probe

import (
	"context"
	"encoding/json"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ain-hpc/ain/pkg/image"
)

// Labels of a pair run's pods (`ain bench rdma`): which side a pod is. The sandbox's scenarios
// match on it to give each side its output.
const (
	LabelPairRole = "ain.dev/pair-role"
	PairServer    = "server"
	PairClient    = "client"
	// NetworkStatusAnnotation is where Multus reports the pod's interfaces and their IPs.
	NetworkStatusAnnotation = "k8s.v1.cni.cncf.io/network-status"
)

// PairSpec is a server pod and a client pod on two nodes, both holding the profile's RDMA
// resource (and Multus networks) with IPC_LOCK, the client started once the server has an address.
type PairSpec struct {
	Kind   string // the probe label value, e.g. "perftest"
	Server string // node names
	Client string
	// Image runs both pods; it must have sh and the commands on PATH.
	Image string
	// ServerScript is the server's shell command; ClientScript builds the client's from the
	// server's address.
	ServerScript string
	ClientScript func(serverIP string) string
	// GPUs each pod requests (GPU memory tests: one).
	GPUs int
	// RDMA: request the profile's RDMA resource and join its Multus networks (a TCP baseline
	// does too, to cross the same NIC). PinMemory adds IPC_LOCK (RDMA memory registration pins
	// pages; Pod Security then needs the privileged level).
	RDMA      bool
	PinMemory bool
	// Env for both containers.
	Env []corev1.EnvVar
}

// PairResult is what the pair left behind.
type PairResult struct {
	ServerPod, ClientPod string
	// ServerIP is the address the client was given; IPSource says where it came from (the
	// Multus network-status of the RDMA network, or the pod IP).
	ServerIP, IPSource   string
	ServerLog, ClientLog []byte
	// ServerPhase and ClientPhase are the pods' last phases.
	ServerPhase, ClientPhase corev1.PodPhase
	// Err says why the pair did not run to the end (nil when both pods ended and logs were read).
	Err error
}

// RunPair runs spec's pods and always deletes them (also on Ctrl-C: the cleanup has its own
// context). The client is created only once the server pod runs and has an address on the
// RDMA network, so the client's command can name it. o.Timeout bounds each pod's life
// (activeDeadlineSeconds) and the whole run.
func RunPair(ctx context.Context, o Options, spec PairSpec) *PairResult {
	o = o.Defaults()
	if spec.Image != "" {
		o.Image = spec.Image
	}
	res := &PairResult{}
	if err := checkPairArches(ctx, o, spec); err != nil {
		res.Err = err
		return res
	}
	run := NewRun()
	server := pairPod(o, spec, run, PairServer, spec.Server, spec.ServerScript)
	res.ServerPod = server.Name
	pods := []*corev1.Pod{server}
	defer func() { Cleanup(o, run, pods) }()
	pctx, cancel := context.WithTimeout(ctx, o.Timeout)
	defer cancel()
	tr, err := Follow(pctx, o, run)
	if err != nil {
		res.Err = fmt.Errorf("watching the %s pods: %w", spec.Kind, err)
		return res
	}
	so := &Outcome{Pod: server, Timeout: o.Timeout}
	if so.Pod, err = Create(o, server); err != nil {
		res.Err = fmt.Errorf("creating the server pod on %s: %w", spec.Server, err)
		return res
	}
	so.Created = true
	o.Progress(fmt.Sprintf("server pod %s on %s: waiting for it to run", server.Name, spec.Server))
	ip, src, err := tr.waitAddress(pctx, so, joinsNetworks(o, spec), o.Progress)
	res.ServerPhase = so.Pod.Status.Phase
	if err != nil {
		res.Err = fmt.Errorf("%s: %w", so.NotRun(), err)
		if ctx.Err() != nil {
			res.Err = ctx.Err()
		}
		if p := so.Pod.Status.Phase; ctx.Err() == nil && (p == corev1.PodSucceeded || p == corev1.PodFailed) {
			// It ended before the client started (its script's own check failed): its log says why.
			ReadLog(context.WithoutCancel(ctx), o, so)
			res.ServerLog = so.Log
		}
		return res
	}
	res.ServerIP, res.IPSource = ip, src
	client := pairPod(o, spec, run, PairClient, spec.Client, spec.ClientScript(ip))
	res.ClientPod = client.Name
	pods = append(pods, client)
	co := &Outcome{Pod: client, Timeout: o.Timeout}
	if co.Pod, err = Create(o, client); err != nil {
		res.Err = fmt.Errorf("creating the client pod on %s: %w", spec.Client, err)
		return res
	}
	co.Created = true
	o.Progress(fmt.Sprintf("client pod %s on %s: connecting to %s (%s)", client.Name, spec.Client, ip, src))
	tr.Wait(pctx, co)
	// The server ends once its one client is served; one that still waits (the client never
	// reached it) is not worth the whole timeout.
	sctx, scancel := context.WithTimeout(pctx, 30*time.Second)
	tr.Wait(sctx, so)
	scancel()
	res.ServerPhase, res.ClientPhase = so.Pod.Status.Phase, co.Pod.Status.Phase
	for _, out := range []*Outcome{co, so} {
		if !out.Ended && out.Pod.Status.Phase != corev1.PodRunning {
			continue
		}
		ReadLog(context.WithoutCancel(ctx), o, out)
	}
	res.ServerLog, res.ClientLog = so.Log, co.Log
	switch {
	case ctx.Err() != nil:
		res.Err = ctx.Err()
	case !co.Ended:
		res.Err = fmt.Errorf("the client did not finish within %s: %s", o.Timeout, co.NotRun())
	case co.Log == nil:
		res.Err = fmt.Errorf("%s", co.NotRun())
	}
	return res
}

// checkPairArches refuses a pair whose nodes cannot run the image: on a node of another CPU
// architecture (pkg/image knows ain's default images') the container ends at once with "exec
// format error", which reads like a broken image. Nodes ain may not read are not checked.
func checkPairArches(ctx context.Context, o Options, spec PairSpec) error {
	arches := image.Arches(o.Image)
	if len(arches) == 0 {
		return nil
	}
	for _, name := range []string{spec.Server, spec.Client} {
		n, err := o.Kube.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			continue
		}
		if a := n.Labels[corev1.LabelArchStable]; a != "" && !slices.Contains(arches, a) {
			return fmt.Errorf("node %s is %s=%s, and the image %s is built for %s only: choose nodes of that architecture (--nodes) or an image built for %s (--image)",
				name, corev1.LabelArchStable, a, o.Image, strings.Join(arches, ","), a)
		}
	}
	return nil
}

// joinsNetworks reports whether the pair's pods join Multus networks (Pod adds them).
func joinsNetworks(o Options, s PairSpec) bool {
	return s.RDMA && o.RDMA.Resource != "" && len(o.RDMA.Networks) > 0
}

// pairPod is a probe pod that may pin memory (IPC_LOCK added with spec.PinMemory), running as
// the image's user (an added capability is not effective for a non-root user without ambient
// capabilities), with memory for the test's buffers.
func pairPod(o Options, spec PairSpec, run, role, node, script string) *corev1.Pod {
	name := fmt.Sprintf("ain-%s-%s-%s", spec.Kind, role, run)
	pod := Pod(o, run, Spec{Kind: spec.Kind, Name: name, Node: node, Script: script, Env: spec.Env, RDMA: spec.RDMA})
	pod.Labels[LabelPairRole] = role
	pod.Spec.SecurityContext = nil
	c := &pod.Spec.Containers[0]
	c.Name = "probe"
	c.SecurityContext = nil
	if spec.PinMemory {
		c.SecurityContext = &corev1.SecurityContext{Capabilities: &corev1.Capabilities{Add: []corev1.Capability{"IPC_LOCK"}}}
	}
	c.Resources.Limits[corev1.ResourceMemory] = resource.MustParse("2Gi")
	if spec.GPUs > 0 {
		g := *resource.NewQuantity(int64(spec.GPUs), resource.DecimalSI)
		c.Resources.Requests[corev1.ResourceName(o.GPUResource)] = g
		c.Resources.Limits[corev1.ResourceName(o.GPUResource)] = g
	}
	return pod
}

// waitAddress waits until out's pod runs and has an address: with Multus networks, the first
// address Multus reports on a non-default network (the RDMA network: perftest's out-of-band
// exchange and, for RoCE, the GID it picks belong there); else the pod IP.
func (t *Tracker) waitAddress(ctx context.Context, out *Outcome, multus bool, progress func(string)) (ip, source string, err error) {
	said := ""
	for {
		p := t.Update(out)
		switch p.Status.Phase {
		case corev1.PodSucceeded, corev1.PodFailed:
			return "", "", fmt.Errorf("the server pod ended (%s) before the client started", p.Status.Phase)
		case corev1.PodPending, "":
			// Say why it waits (the scheduler's reason, an image pull), once per new reason.
			why := ""
			for _, c := range p.Status.Conditions {
				if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && c.Message != "" {
					why = "not scheduled: " + c.Message
				}
			}
			for _, cs := range p.Status.ContainerStatuses {
				if w := cs.State.Waiting; w != nil && w.Reason != "" {
					why = strings.TrimSpace(w.Reason + " " + w.Message)
				}
			}
			if why != "" && why != said {
				said = why
				progress(fmt.Sprintf("server pod %s Pending: %s", p.Name, why))
			}
		case corev1.PodRunning:
			if multus {
				if a, n := NetworkAddress(p.Annotations[NetworkStatusAnnotation]); a != "" {
					return a, "Multus network " + n, nil
				}
			}
			if p.Status.PodIP != "" {
				src := "pod IP"
				if multus {
					src = "pod IP: Multus reported no address on the RDMA network"
				}
				return p.Status.PodIP, src, nil
			}
		}
		select {
		case <-ctx.Done():
			return "", "", fmt.Errorf("no running server pod with an address within the timeout")
		case <-t.changed:
		case <-time.After(2 * time.Second):
		}
	}
}

// NetworkAddress returns the first IP that a Multus network-status annotation gives a
// non-default network, and that network's name.
func NetworkAddress(status string) (ip, network string) {
	for _, n := range ParseNetworkStatus(status) {
		if n.Default {
			continue
		}
		for _, s := range n.IPs {
			if a, err := netip.ParseAddr(s); err == nil {
				return a.String(), n.Name
			}
		}
	}
	return "", ""
}

// PodNetwork is one entry of Multus' network-status annotation on a pod: a network, the
// interface it gave the pod and that interface's addresses.
type PodNetwork struct {
	Name      string   `json:"name"`
	Interface string   `json:"interface,omitempty"`
	IPs       []string `json:"ips,omitempty"`
	Default   bool     `json:"default,omitempty"`
}

// IPv4 is the interface's IPv4 addresses (IPv4-mapped ones unmapped): what a RoCE v2 GID of
// the pod's own carries. The default network's are the cluster network's, on no RDMA port.
func (n PodNetwork) IPv4() []netip.Addr {
	var out []netip.Addr
	for _, s := range n.IPs {
		if a, err := netip.ParseAddr(strings.TrimSpace(s)); err == nil && a.Unmap().Is4() {
			out = append(out, a.Unmap())
		}
	}
	return out
}

// ParseNetworkStatus reads a k8s.v1.cni.cncf.io/network-status annotation (a JSON list written
// by Multus after the CNI ADD of every network: name, interface, ips, mac, default). An empty or
// unreadable annotation gives nil.
func ParseNetworkStatus(status string) []PodNetwork {
	var nets []PodNetwork
	if strings.TrimSpace(status) == "" || json.Unmarshal([]byte(status), &nets) != nil {
		return nil
	}
	return nets
}
