// Package detect builds a fabric profile from what a cluster says: the nodes' allocatable
// resources and labels, the Multus NetworkAttachmentDefinitions of all namespaces, and (unless
// told not to) probe pods that read the HCAs of one node per pool of alike GPU nodes. It prints
// nothing: steps go to Progress, and the result says where every field came from
// (profile.Detected).
package detect

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/ain-hpc/ain/pkg/kube"
	"github.com/ain-hpc/ain/pkg/preflight"
	"github.com/ain-hpc/ain/pkg/probe"
	"github.com/ain-hpc/ain/pkg/profile"
)

// Detector reads one cluster. Clients is required.
type Detector struct {
	Clients *kube.Clients
	// Probe is how the probe pods run (namespace, image, timeout, fan-out); their RDMA request
	// is the detected profile's (the pods hold its RDMA resource and join its networks).
	Probe probe.Options
	// Progress receives every step, worded for a person; nil: none.
	Progress func(string)
}

// Options are one detection's choices.
type Options struct {
	// NoProbes reads the API only: HCAs, rate and GID index stay undetected.
	NoProbes bool
	// EveryNode probes every GPU node, not one per pool.
	EveryNode bool
}

// listTimeout bounds the reads of nodes and NetworkAttachmentDefinitions.
const listTimeout = 30 * time.Second

// InterruptedError says ctx ended while the probe pods ran; they were deleted.
type InterruptedError struct{}

func (InterruptedError) Error() string { return "interrupted: probe pods deleted" }

func (d *Detector) say(format string, args ...any) {
	if d.Progress != nil {
		d.Progress(fmt.Sprintf(format, args...))
	}
}

// Run detects the profile. Only a failure to read the nodes and an interrupt are errors: what
// cannot be read or probed is listed in the result as not detected, with the reason.
func (d *Detector) Run(ctx context.Context, o Options) (*profile.Detected, error) {
	kc := d.Clients
	lctx, cancel := context.WithTimeout(ctx, listTimeout)
	defer cancel()
	nodes, err := kc.Kube.CoreV1().Nodes().List(lctx, metav1.ListOptions{})
	if err != nil {
		return nil, kc.Classify(err, "list nodes")
	}
	var nads []profile.NAD
	var nadErr error
	list, err := kc.Dynamic.Resource(preflight.NADResource).Namespace("").List(lctx, metav1.ListOptions{})
	switch {
	case apierrors.IsNotFound(err):
		nadErr = fmt.Errorf("the NetworkAttachmentDefinition CRD (k8s.cni.cncf.io/v1) is not installed: no Multus")
	case err != nil:
		nadErr = kc.Classify(err, "list NetworkAttachmentDefinitions")
	default:
		for _, it := range list.Items {
			cfg, _, _ := unstructured.NestedString(it.Object, "spec", "config")
			nads = append(nads, profile.NAD{Namespace: it.GetNamespace(), Name: it.GetName(),
				ResourceName: it.GetAnnotations()["k8s.v1.cni.cncf.io/resourceName"], Config: cfg})
		}
	}
	det := profile.Detect(nodes.Items, nads, nadErr)
	if o.NoProbes {
		det.NotProbed("--no-probes")
		return det, nil
	}
	if err := d.probe(ctx, det, nodes.Items, o.EveryNode); err != nil {
		return nil, err
	}
	return det, nil
}

// probe runs one probe pod per pool of alike GPU nodes and applies what they read. A user who
// may not run pods gets the fields listed as not detected, naming the verbs missing; only an
// interrupt is an error.
func (d *Detector) probe(ctx context.Context, det *profile.Detected, nodes []corev1.Node, everyNode bool) error {
	pools := det.ProbePools(nodes, everyNode)
	if len(pools) == 0 {
		det.NotProbed("no GPU node offers an RDMA resource: nothing for a probe pod to read")
		return nil
	}
	// The probe pods hold the detected RDMA resource and join the detected RDMA networks.
	p := *det.Profile
	p.Origins = nil
	opts := d.Probe.ForProfile(&p)
	targets := make([]string, len(pools))
	for i, pl := range pools {
		targets[i] = pl.Probe
		line := fmt.Sprintf("probe pod on %s for pool %s (%d node(s)): holds %s", pl.Probe, pl.Name, len(pl.Nodes), p.Spec.RDMA.Resource)
		if len(p.Spec.Networks) > 0 {
			line += fmt.Sprintf(", joins %v", p.Spec.Networks)
		}
		d.say("%s", line)
	}
	probes, err := preflight.ProbeFabric(ctx, opts, targets)
	var fe *probe.ForbiddenError
	switch {
	case ctx.Err() != nil:
		return InterruptedError{}
	case errors.As(err, &fe):
		why := fe.Error() + "; ask for them or run with --no-probes"
		d.say("WARN  probes skipped: %s", why)
		det.NotProbed(why)
		return nil
	case err != nil:
		d.say("WARN  probes skipped: %v", err)
		det.NotProbed(err.Error())
		return nil
	}
	results := make([]profile.ProbeResult, len(probes))
	for i, pr := range probes {
		results[i] = profile.ProbeResult{Pool: pools[i], Node: pr.Node, Pod: pr.Pod, Report: pr.Report, Err: pr.Err, Interfaces: rdmaInterfaces(pr.Networks)}
	}
	det.ApplyProbes(results)
	return nil
}

// rdmaInterfaces are the pod's secondary (Multus) interfaces with their IPv4 addresses: the
// addresses a RoCE v2 GID of the pod's own must carry.
func rdmaInterfaces(nets []probe.PodNetwork) []profile.PodInterface {
	var out []profile.PodInterface
	for _, n := range nets {
		if n.Default {
			continue
		}
		in := profile.PodInterface{Network: n.Name, Name: n.Interface, Addrs: n.IPv4()}
		if len(in.Addrs) > 0 {
			out = append(out, in)
		}
	}
	return out
}
