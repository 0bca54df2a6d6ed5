package bench

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/netip"
	"strconv"
	"strings"
	"time"

	"github.com/ain-hpc/ain/pkg/image"
	"github.com/ain-hpc/ain/pkg/iperf"
	"github.com/ain-hpc/ain/pkg/perftest"
	"github.com/ain-hpc/ain/pkg/preflight"
	"github.com/ain-hpc/ain/pkg/probe"
	"github.com/ain-hpc/ain/pkg/profile"
)

// RDMARun runs the two-node RDMA bench (perftest in a server and a client pod, and optionally
// the iperf3 TCP baseline on the same nodes): it picks the nodes, probes their ports for the
// line rate, the device and the RoCE GID, runs the pair, reads and judges the result and puts
// the last saved allreduce beside it. It prints nothing: each step is a line given to Progress.
type RDMARun struct {
	// Probe is how the probe and bench pods run (clients, namespace, timeouts); its Profile and
	// Progress are the run's.
	Probe preflight.Options
	Now   func() time.Time
	// Progress receives every step, worded for a person; nil: none.
	Progress func(string)
}

// RDMAOptions are one run's inputs, resolved from flags and the profile.
type RDMAOptions struct {
	Profile *profile.Profile
	Command perftest.Command
	// Server and Client are the nodes ("": the first two with the profile's RDMA resource).
	Server, Client string
	// GIDSource says where a fixed GID index came from ("": none fixed).
	GIDSource string
	Image     string
	// GPU puts the buffers in GPU memory (Command.CUDA is set); each pod requests a GPU.
	GPU bool
	// Timeout is the bound the run was given (for the pods' own deadline and the messages).
	Timeout time.Duration
	// TCP runs the iperf3 baseline too, when not nil.
	TCP *TCPOptions
	// Results is the folder of saved allreduce results: the last one gives the NCCL column.
	Results string
}

// TCPOptions are the iperf3 baseline's.
type TCPOptions struct {
	Image            string
	Streams, Seconds int
}

// NoNodesError says fewer than two nodes can run the bench.
type NoNodesError struct {
	Resource string
	Found    int
	Why      string
}

func (e *NoNodesError) Error() string {
	return fmt.Sprintf("two nodes with %s are needed, found %d: %s", e.Resource, e.Found, e.Why)
}

// RDMAInterruptedError says the run was interrupted; Deleted names the pods that went with it.
type RDMAInterruptedError struct{ Deleted string }

func (e *RDMAInterruptedError) Error() string { return "interrupted: " + e.Deleted + " deleted" }

// RDMATimeoutError says the run's bound passed before perftest ended; its pods were deleted.
type RDMATimeoutError struct {
	Timeout time.Duration
	Err     error
}

func (e *RDMATimeoutError) Error() string {
	return fmt.Sprintf("timeout %s reached: %v", e.Timeout, e.Err)
}
func (e *RDMATimeoutError) Unwrap() error { return e.Err }

// PerftestError says perftest did not run to the end: Tail are the client's last lines,
// Problems what the pods found (no RoCE GID of their own address), Resource and Image what the
// pods asked for.
type PerftestError struct {
	Err             error
	Tail, Problems  []string
	Resource, Image string
}

func (e *PerftestError) Error() string {
	if len(e.Problems) > 0 {
		return fmt.Sprintf("perftest did not run to the end: %v; %s", e.Err, strings.Join(e.Problems, "; "))
	}
	return fmt.Sprintf("perftest did not run to the end: %v", e.Err)
}
func (e *PerftestError) Unwrap() error { return e.Err }

func (r *RDMARun) say(format string, args ...any) {
	if r.Progress != nil {
		r.Progress(fmt.Sprintf(format, args...))
	}
}

// Run runs the bench. parent's end is an interrupt (RDMAInterruptedError); ctx carries the run's
// bound (RDMATimeoutError). The result is judged (RDMAResult.OK) but a verdict that fails is not
// an error: the caller decides.
func (r *RDMARun) Run(parent, ctx context.Context, o RDMAOptions) (*RDMAResult, error) {
	p, cmd := o.Profile, o.Command
	po := r.Probe
	po.Profile, po.Progress = p, r.Progress
	// The pods' own deadline: the perftest image is large (CUDA), its first pull alone can take
	// minutes; the run's bound covers the whole command anyway.
	po.ProbeTimeout = o.Timeout
	gpus := 0
	if o.GPU {
		gpus = 1
	} else if f, ok := image.Known(o.Image); ok && f.NeedsGPUDriver {
		// Its perftest links libcuda.so.1, which the GPU runtime mounts only into a container
		// that holds a GPU; the buffers stay in host memory (no --use_cuda).
		gpus = 1
		r.say("note: %s's perftest is built with CUDA and needs the GPU driver: each pod requests one GPU; buffers stay in host memory (--gpu puts them in GPU memory; --image a perftest without CUDA needs no GPU)", o.Image)
	}
	if o.Server == "" {
		po.Nodes, po.GPUsPerNode = 2, gpus
		nodes, checks := preflight.CandidateNodes(ctx, po)
		if len(nodes) < 2 {
			why := ""
			for _, c := range checks {
				if c.Status != preflight.Pass {
					why = c.Message
					if len(c.Evidence) > 0 {
						why += " (" + strings.Join(c.Evidence, "; ") + ")"
					}
					break
				}
			}
			return nil, &NoNodesError{Resource: p.Spec.RDMA.Resource, Found: len(nodes), Why: why}
		}
		o.Server, o.Client = nodes[0], nodes[1]
	}
	res := &RDMAResult{Test: cmd.Test, Server: o.Server, Client: o.Client, Image: o.Image, Fabric: p.Spec.Fabric,
		ProfileLineRate: p.Spec.LineRate, ProfileGbps: p.LineRateGBps() * 8, GPUMemory: o.GPU, QPs: max(cmd.QPs, 1), Started: r.Now(),
		GIDIndexSource: o.GIDSource}
	// The ports of both nodes: the rate the link should run at, the device, the RoCE GID.
	r.say("probing the IB/RoCE ports of %s and %s (rate, state, GIDs)", o.Server, o.Client)
	probed := preflight.ProbePorts(ctx, po.ProbeOptions(), []string{o.Server, o.Client})
	ports, perr := PortRates(probed)
	if parent.Err() != nil {
		return nil, &RDMAInterruptedError{Deleted: "probe pods"}
	}
	res.ChoosePort(&cmd, probed[0], p.Spec.Fabric == profile.FabricRoCE)
	mem := "host memory"
	if o.GPU {
		mem = "GPU memory (--use_cuda=0)"
	}
	gid := GIDText(res.GIDIndex, p.Spec.Fabric)
	if cmd.GIDFromAddress {
		gid = "chosen in each pod from its own address"
	}
	device := cmd.Device
	if device == "" {
		device = "-"
	}
	r.say("%s: server on %s, client on %s, device %s, %d QP(s), GID index %s, %s, image %s",
		cmd.Test, o.Server, o.Client, device, res.QPs, gid, mem, o.Image)
	pr := probe.RunPair(ctx, po.ProbeOptions(), probe.PairSpec{
		Kind: "perftest", Server: o.Server, Client: o.Client, Image: o.Image, RDMA: true, PinMemory: true, GPUs: gpus,
		ServerScript: cmd.ServerScript(),
		ClientScript: func(ip string) string { return cmd.ClientScript(checkedIP(ip)) },
	})
	res.ServerIP, res.IPSource = pr.ServerIP, pr.IPSource
	ran := cmd
	if cmd.GIDFromAddress {
		if ch := res.UseGIDChoices(pr.ServerPod, pr.ClientPod, pr.ServerLog, pr.ClientLog); ch != nil {
			ran = cmd.Chosen(*ch)
		}
	}
	res.Command = ran.Args(pr.ServerIP)
	res.Finished = r.Now()
	if pr.Err != nil {
		switch {
		case parent.Err() != nil:
			return nil, &RDMAInterruptedError{Deleted: "the perftest pods were"}
		case errors.Is(ctx.Err(), context.DeadlineExceeded):
			return nil, &RDMATimeoutError{Timeout: o.Timeout, Err: pr.Err}
		}
		e := &PerftestError{Err: pr.Err, Problems: res.Problems, Resource: p.Spec.RDMA.Resource, Image: o.Image}
		if pr.ClientLog != nil {
			e.Tail = LastLines(pr.ClientLog, 10)
		}
		return nil, e
	}
	res.Analyze(pr.ClientLog, pr.ServerLog)
	res.Judge(ports, perr)
	if o.TCP != nil {
		r.tcpBaseline(ctx, po, o, res)
		if parent.Err() != nil {
			return nil, &RDMAInterruptedError{Deleted: "the iperf3 pods were"}
		}
	}
	if last, path, err := LastAllreduce(o.Results); err == nil {
		res.UseNCCL(last, path)
	} else {
		res.NCCLNote = err.Error()
	}
	return res, nil
}

// checkedIP keeps anything but an address out of the client's script.
func checkedIP(ip string) string {
	if _, err := netip.ParseAddr(ip); err != nil {
		return "invalid-address"
	}
	return ip
}

// tcpBaseline runs iperf3 between the same two nodes, on the same networks (no IPC_LOCK: TCP
// pins no memory), and puts the receiver's throughput beside the RDMA number.
func (r *RDMARun) tcpBaseline(ctx context.Context, po preflight.Options, o RDMAOptions, res *RDMAResult) {
	t := o.TCP
	r.say("TCP baseline: iperf3 -P %d -t %d, server on %s, client on %s, image %s", t.Streams, t.Seconds, o.Server, o.Client, t.Image)
	pr := probe.RunPair(ctx, po.ProbeOptions(), probe.PairSpec{
		Kind: "iperf3", Server: o.Server, Client: o.Client, Image: t.Image, RDMA: true,
		ServerScript: iperf.ServerScript(),
		ClientScript: func(ip string) string { return iperf.ClientScript(checkedIP(ip), t.Streams, t.Seconds) },
	})
	if pr.Err != nil {
		res.TCPNote = "the TCP baseline did not run to the end: " + pr.Err.Error()
		return
	}
	rep, err := iperf.Parse(bytes.NewReader(pr.ClientLog))
	switch {
	case err != nil:
		res.TCPNote = "reading iperf3's report: " + err.Error()
	case rep.Error != "" && rep.ReceivedBps == 0:
		res.TCPNote = "iperf3: " + rep.Error
	default:
		res.TCP = &TCPRef{Gbps: rep.Gbps(), Streams: rep.Streams, Seconds: rep.Duration, Retransmits: rep.Retransmits,
			CPUClient: rep.CPUHost, CPUServer: rep.CPURemote, Image: t.Image, ClientLog: string(pr.ClientLog)}
	}
}

// GIDText is how a run names its GID index (g nil: none fixed).
func GIDText(g *int, fabric string) string {
	switch {
	case g != nil:
		return strconv.Itoa(*g)
	case fabric == profile.FabricIB:
		return "- (InfiniBand routes by LID)"
	}
	return "- (none: perftest uses GID 0)"
}
