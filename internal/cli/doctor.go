package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	ucli "github.com/urfave/cli/v2"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ain-hpc/ain/internal/ainerr"
	"github.com/ain-hpc/ain/pkg/ibport"
	"github.com/ain-hpc/ain/pkg/input"
	"github.com/ain-hpc/ain/pkg/mpilauncher"
	"github.com/ain-hpc/ain/pkg/nccl"
	"github.com/ain-hpc/ain/pkg/probe"
	"github.com/ain-hpc/ain/pkg/profile"
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

func (o *doctorOptions) validate(minFiles, maxFiles int, what string) error {
	switch o.Output {
	case "text", "json":
	default:
		return ainerr.Usagef("-o must be text or json, got %q", o.Output)
	}
	if len(o.Files) < minFiles {
		return ainerr.Usagef("give %s as FILE (or - for standard input)", what)
	}
	if maxFiles > 0 && len(o.Files) > maxFiles {
		return ainerr.Usagef("give one %s (got %d files)", what, len(o.Files))
	}
	stdin := 0
	for _, f := range o.Files {
		if f == "-" {
			stdin++
		}
	}
	if stdin > 1 {
		return ainerr.Usagef("standard input (-) can be read only once")
	}
	return nil
}

// openInput opens a FILE argument; "-" is standard input. Its reads end with ctx (an interrupt),
// even one waiting on a terminal or on a pipe whose writer never closes it; the command then says
// so with readInterrupted.
func (a *App) openInput(ctx context.Context, name string) (io.ReadCloser, error) {
	if name == "-" {
		return io.NopCloser(input.Reader(ctx, a.Streams.In)), nil
	}
	f, err := os.Open(name)
	if err != nil {
		return nil, ainerr.New(ainerr.Failure, err, "") // *PathError already reads "open NAME: ..."
	}
	if st, err := f.Stat(); err == nil && st.IsDir() {
		// Opening a directory succeeds; reading it fails with a bare "is a directory".
		f.Close()
		return nil, ainerr.Usagef("%s is a directory: give the file(s) in it", name)
	}
	return struct {
		io.Reader
		io.Closer
	}{input.Reader(ctx, f), f}, nil
}

// readInterrupted is the error of an offline command interrupted while reading input name, or
// nil when ctx is not done: checked after every read, whatever the reader returned (a parser may
// stop at a read error without returning it, and a verdict on part of the input is wrong).
func readInterrupted(ctx context.Context, name string) error {
	if ctx.Err() == nil {
		return nil
	}
	return ainerr.New(ainerr.Cancelled, fmt.Errorf("interrupted while reading %s: no verdict", inputName(name)), "")
}

// inputError is the error of reading input name (its parser's, or the reader's): an interrupt
// when ctx is done, else code with the input named. A line too long for its reader, or an input
// too large, gets a hint saying what such an input is.
func inputError(ctx context.Context, name string, code ainerr.Code, err error) error {
	if ierr := readInterrupted(ctx, name); ierr != nil {
		return ierr
	}
	var long *input.LineTooLongError
	var large *input.TooLargeError
	hint := ""
	switch {
	case errors.As(err, &long):
		hint = "this is not the text this command reads (binary data, or another file), or its lines were joined (newlines lost)"
	case errors.As(err, &large):
		hint = "this is not the text this command reads, or cut the part it needs out of the file"
	}
	if large != nil {
		large.Name = inputName(name) // the parser's name for it may be "input"
	} else if !strings.HasPrefix(err.Error(), inputName(name)) {
		err = fmt.Errorf("%s: %w", inputName(name), err)
	}
	return ainerr.New(code, err, hint)
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
		rc, err := a.openInput(ctx, name)
		if err != nil {
			return err
		}
		label := name
		if len(o.Files) == 1 {
			label = "" // one input: line numbers alone are unambiguous
		} else if name == "-" {
			label = "stdin"
		}
		err = an.Feed(label, rc)
		rc.Close()
		if err != nil {
			return inputError(ctx, name, ainerr.Failure, err)
		}
		if err := readInterrupted(ctx, name); err != nil {
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
			continue
		}
		all.Ports = append(all.Ports, r.Ports...)
		all.Ready = all.Ready && r.Ready
		if all.Format != r.Format {
			all.Format += "+" + r.Format
		}
		if all.GIDIndex != nil && (r.GIDIndex == nil || *r.GIDIndex != *all.GIDIndex) {
			all.GIDIndex = nil
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

// parseInput opens input name (a file; - for stdin), gives it to parse and closes it. A parse
// error names the input (inputError); an interrupt while reading is exit 130.
func parseInput[T any](ctx context.Context, a *App, name string, parse func(io.Reader) (T, error)) (T, error) {
	var zero T
	rc, err := a.openInput(ctx, name)
	if err != nil {
		return zero, err
	}
	defer rc.Close()
	v, err := parse(rc)
	if err != nil {
		return zero, inputError(ctx, name, ainerr.Failure, err)
	}
	if err := readInterrupted(ctx, name); err != nil {
		return zero, err
	}
	return v, nil
}

// nodeProbeSetup is what a probe of one node (--node) needs: the profile (--profile), the
// clients, the probe options (--image, --timeout), and the node, which must exist.
type nodeProbeSetup struct {
	profile *profile.Profile
	opts    probe.Options
	node    *corev1.Node
}

func (a *App) nodeProbe(ctx context.Context, profilePath, node, image string, timeout time.Duration) (*nodeProbeSetup, error) {
	in := &recipeInput{Profile: profilePath}
	p, err := in.loadProfile(a.Getenv)
	if err != nil {
		return nil, err
	}
	kc, opts, err := a.probeSetup(nil, p, image, timeout)
	if err != nil {
		return nil, err
	}
	n, err := kc.Kube.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
	if err != nil {
		return nil, kc.Classify(err, "get node "+node)
	}
	return &nodeProbeSetup{profile: p, opts: opts.ProbeOptions(), node: n}, nil
}

// probeInterrupted is the error of a --node probe stopped by an interrupt, in profile detect's
// words (probe.Run deletes the probe pods also when ctx is cancelled); nil while ctx is not done.
// Checked before any probe error: an interrupted probe is no probe failure, and its hint to run
// the command by hand would be wrong.
func probeInterrupted(ctx context.Context, started bool) error {
	switch {
	case ctx.Err() == nil:
		return nil
	case !started:
		return ainerr.New(ainerr.Cancelled, errors.New("interrupted before a probe pod was created: nothing was left"), "")
	}
	return ainerr.New(ainerr.Cancelled, errors.New("interrupted: probe pods deleted"), "")
}

// inputName is how an error names a doctor input: its path, or "stdin" for -.
func inputName(name string) string {
	if name == "-" {
		return "stdin"
	}
	return name
}
