package cli

import (
	"context"
	"errors"
	"fmt"
	"time"

	ucli "github.com/urfave/cli/v2"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/ain-hpc/ain/internal/ainerr"
	"github.com/ain-hpc/ain/pkg/kube"
	"github.com/ain-hpc/ain/pkg/preflight"
	"github.com/ain-hpc/ain/pkg/profile"
)

// profileDetectOptions are `ain profile detect`'s flags.
type profileDetectOptions struct {
	Output       string
	NoProbes     bool
	EveryNode    bool
	ProbeImage   string
	ProbeTimeout time.Duration
}

func (a *App) profileDetectCommand() *ucli.Command {
	o := &profileDetectOptions{}
	return &ucli.Command{
		Name:  "detect",
		Usage: "build a fabric profile from what the cluster says (node allocatable and labels, NetworkAttachmentDefinitions, probe pods)",
		Description: "Reads the nodes (GPU and RDMA device-plugin resources from allocatable; GPU product and link layer from labels)\n" +
			"and the Multus NetworkAttachmentDefinitions of all namespaces (CNI type, RDMA resource, IPAM subnet). Then, unless\n" +
			"--no-probes, it runs one probe pod per pool of alike GPU nodes (same instance type, GPU product and count, RDMA\n" +
			"resources), holding the RDMA resource and joining the RDMA networks, which reads /sys/class/infiniband: the HCAs\n" +
			"(ACTIVE ports: spec.hcas), their link layer (spec.fabric), rate (spec.lineRate) and, for RoCE, the GID index whose\n" +
			"type is RoCE v2 and whose address is the pod's own RDMA interface's (spec.gidIndex). Probe pods need create, watch\n" +
			"and delete on pods and get on pods/log in the namespace; without them the probed fields are listed as not detected,\n" +
			"naming the missing verb. Every field of the printed profile says where its value came from; where sources disagree\n" +
			"(labels vs ports, nodes at different rates) the conflict is listed.\n\n" +
			"Example:\n  ain profile detect > cluster.yaml && ain profile show --profile cluster.yaml",
		Flags: []ucli.Flag{
			outputFlag(&o.Output, "yaml", "yaml (a profile file with origin comments) or json", "json"),
			&ucli.BoolFlag{Name: "no-probes", Usage: "read the API only (no probe pods: for read-only users); HCAs, rate and GID index stay undetected", Destination: &o.NoProbes},
			&ucli.BoolFlag{Name: "every-node", Usage: "probe every GPU node, not one per pool (finds the node whose ports differ)", Destination: &o.EveryNode},
			&ucli.StringFlag{Name: "probe-image", Usage: "image of the probe pods (sh + grep; default $AIN_PROBE_IMAGE, else " + preflight.DefaultProbeImage + ")", Destination: &o.ProbeImage, Action: imageReference("probe-image")},
			&ucli.DurationFlag{Name: "probe-timeout", Value: 2 * time.Minute, Usage: "how long the probe pods may take", Destination: &o.ProbeTimeout, Action: positiveDuration("probe-timeout")},
		},
		Action: func(c *ucli.Context) error {
			if c.NArg() > 0 {
				return ainerr.Usagef("profile detect takes no arguments (got %q); redirect its output to a file", c.Args().First())
			}
			return a.runProfileDetect(c.Context, o)
		},
	}
}

func (a *App) runProfileDetect(ctx context.Context, o *profileDetectOptions) error {
	kc, err := a.clients()
	if err != nil {
		return err
	}
	a.sandboxNote(kc)
	lctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	nodes, err := kc.Kube.CoreV1().Nodes().List(lctx, metav1.ListOptions{})
	if err != nil {
		return kc.Classify(err, "list nodes")
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
	d := profile.Detect(nodes.Items, nads, nadErr)
	if o.NoProbes {
		d.NotProbed("--no-probes")
	} else if err := a.probeDetected(ctx, kc, d, nodes.Items, o); err != nil {
		return err
	}
	if o.Output == "json" {
		return a.writeJSON(d)
	}
	y, err := d.YAML(kc.Server, a.Now().UTC().Format(time.RFC3339))
	if err != nil {
		return err
	}
	_, err = a.Streams.Out.Write(y)
	return err
}

// probeDetected runs one probe pod per pool of alike GPU nodes and applies what they read. A
// user who may not run pods gets a warning and the fields listed as not detected, naming the
// verbs missing; only an interrupt is an error.
func (a *App) probeDetected(ctx context.Context, kc *kube.Clients, d *profile.Detected, nodes []corev1.Node, o *profileDetectOptions) error {
	pools := d.ProbePools(nodes, o.EveryNode)
	if len(pools) == 0 {
		d.NotProbed("no GPU node offers an RDMA resource: nothing for a probe pod to read")
		return nil
	}
	// The probe pods hold the detected RDMA resource and join the detected RDMA networks.
	p := *d.Profile
	p.Origins = nil
	opts := a.preflightOptions(kc, nil, &p)
	if o.ProbeImage != "" {
		opts.ProbeImage = o.ProbeImage
	}
	opts.ProbeTimeout = o.ProbeTimeout
	targets := make([]string, len(pools))
	for i, pl := range pools {
		targets[i] = pl.Probe
		fmt.Fprintf(a.Streams.Err, "probe pod on %s for pool %s (%d node(s)): holds %s", pl.Probe, pl.Name, len(pl.Nodes), p.Spec.RDMA.Resource)
		if len(p.Spec.Networks) > 0 {
			fmt.Fprintf(a.Streams.Err, ", joins %v", p.Spec.Networks)
		}
		fmt.Fprintln(a.Streams.Err)
	}
	probes, err := preflight.ProbeFabric(ctx, opts, targets)
	var fe *preflight.ProbeForbiddenError
	switch {
	case ctx.Err() != nil:
		return ainerr.New(ainerr.Cancelled, errors.New("interrupted: probe pods deleted"), "")
	case errors.As(err, &fe):
		why := fe.Error() + "; ask for them or run with --no-probes"
		fmt.Fprintf(a.Streams.Err, "WARN  probes skipped: %s\n", why)
		d.NotProbed(why)
		return nil
	case err != nil:
		fmt.Fprintf(a.Streams.Err, "WARN  probes skipped: %v\n", err)
		d.NotProbed(err.Error())
		return nil
	}
	results := make([]profile.ProbeResult, len(probes))
	for i, pr := range probes {
		results[i] = profile.ProbeResult{Pool: pools[i], Node: pr.Node, Pod: pr.Pod, Report: pr.Report, Err: pr.Err, Interfaces: rdmaInterfaces(pr.Networks)}
	}
	d.ApplyProbes(results)
	return nil
}

// rdmaInterfaces are the pod's secondary (Multus) interfaces with their IPv4 addresses: the
// addresses a RoCE v2 GID of the pod's own must carry.
func rdmaInterfaces(nets []preflight.PodNetwork) []profile.PodInterface {
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
