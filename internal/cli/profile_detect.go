package cli

import (
	"context"
	"errors"
	"time"

	ucli "github.com/urfave/cli/v2"

	"github.com/ain-hpc/ain/internal/ainerr"
	"github.com/ain-hpc/ain/pkg/preflight"
	"github.com/ain-hpc/ain/pkg/probe"
	"github.com/ain-hpc/ain/pkg/profile/detect"
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
	po := probe.OptionsFor(kc, a.Getenv("AIN_PROBE_IMAGE"))
	if o.ProbeImage != "" {
		po.Image = o.ProbeImage
	}
	po.Timeout = o.ProbeTimeout
	det := &detect.Detector{Clients: kc, Probe: po, Progress: a.progressLine}
	d, err := det.Run(ctx, detect.Options{NoProbes: o.NoProbes, EveryNode: o.EveryNode})
	var ie detect.InterruptedError
	switch {
	case errors.As(err, &ie):
		return ainerr.New(ainerr.Cancelled, err, "")
	case err != nil:
		return err
	}
	if o.Output == "json" {
		return a.writeJSON(d)
	}
	return d.WriteYAML(a.Streams.Out, kc.Server, a.Now())
}
