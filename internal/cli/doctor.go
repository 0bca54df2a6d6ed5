package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	ucli "github.com/urfave/cli/v2"

	"github.com/ain-hpc/ain/internal/ainerr"
	"github.com/ain-hpc/ain/pkg/ibport"
	"github.com/ain-hpc/ain/pkg/input"
	"github.com/ain-hpc/ain/pkg/kube"
	"github.com/ain-hpc/ain/pkg/mpilauncher"
	"github.com/ain-hpc/ain/pkg/nccl"
	"github.com/ain-hpc/ain/pkg/preflight"
)

const doctorExitNote = "Exit status: 0 when nothing is wrong, 5 (check failed) when the verdict finds a problem,\n" +
	"2 on bad arguments, 1 when a file cannot be read. FILE - reads standard input."

// doctorCommand groups the offline diagnostics: each reads files (or stdin) and gives a verdict,
// its evidence lines and a fix.
func (a *App) doctorCommand() *ucli.Command {
	return &ucli.Command{
		Name:  "doctor",
		Usage: "diagnose NCCL logs, InfiniBand/RoCE port state, MPI launcher logs, hangs and GPU metrics (offline, on files or stdin)",
		Description: "Each subcommand prints a verdict first, then the evidence lines (file:line) and a concrete fix.\n" +
			"-o json gives the same as a stable JSON object for scripts and CI.\n\n" + doctorExitNote,
		Subcommands: []*ucli.Command{
			a.doctorNCCLLogCommand(),
			a.doctorIBPortsCommand(),
			a.doctorLauncherCommand(),
			a.doctorHangCommand(),
			a.doctorTopoCommand(),
			a.doctorCountersCommand(),
			a.doctorGPUCommand(),
		},
	}
}

// doctorOptions holds the flag values shared by the doctor subcommands.
type doctorOptions struct {
	Output string
	Files  []string
}

// validate checks the FILE arguments (-o is checked as it is parsed, outputFlag).
func (o *doctorOptions) validate(minFiles, maxFiles int, what string) error {
	if len(o.Files) < minFiles {
		return ainerr.Usagef("give %s as FILE (or - for standard input)", what)
	}
	if maxFiles > 0 && len(o.Files) > maxFiles {
		return ainerr.Usagef("give one %s (got %d files)", what, len(o.Files))
	}
	if err := input.CheckArgs(o.Files); err != nil {
		return ainerr.New(ainerr.Usage, err, "")
	}
	return nil
}

// openInput opens a FILE argument (input.Open: - is stdin, and reads end with ctx).
func (a *App) openInput(ctx context.Context, name string) (io.ReadCloser, error) {
	rc, err := input.Open(ctx, name, a.Streams.In)
	return rc, inputFailure(err, ainerr.Failure)
}

// readInterrupted is the error (exit 130) of input name's read when ctx is done, else nil.
func readInterrupted(ctx context.Context, name string) error {
	return inputFailure(input.Interrupted(ctx, name), ainerr.Cancelled)
}

// inputError is the error of reading input name (its parser's, or the reader's) as input.Named
// words it, with code unless it is an interrupt.
func inputError(ctx context.Context, name string, code ainerr.Code, err error) error {
	return inputFailure(input.Named(ctx, name, err), code)
}

// inputFailure maps an error of pkg/input to its exit code (an interrupt 130, a directory 2,
// else code), with input.Advice as its hint.
func inputFailure(err error, code ainerr.Code) error {
	switch {
	case err == nil:
		return nil
	case errors.As(err, new(*input.InterruptedError)):
		code = ainerr.Cancelled
	case errors.As(err, new(*input.DirError)):
		code = ainerr.Usage
	}
	return ainerr.New(code, err, input.Advice(err))
}

// checkFailed is the error of a verdict that found a problem: its explanation is already printed.
func checkFailed() error { return quiet(ainerr.CheckFailed) }

// fileDoctor is a doctor subcommand on FILE... (- for stdin) and, when runJob is not nil, on a
// JOB instead (its logs read through the API server), with -o text|json; its description ends
// with the doctors' exit note.
func (a *App) fileDoctor(name, usage, args, desc string, run func(context.Context, *doctorOptions) error, runJob func(context.Context, *doctorOptions, string) error) *ucli.Command {
	o := &doctorOptions{}
	return &ucli.Command{
		Name: name, Usage: usage, ArgsUsage: args, Description: desc + "\n\n" + doctorExitNote,
		Flags: []ucli.Flag{outputFlag(&o.Output, "text", "output format: text or json", "json")},
		Action: func(c *ucli.Context) error {
			o.Files = c.Args().Slice()
			if job, ok := jobArg(o.Files); ok && runJob != nil {
				return runJob(c.Context, o, job)
			}
			return run(c.Context, o)
		},
	}
}

func (a *App) doctorNCCLLogCommand() *ucli.Command {
	return a.fileDoctor("nccl-log", "which transport NCCL used (IB, RoCE, sockets, a net plugin, none) and why",
		"FILE... (one log per rank, or an interleaved multi-rank log; - for stdin) | JOB (read every rank's log through the API server)",
		"Reads NCCL logs of any version from 2.3 to 2.30, with or without launcher prefixes ([1,0]<stdout>:, N:),\n"+
			"in constant memory, at about the speed of grep (repeated lines are recognised, not re-parsed). For a full\n"+
			"verdict run the job with NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,ENV,NET,GRAPH,TUNING.\n"+
			"Problems: socket transport, NET/IB : No device found, libibverbs missing in the image, NCCL_IB_HCA matching\n"+
			"nothing, /dev/shm errors, a missing net plugin, ranks on different transports, IB completion errors, and an\n"+
			"input with no NCCL line at all (empty, binary, or logged without NCCL_DEBUG).",
		a.runDoctorNCCLLog, a.runDoctorNCCLLogJob)
}

func (a *App) runDoctorNCCLLog(ctx context.Context, o *doctorOptions) error {
	if err := o.validate(1, 0, "the NCCL log(s)"); err != nil {
		return err
	}
	an := nccl.NewLogAnalyzer()
	for _, name := range o.Files {
		label := name
		if len(o.Files) == 1 {
			label = "" // one input: line numbers alone are unambiguous
		} else if name == "-" {
			label = "stdin"
		}
		if _, err := parseInput(ctx, a, name, func(r io.Reader) (any, error) { return nil, an.Feed(label, r) }); err != nil {
			return err
		}
	}
	return a.reportNCCLLog(o, an.Report())
}

func (a *App) reportNCCLLog(o *doctorOptions, r *nccl.LogReport) error {
	return a.verdict(o.Output, r, func() error { r.WriteText(a.Streams.Out, a.Streams.IsTTY, withNext); return nil }, r.OK())
}

func (a *App) doctorIBPortsCommand() *ucli.Command {
	return a.fileDoctor("ib-ports", "whether InfiniBand/RoCE ports are ACTIVE, why not, and the RoCE v2 GID index",
		"FILE... (output of ibstat, ibv_devinfo [-v], ibstatus, rdma link [-j] or the sysfs dump; - for stdin)",
		"A port NCCL can use is ACTIVE (physical state LinkUp); NCCL skips the others silently.\n"+
			"LinkUp + INIT: no subnet manager. Polling/Down: cable or peer. Disabled: administratively down.\n"+
			"For RoCE ports with GIDs (ibv_devinfo -v or the sysfs dump) it gives the NCCL_IB_GID_INDEX value.\n"+
			"The sysfs dump is what this prints on a node or in a pod (busybox is enough):\n  "+ibport.SysfsDumpCommandShown()+"",
		a.runDoctorIBPorts, nil)
}

func (a *App) runDoctorIBPorts(ctx context.Context, o *doctorOptions) error {
	if err := o.validate(1, 0, "the port state output(s)"); err != nil {
		return err
	}
	var all *ibport.Report
	for _, name := range o.Files {
		r, err := parseInput(ctx, a, name, ibport.Parse)
		if err != nil {
			return err
		}
		if all == nil {
			all = r
		} else {
			all.Merge(r)
		}
	}
	return a.verdict(o.Output, all, func() error { all.WriteText(a.Streams.Out, a.Streams.IsTTY); return nil }, all.Ready)
}

func (a *App) doctorLauncherCommand() *ucli.Command {
	return a.fileDoctor("launcher", "why an MPI launcher failed: started before its workers, host:slots given to ssh, ssh throttling, a worker lost mid-job",
		"FILE (the launcher pod's log; - for stdin) | JOB (an MPIJob: read its launcher's log through the API server)",
		"Verdicts: launcher-before-workers (ssh could not resolve or reach a worker, ORTE/PRRTE/Hydra could not\n"+
			"start its daemons, no job output before), config-error (ssh asked to resolve \"host:N\": the slots syntax reached ssh),\n"+
			"ssh-throttled (\"exchange_identification: Connection closed by remote host\": sshd MaxStartups, not a worker that is\n"+
			"not up: that one refuses), worker-lost (the daemon was lost after the job printed output: a worker died mid-job),\n"+
			"healthy, other (a failure of another kind), or empty / not-text / not-launcher-log (no launcher log to judge:\n"+
			"healthy needs a line a launch writes, such as ssh's known-hosts note or rank-tagged output).",
		a.runDoctorLauncher, a.runDoctorLauncherJob)
}

func (a *App) runDoctorLauncher(ctx context.Context, o *doctorOptions) error {
	if err := o.validate(1, 1, "the launcher log"); err != nil {
		return err
	}
	r, err := parseInput(ctx, a, o.Files[0], mpilauncher.Analyze)
	if err != nil {
		return err
	}
	return a.reportLauncher(o, r)
}

func (a *App) reportLauncher(o *doctorOptions, r *mpilauncher.Report) error {
	return a.verdict(o.Output, r, func() error { r.WriteText(a.Streams.Out, withNext); return nil }, r.OK())
}

// parseInput parses input name (input.Parse), its errors mapped by inputFailure.
func parseInput[T any](ctx context.Context, a *App, name string, parse func(io.Reader) (T, error)) (T, error) {
	v, err := input.Parse(ctx, name, a.Streams.In, parse)
	return v, inputFailure(err, ainerr.Failure)
}

// nodeProbe connects for a probe of one node (--node): the profile (--profile), the clients and
// the probe options (--image, --timeout).
func (a *App) nodeProbe(profilePath, image string, timeout time.Duration) (*kube.Clients, preflight.Options, error) {
	p, err := (&recipeInput{Profile: profilePath}).loadProfile(a.Getenv)
	if err != nil {
		return nil, preflight.Options{}, err
	}
	return a.probeSetup(nil, p, image, timeout)
}

// nodeProbeError maps the error of a --node probe (its setup's, or the preflight.Node* flow's;
// kc nil before the flow). An interrupt is checked first: an interrupted probe is no probe
// failure, and the hint byHand (to run the probe's command by hand) would be wrong.
func nodeProbeError(ctx context.Context, kc *kube.Clients, err error, byHand string) error {
	var intr *preflight.NodeInterruptedError
	var get *preflight.NodeGetError
	var held *preflight.GPUsHeldError
	var probe *preflight.NodeProbeError
	switch {
	case errors.As(err, &intr):
		return ainerr.New(ainerr.Cancelled, err, "")
	case ctx.Err() != nil:
		return ainerr.New(ainerr.Cancelled, &preflight.NodeInterruptedError{}, "")
	case errors.As(err, &get) && kc != nil:
		return kc.Classify(get.Err, "get node "+get.Node)
	case errors.As(err, &held):
		return ainerr.New(ainerr.Failure, err, byHand+"; or probe again when the node is free")
	case errors.As(err, &probe):
		return ainerr.New(ainerr.Failure, err, byHand)
	}
	return err // the setup's cluster error (kube.CallError) gets its exit code and advice from exitError
}

// progressLine writes a flow's progress line to stderr.
func (a *App) progressLine(s string) { fmt.Fprintln(a.Streams.Err, s) }

// inputName is how an error names a doctor input: its path, or "stdin" for -.
func inputName(name string) string { return input.Name(name) }
