package cli

import (
	"context"
	"time"

	ucli "github.com/urfave/cli/v2"

	"github.com/ain-hpc/ain/internal/ainerr"
	"github.com/ain-hpc/ain/pkg/preflight"
	"github.com/ain-hpc/ain/pkg/topo"
)

// doctorTopoOptions: the files, or a node to probe.
type doctorTopoOptions struct {
	doctorOptions
	Node    string
	Image   string
	Timeout time.Duration
	Profile string
}

func (a *App) doctorTopoCommand() *ucli.Command {
	o := &doctorTopoOptions{}
	return &ucli.Command{
		Name:      "topo",
		Usage:     "GPU/NIC topology: nearest NIC per GPU, ideal vs constrained layout, GPUDirect RDMA pairs, NCCL_IB_HCA",
		ArgsUsage: "FILE (output of `nvidia-smi topo -m`, or NCCL's topology dump from NCCL_TOPO_DUMP_FILE; - for stdin) | --node NODE",
		Description: "Path classes, nearest first: PIX (same PCIe switch), PXB (several bridges, no host bridge), PHB (through\n" +
			"the CPU's host bridge), NODE (between host bridges of one NUMA node), SYS (cross-socket).\n" +
			"Per GPU: the nearest NIC (on ties the first in matrix order; the others are listed) and the path class.\n" +
			"GPUDirect RDMA: NCCL uses it at PIX or PXB (default NCCL_NET_GDR_LEVEL=PXB) when the NIC and GPU support it.\n" +
			"Layout: ideal when every GPU has a NIC of its own at PIX or PXB; constrained when GPUs share a NIC, reach\n" +
			"it only through the CPU (PHB/NODE) or the other socket (SYS), or there are fewer NICs than GPUs.\n" +
			"Rails: each GPU gets a distinct NIC among its nearest where possible; NCCL_IB_HCA lists those NICs.\n" +
			"--node NODE runs `nvidia-smi topo -m` in a probe pod pinned to that node, holding all its GPUs and the\n" +
			"profile's RDMA resource (so it sees what a rank sees), and analyses its output (image: --image, default\n" +
			preflight.DefaultTopologyImage + "; the NVIDIA container toolkit mounts nvidia-smi into it).\n\n" +
			"Exit status: 0 for an ideal layout, 5 (check failed) for a constrained one or no NIC, 2 on bad arguments,\n" +
			"1 when the file cannot be read or holds no topology.",
		Flags: []ucli.Flag{
			outputFlag(&o.Output, "text", "output format: text or json", "json"),
			&ucli.StringFlag{Name: "node", Usage: "probe this GPU node live instead of reading a file", Destination: &o.Node},
			&ucli.StringFlag{Name: "image", Usage: "the probe pod's image (with --node; needs glibc for nvidia-smi)", Destination: &o.Image, Action: imageReference("image")},
			&ucli.DurationFlag{Name: "timeout", Value: 2 * time.Minute, Usage: "how long the probe pod may take (with --node)", Destination: &o.Timeout, Action: positiveDuration("timeout")},
			&ucli.StringFlag{Name: "profile", Usage: "fabric profile file: its GPU and RDMA resources (with --node)", Destination: &o.Profile},
		},
		Action: func(c *ucli.Context) error {
			o.Files = c.Args().Slice()
			if o.Node != "" {
				return a.runDoctorTopoNode(c.Context, o)
			}
			return a.runDoctorTopo(c.Context, o)
		},
	}
}

func (a *App) runDoctorTopo(ctx context.Context, o *doctorTopoOptions) error {
	if err := o.validate(1, 1, "topology (`nvidia-smi topo -m` output or an NCCL topology dump)"); err != nil {
		return err
	}
	t, err := parseInput(ctx, a, o.Files[0], topo.Parse)
	if err != nil {
		return err
	}
	return a.reportTopo(o, topo.Analyze(t))
}

// runDoctorTopoNode probes a node: nvidia-smi topo -m in a pod holding all its GPUs.
func (a *App) runDoctorTopoNode(ctx context.Context, o *doctorTopoOptions) error {
	if len(o.Files) > 0 {
		return ainerr.Usagef("give a FILE or --node, not both")
	}
	kc, opts, err := a.nodeProbe(o.Profile, o.Image, o.Timeout)
	if err != nil {
		return nodeProbeError(ctx, nil, err, "")
	}
	if o.Image == "" && (opts.ProbeImage == "" || opts.ProbeImage == preflight.DefaultProbeImage) {
		opts.ProbeImage = preflight.DefaultTopologyImage
	}
	t, err := preflight.NodeTopology(ctx, opts, o.Node, a.progressLine)
	if err != nil {
		return nodeProbeError(ctx, kc, err, "run `nvidia-smi topo -m` on the node by hand and give the file: ain doctor topo FILE")
	}
	return a.reportTopo(o, topo.Analyze(t))
}

func (a *App) reportTopo(o *doctorTopoOptions, r *topo.Report) error {
	return a.verdict(o.Output, r, func() error { r.WriteText(a.Streams.Out, a.Streams.IsTTY); return nil }, r.Layout == topo.LayoutIdeal)
}
