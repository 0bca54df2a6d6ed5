package preflight

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/ain-hpc/ain/pkg/next"
	"github.com/ain-hpc/ain/pkg/probe"

	corev1 "k8s.io/api/core/v1"

	"github.com/ain-hpc/ain/pkg/ibport"
	"github.com/ain-hpc/ain/pkg/profile"
)

// Probe kinds (probe.LabelProbe values).
const (
	labelManaged = probe.LabelManaged
	probeIB      = "ib-ports"
	probeDNS     = "dns"
	// NoSMFix is the fix of a port that is LinkUp but INIT.
	NoSMFix = "no subnet manager: start opensm/UFM or enable the switch SM (then `sminfo` on a node shows it)"
)

// ProbeOptions are the options of o's probe pods.
func (o *Options) ProbeOptions() probe.Options {
	return probe.Options{
		Kube: o.Kube, FanOut: o.FanOut, Namespace: o.Namespace,
		Image: o.ProbeImage, Timeout: o.ProbeTimeout, Progress: o.Progress,
	}.ForProfile(o.Profile)
}

// runIBProbes runs one sysfs-dump probe pod per node.
func runIBProbes(ctx context.Context, po probe.Options, nodes []corev1.Node) []*probe.Outcome {
	run := probe.NewRun()
	pods := make([]*corev1.Pod, len(nodes))
	for i, n := range nodes {
		pods[i] = probe.Pod(po, run, probe.Spec{Kind: probeIB, Name: fmt.Sprintf("ain-ibprobe-%s-%d", run, i), Node: n.Name, Script: ibport.SysfsDumpCommand, RDMA: true, ResultMessage: true})
	}
	return probe.Run(ctx, po, run, pods)
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
func ProbePorts(ctx context.Context, o probe.Options, nodes []string) []NodePorts {
	outs := runIBProbes(ctx, o.Defaults(), named(nodes))
	res := make([]NodePorts, len(nodes))
	for i, out := range outs {
		res[i].Node = nodes[i]
		if out.Log == nil {
			res[i].Err = out.NotRun()
			continue
		}
		rep, err := ibport.Parse(bytes.NewReader(out.Log))
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
	outs := runIBProbes(ctx, o.ProbeOptions(), nodes)
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
		if out.Log == nil {
			checks = append(checks, Check{Name: CheckIBPorts, Target: node, Status: Fail,
				Message: "the IB port probe did not run to the end within " + o.ProbeTimeout.String(), Evidence: []string{out.NotRun()},
				Fix: "kubectl describe node " + node + "; the probe requests " + quantity(int64(o.Profile.Spec.RDMA.Count)) + " " + o.Profile.Spec.RDMA.Resource + " and runs " + o.ProbeImage + " (--probe-image to use a mirror)"})
			continue
		}
		rep, err := ibport.Parse(bytes.NewReader(out.Log))
		if err != nil || len(rep.Ports) == 0 {
			checks = append(checks, Check{Name: CheckIBPorts, Target: node, Status: Fail,
				Message:  "no RDMA device visible in a pod that requests " + o.Profile.Spec.RDMA.Resource,
				Evidence: []string{"probe pod " + out.Pod.Name + " printed no /sys/class/infiniband port (" + strconv.Itoa(len(out.Log)) + " bytes of " + out.Source() + ")"},
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
				Evidence: limit(linkLayerLines(out.Log)),
				Fix:      "set the profile's fabric from the link layer (InfiniBand: ib, Ethernet: roce), or use other nodes"})
			continue
		}
		if o.Profile.Spec.Fabric == profile.FabricRoCE {
			// The pod's own GID: by its Multus addresses (on the pod the watch delivered) when
			// it has them, else by netdev name.
			gc := chooseGID(rep, probe.ParseNetworkStatus(out.Pod.Annotations[probe.NetworkStatusAnnotation]))
			ev := append([]string{gc.Rule}, gidLines(out.Log)...)
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
func badPorts(node string, out *probe.Outcome, bad []ibport.Port) Check {
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
	sc := bufio.NewScanner(bytes.NewReader(out.Log))
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
