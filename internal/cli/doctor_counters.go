package cli

import (
	"context"
	"time"

	ucli "github.com/urfave/cli/v2"

	"github.com/ain-hpc/ain/internal/ainerr"
	"github.com/ain-hpc/ain/pkg/counters"
	"github.com/ain-hpc/ain/pkg/preflight"
)

type doctorCountersOptions struct {
	doctorOptions
	ExpectBytes string
	All         bool
	// Node, Interval, Profile, Image and Timeout: live snapshots taken by probe pods on a node.
	Node     string
	Interval time.Duration
	Profile  string
	Image    string
	Timeout  time.Duration
}

func (a *App) doctorCountersCommand() *ucli.Command {
	o := &doctorCountersOptions{}
	return &ucli.Command{
		Name:      "counters",
		Usage:     "RDMA NIC counter deltas between two snapshots: bytes per HCA, ECN/CNP, PFC pause, loss and link errors",
		ArgsUsage: "SNAPSHOT [SNAPSHOT2] (before and after a workload; - for stdin) | --node NODE [--interval D]",
		Description: "A snapshot is any mix of: the sysfs counters as `grep -H` prints them (\n  " + counters.SnapshotCommand + "\n" +
			"), `ethtool -S <netdev>` (PFC pause per priority, discards), `rdma statistic show`, or a listing with a\n" +
			"header naming the device and port (mlx5_0 port 1) followed by name/value lines.\n" +
			"port_xmit_data and port_rcv_data count 4-byte words: bytes are 4 x the delta.\n" +
			"Findings: packet loss (out_of_sequence, packet_seq_err, local_ack_timeout_err, discards) and error counters\n" +
			"(link_downed, symbol_error, CQE errors) are problems; ECN marks, CNPs and PFC pauses say congestion control\n" +
			"and PFC are working; ECN marks without CNPs mean DCQCN's notification point is off. With --expect-bytes, RDMA\n" +
			"ports that sent less than the workload had to send mean the traffic did not cross these HCAs.\n" +
			"With one snapshot: the counters, bytes since reset, and nonzero loss/error counters as warnings.\n" +
			"--node NODE takes the snapshots live: a probe pod on the node (holding the profile's RDMA resource, like a\n" +
			"rank) reads the sysfs counters, and again after --interval (0: one snapshot); run the workload meanwhile.\n\n" +
			"Exit status: 0, or 5 (check failed) when a delta shows a problem or counters went backwards (deltas unknown); 1 when a file cannot be read or holds no counters; 2 on bad arguments.",
		Flags: []ucli.Flag{
			outputFlag(&o.Output, "text", "output format: text or json", "json"),
			&ucli.StringFlag{Name: "expect-bytes", Usage: "bytes the workload had to send from this node over RDMA between the snapshots (binary units: 96G, 512M)", Destination: &o.ExpectBytes},
			&ucli.BoolFlag{Name: "all", Usage: "text output: list every counter that moved, not only those ain has a meaning for", Destination: &o.All},
			&ucli.StringFlag{Name: "node", Usage: "take the snapshots live on this node with probe pods instead of reading files", Destination: &o.Node},
			&ucli.DurationFlag{Name: "interval", Value: 10 * time.Second, Usage: "with --node: time between the two snapshots (0: one snapshot)", Destination: &o.Interval, Action: nonNegativeDuration("interval")},
			&ucli.StringFlag{Name: "profile", Usage: "fabric profile file: its RDMA resource (with --node)", Destination: &o.Profile},
			&ucli.StringFlag{Name: "image", Usage: "the probe pod's image (with --node)", Destination: &o.Image, Action: imageReference("image")},
			&ucli.DurationFlag{Name: "timeout", Value: 2 * time.Minute, Usage: "how long each probe pod may take (with --node)", Destination: &o.Timeout, Action: positiveDuration("timeout")},
		},
		Action: func(c *ucli.Context) error {
			o.Files = c.Args().Slice()
			if o.Node != "" {
				return a.runDoctorCountersNode(c.Context, o)
			}
			return a.runDoctorCounters(c.Context, o)
		},
	}
}

func (a *App) runDoctorCounters(ctx context.Context, o *doctorCountersOptions) error {
	if err := o.validate(1, 2, "counter snapshot(s), BEFORE and AFTER"); err != nil {
		return err
	}
	opts, err := a.countersOptions(o)
	if err != nil {
		return err
	}
	snaps := make([]*counters.Snapshot, 0, 2)
	for _, name := range o.Files {
		s, err := parseInput(ctx, a, name, counters.Parse)
		if err != nil {
			return err
		}
		if err := s.NoCounters(inputName(name)); err != nil {
			return ainerr.New(ainerr.Failure, err,
				"take a snapshot with: "+counters.SnapshotCommand+" (and ethtool -S <netdev> for PFC pause counters)")
		}
		snaps = append(snaps, s)
	}
	return a.reportCounters(o, snaps, opts)
}

// countersOptions reads --expect-bytes, which needs two snapshots (two files, or --node with an interval).
func (a *App) countersOptions(o *doctorCountersOptions) (counters.Options, error) {
	var opts counters.Options
	if o.ExpectBytes == "" {
		return opts, nil
	}
	n, err := parseBytes(o.ExpectBytes)
	if err != nil {
		return opts, ainerr.Usagef("--expect-bytes: %v", err)
	}
	opts.ExpectBytes = uint64(n)
	if (o.Node == "" && len(o.Files) != 2) || (o.Node != "" && o.Interval == 0) {
		return opts, ainerr.Usagef("--expect-bytes needs two snapshots (before and after the workload): two files, or --node with a non-zero --interval")
	}
	return opts, nil
}

// runDoctorCountersNode takes the snapshots with probe pods on o.Node, --interval apart.
func (a *App) runDoctorCountersNode(ctx context.Context, o *doctorCountersOptions) error {
	if len(o.Files) > 0 {
		return ainerr.Usagef("give SNAPSHOT files or --node, not both")
	}
	opts, err := a.countersOptions(o)
	if err != nil {
		return err
	}
	kc, popts, err := a.nodeProbe(o.Profile, o.Image, o.Timeout)
	if err != nil {
		return nodeProbeError(ctx, nil, err, "")
	}
	snaps, err := preflight.NodeCounterSnapshots(ctx, popts, o.Node, o.Interval, a.progressLine)
	if err != nil {
		return nodeProbeError(ctx, kc, err, "take the snapshots on the node by hand and give the files: "+counters.SnapshotCommand)
	}
	return a.reportCounters(o, snaps, opts)
}

// reportCounters analyses one snapshot, or the deltas of two, and prints the report.
func (a *App) reportCounters(o *doctorCountersOptions, snaps []*counters.Snapshot, opts counters.Options) error {
	r := counters.Analyze(snaps, opts)
	return a.verdict(o.Output, r, func() error {
		r.WriteText(a.Streams.Out, counters.TextOptions{TTY: a.Streams.IsTTY, Deltas: len(snaps) == 2, All: o.All, Fix: withNext})
		return nil
	}, r.OK)
}
