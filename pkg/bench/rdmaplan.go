package bench

import (
	"cmp"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/ain-hpc/ain/pkg/perftest"
	"github.com/ain-hpc/ain/pkg/profile"
	"github.com/ain-hpc/ain/pkg/recipe"
)

// DefaultPerftestImage runs both perftest pods: the allreduce recipe's nccl-tests image, so one
// pull serves both benches. coreweave/nccl-tests Dockerfile.ubuntu22 at 85f9143 (the tag's
// suffix; the tag is written once per commit by docker/metadata-action type=sha) builds
// coreweave/perftest 5b47ede with CUDA_H_PATH (ib_write_bw --use_cuda) and installs it on PATH
// (/usr/local/bin), with ibverbs-utils and sh. It is built for amd64 only (pkg/image): ain
// refuses a pair of nodes of another architecture instead of starting a pod that cannot exec.
// mellanox/cuda-perftest, which NVIDIA's GPU Operator documentation uses, publishes :latest only.
const DefaultPerftestImage = "ghcr.io/coreweave/nccl-tests:12.4.1-cudnn-devel-ubuntu22.04-nccl2.21.5-1-85f9143"

// DefaultIperfImage runs the TCP baseline: Debian with the iperf3 package (nerdalert/iperf3's
// Dockerfile, published as networkstatic/iperf3), so it has sh for ain's command. The image
// publishes no version tags, so it is pinned by digest: the one a running pod's status reported
// for networkstatic/iperf3:latest (imageID in a kubectl listing of the TriSLA project), also
// pinned in a Nomad job of another project; a digest names the same bytes on every node.
const DefaultIperfImage = "docker.io/networkstatic/iperf3@sha256:07dcca91c0e47d82d83d91de8c3d46b840eef4180499456b4fa8d6dadb46b6c8"

// RDMAPlanInput are the two-node bench's settings as the user gave them (`ain bench rdma`'s flags).
type RDMAPlanInput struct {
	Test       string
	QPs, Iters int
	Size       string // one message size (recipe.ParseBytes grammar); "": every size
	GPU        bool
	Device     string // DEVICE or DEVICE:PORT; "": the profile's first HCA, else chosen from the probe
	GIDIndex   int    // -1: none fixed
	Nodes      string // SERVER,CLIENT; "": the first two nodes with the RDMA resource
}

// NotRDMAError says the profile's fabric is not an RDMA one.
type NotRDMAError struct{ Fabric string }

func (e *NotRDMAError) Error() string {
	return "bench rdma measures RDMA, but the fabric is " + e.Fabric
}

// perftestFlags are the flags of perftest.Command's fields.
var perftestFlags = map[string]string{"Test": "--test", "QPs": "--qps", "CUDA": "--gpu", "Iters": "--iters", "Size": "--size", "Device": "--device"}

// PlanRDMA resolves in against p into a run's options (Profile, Command, Server, Client,
// GIDSource, GPU; the caller adds the images, timeout and results). notes are what the user
// should know about the settings. Errors: *NotRDMAError, else a *FlagError naming the flag.
func PlanRDMA(p *profile.Profile, in RDMAPlanInput) (o RDMAOptions, notes []string, err error) {
	if !p.RDMA() {
		return o, nil, &NotRDMAError{Fabric: string(p.Spec.Fabric)}
	}
	o = RDMAOptions{Profile: p, GPU: in.GPU, Command: perftest.Command{Test: in.Test, QPs: in.QPs, Iters: in.Iters}}
	if in.Size != "" {
		n, err := recipe.ParseBytes(in.Size)
		if err == nil && n < 1 {
			err = fmt.Errorf("%q: a size must be at least 1 byte", in.Size)
		}
		if err != nil {
			return o, nil, &FlagError{Flag: "--size", Err: err}
		}
		o.Command.Size = n
	}
	if in.GPU {
		gpu := 0
		o.Command.CUDA = &gpu
	}
	if err := planDevice(p, in.Device, &o.Command); err != nil {
		return o, nil, err
	}
	// A GID index the user fixed wins; else, on RoCE, each pod chooses its own (ChoosePort).
	if in.GIDIndex >= 0 {
		g := in.GIDIndex
		o.Command.GIDIndex, o.GIDSource = &g, fmt.Sprintf("--gid-index %d (given, not checked against the pods' addresses)", g)
		if p.Spec.Fabric == profile.FabricIB {
			notes = append(notes, "note: --gid-index on InfiniBand: perftest then sends a GRH with that GID; IB routes by LID without it")
		}
	} else if p.Spec.Fabric == profile.FabricRoCE {
		if g, err := strconv.Atoi(p.Spec.GIDIndex); err == nil && g >= 0 {
			o.Command.GIDIndex, o.GIDSource = &g, fmt.Sprintf("the profile's gidIndex %d (fixed: on a port shared by pods, set gidIndex: auto so each pod takes its own)", g)
		}
	}
	if err := o.Command.Validate(); err != nil {
		flag := "--test"
		var fe *perftest.FieldError
		if errors.As(err, &fe) {
			flag = cmp.Or(perftestFlags[fe.Field], flag)
		}
		return o, notes, &FlagError{Flag: flag, Err: err}
	}
	if in.Nodes != "" {
		parts := strings.Split(in.Nodes, ",")
		if len(parts) != 2 || strings.TrimSpace(parts[0]) == "" || strings.TrimSpace(parts[1]) == "" {
			return o, notes, &FlagError{Flag: "--nodes", Value: in.Nodes, Err: errors.New("two node names, SERVER,CLIENT")}
		}
		o.Server, o.Client = strings.TrimSpace(parts[0]), strings.TrimSpace(parts[1])
		if o.Server == o.Client {
			return o, notes, &FlagError{Flag: "--nodes", Value: in.Nodes, Err: errors.New("two different nodes (on one node the traffic never crosses the fabric)")}
		}
	}
	return o, notes, nil
}

// planDevice sets cmd's device and port from dev, else from the profile's first HCA.
func planDevice(p *profile.Profile, dev string, cmd *perftest.Command) error {
	if dev == "" && len(p.Spec.HCAs) > 0 {
		dev = strings.TrimPrefix(p.Spec.HCAs[0], "=")
	}
	if dev == "" {
		return nil
	}
	d, port, hasPort := strings.Cut(dev, ":")
	cmd.Device = d
	if hasPort {
		n, err := strconv.Atoi(port)
		if err != nil || n < 1 {
			return &FlagError{Flag: "--device", Value: dev, Err: errors.New("DEVICE or DEVICE:PORT, e.g. mlx5_0 or mlx5_0:1")}
		}
		cmd.Port = n
	}
	return nil
}
