package cli

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	ucli "github.com/urfave/cli/v2"

	"github.com/ain-hpc/ain/internal/ainerr"
	"github.com/ain-hpc/ain/pkg/bench"
	"github.com/ain-hpc/ain/pkg/image"
	"github.com/ain-hpc/ain/pkg/perftest"
)

type benchRDMAOptions struct {
	Profile, Fabric string
	Nodes           string
	Test            string
	GPU             bool
	QPs             int
	Device          string
	GIDIndex        int
	Size            string
	Iters           int
	Image           string
	Results         string
	Timeout         time.Duration
	Output          string
	TCP             bool
	TCPImage        string
	TCPStreams      int
	TCPSeconds      int
}

func (a *App) benchRDMACommand() *ucli.Command {
	o := &benchRDMAOptions{}
	return &ucli.Command{
		Name:  "rdma",
		Usage: "two-node RDMA with perftest (ib_write_bw, ib_read_bw, ib_write_lat) in a server and a client pod: line rate vs two-node RDMA vs NCCL busbw",
		Description: "Runs a perftest server pod and a client pod on two nodes (--nodes SERVER,CLIENT, else the first two\n" +
			"nodes with the profile's RDMA resource), each holding the RDMA resource and the profile's Multus networks,\n" +
			"with IPC_LOCK. The client is started once the server runs, with the server's address on the RDMA network\n" +
			"(Multus network-status, else the pod IP). Before that, the IB port probe reads both nodes' ports: their\n" +
			"rate is the line rate the run is judged against. On RoCE each pod chooses its own perftest -x at start: the\n" +
			"RoCE v2 GID whose address is its own interface's IPv4 (on a port shared by pods every pod's GID sits at\n" +
			"another index); --gid-index or a numeric gidIndex in the profile fixes it instead. The device is --device,\n" +
			"else the profile's first HCA, else the first ACTIVE port.\n" +
			"The table is the course's (10.6.1): line rate (profile, ports), two-node RDMA (this run), and the busbw of\n" +
			"the last `ain bench allreduce` saved under --results. Both pods are deleted at the end and on Ctrl-C.\n\n" +
			"Examples:\n" +
			"  ain bench rdma\n" +
			"  ain bench rdma --nodes gpu-node-1,gpu-node-2 --qps 4\n" +
			"  ain bench rdma --test ib_read_bw --gpu\n" +
			"  ain bench rdma --test ib_write_lat -o json\n" +
			"  ain bench rdma --tcp                      # with the TCP baseline (iperf3), course 3.10.1\n\n" +
			"Exit status: 0; 5 the bandwidth is under " + strconv.Itoa(int(bench.RDMAEfficiency*100)) + "% of the link's rate, a link is degraded (its ends run at\n" +
			"different rates) or perftest printed no result; 1 the pods could not run; 6 --timeout; 2 bad flags.",
		Flags: []ucli.Flag{
			&ucli.StringFlag{Name: "nodes", Usage: "SERVER,CLIENT node names (default: the first two nodes with the RDMA resource)", Destination: &o.Nodes},
			&ucli.StringFlag{Name: "test", Value: "ib_write_bw", Usage: "perftest test: " + strings.Join(perftest.Tests, ", "), Destination: &o.Test},
			&ucli.BoolFlag{Name: "gpu", Usage: "buffers in GPU memory (--use_cuda=0, GPUDirect RDMA); each pod requests one GPU", Destination: &o.GPU},
			&ucli.IntFlag{Name: "qps", Value: 1, Usage: "queue pairs, perftest -q (bandwidth tests)", Destination: &o.QPs, Action: intBetween("qps", 1, 1024)},
			&ucli.StringFlag{Name: "device", Usage: "RDMA device, perftest -d (mlx5_0 or mlx5_0:1)", DefaultText: "the profile's first HCA, else the first ACTIVE port", Destination: &o.Device},
			&ucli.IntFlag{Name: "gid-index", Value: -1, Usage: "RoCE GID index, perftest -x", DefaultText: "the profile's numeric gidIndex, else each pod's own RoCE v2 GID, chosen in the pod from its address", Destination: &o.GIDIndex, Action: intBetween("gid-index", -1, 255)},
			&ucli.StringFlag{Name: "size", Usage: "one message size, perftest -s (64K, 1M); default: every size from 2 B to 8 MiB (-a)", Destination: &o.Size},
			&ucli.IntFlag{Name: "iters", Usage: "iterations per size, perftest -n (at least 100)", DefaultText: "perftest's", Destination: &o.Iters},
			&ucli.StringFlag{Name: "image", Value: bench.DefaultPerftestImage, Usage: "image with sh and the perftest binaries on PATH (and CUDA support for --gpu)", Destination: &o.Image, Action: imageReference("image")},
			&ucli.StringFlag{Name: "results", Value: "ain-results", Usage: "`DIR` of saved ain bench allreduce results: the last one gives the NCCL column", Destination: &o.Results},
			&ucli.DurationFlag{Name: "timeout", Value: 5 * time.Minute, Usage: "give up after this long (exit 6); the pods are deleted", Destination: &o.Timeout, Action: positiveDuration("timeout")},
			&ucli.StringFlag{Name: "profile", Usage: "fabric profile file (default: $AIN_PROFILE, $XDG_CONFIG_HOME/ain/profile.yaml, else built-in)", Destination: &o.Profile},
			&ucli.StringFlag{Name: "fabric", Usage: "override the profile's fabric: ib or roce", Destination: &o.Fabric},
			&ucli.BoolFlag{Name: "tcp", Usage: "also run the TCP baseline (course 3.10.1): iperf3 server and client pods on the same nodes and networks", Destination: &o.TCP},
			&ucli.StringFlag{Name: "tcp-image", Value: bench.DefaultIperfImage, Usage: "image with sh and iperf3 for --tcp", Destination: &o.TCPImage, Action: imageReference("tcp-image")},
			&ucli.IntFlag{Name: "tcp-streams", Value: 8, Usage: "parallel TCP streams for --tcp, iperf3 -P", Destination: &o.TCPStreams, Action: intBetween("tcp-streams", 1, 128)},
			&ucli.IntFlag{Name: "tcp-seconds", Value: 10, Usage: "seconds of the --tcp run, iperf3 -t", Destination: &o.TCPSeconds, Action: intBetween("tcp-seconds", 1, 600)},
			outputFlag(&o.Output, "text", "text, or json (the whole result, both pods' output included)", "json"),
		},
		Action: func(c *ucli.Context) error {
			if c.NArg() > 0 {
				return ainerr.Usagef("bench rdma takes no arguments (got %s): name the nodes with --nodes SERVER,CLIENT", strings.Join(c.Args().Slice(), " "))
			}
			return a.runBenchRDMA(c.Context, o)
		},
	}
}

func (a *App) runBenchRDMA(parent context.Context, o *benchRDMAOptions) error {
	in := recipeInput{Profile: o.Profile, Fabric: o.Fabric}
	p, err := in.loadProfile(a.Getenv)
	if err != nil {
		return err
	}
	ro, notes, err := bench.PlanRDMA(p, bench.RDMAPlanInput{Test: o.Test, QPs: o.QPs, Iters: o.Iters, Size: o.Size,
		GPU: o.GPU, Device: o.Device, GIDIndex: o.GIDIndex, Nodes: o.Nodes})
	for _, n := range notes {
		fmt.Fprintln(a.Streams.Err, n)
	}
	var nr *bench.NotRDMAError
	switch {
	case errors.As(err, &nr):
		return ainerr.New(ainerr.Usage, err, "use --fabric ib or roce (a TCP baseline is `ain bench allreduce --fabric socket`)")
	case err != nil:
		return ainerr.Usagef("%v", err)
	}
	kc, err := a.clients()
	if err != nil {
		return err
	}
	a.sandboxNote(kc)
	ctx, cancel := context.WithTimeout(parent, o.Timeout)
	defer cancel()
	errw := a.Streams.Err
	for flag, ref := range map[string]string{"--image": o.Image, "--tcp-image": o.TCPImage} {
		if w := image.MovingWarning(ref); w != "" && (flag == "--image" || o.TCP) {
			fmt.Fprintf(errw, "WARNING: %s: %s\n", flag, w)
		}
	}
	run := &bench.RDMARun{Probe: a.preflightOptions(kc, nil, p), Now: a.Now, Progress: func(s string) { fmt.Fprintln(errw, s) }}
	ro.Image, ro.Timeout, ro.Results = o.Image, o.Timeout, o.Results
	if o.TCP {
		ro.TCP = &bench.TCPOptions{Image: o.TCPImage, Streams: o.TCPStreams, Seconds: o.TCPSeconds}
	}
	res, err := run.Run(parent, ctx, ro)
	if mapped, ok := libError(err, code[*bench.NoNodesError](ainerr.PreflightFailed), code[*bench.RDMAInterruptedError](ainerr.Cancelled)); ok {
		return mapped
	}
	if te, ok := errors.AsType[*bench.RDMATimeoutError](err); ok {
		return ainerr.New(ainerr.Timeout, fmt.Errorf("--%v", te), hintOf(te))
	}
	if pe, ok := errors.AsType[*bench.PerftestError](err); ok {
		for _, l := range pe.Tail {
			fmt.Fprintf(errw, "  | %s\n", l)
		}
	}
	if mapped, ok := libError(err, code[*bench.PerftestError](ainerr.Failure)); ok || err != nil {
		return mapped
	}
	return a.verdict(o.Output, res, func() error { res.WriteText(a.Streams.Out, a.Streams.IsTTY); return nil }, res.OK)
}
