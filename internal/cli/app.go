// Package cli is ain's command tree: one file per command group, each command an options
// struct filled from flags and a plain function doing the work on it.
package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	ucli "github.com/urfave/cli/v2"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/ain-hpc/ain/internal/ainerr"
	"github.com/ain-hpc/ain/pkg/image"
	"github.com/ain-hpc/ain/pkg/kube"
	"github.com/ain-hpc/ain/pkg/lazyre"
	"github.com/ain-hpc/ain/pkg/preflight"
)

// Version is set at build time with -ldflags "-X github.com/ain-hpc/ain/internal/cli.Version=...".
var Version = "dev"

// Global holds the flags every command accepts.
type Global struct {
	Kubeconfig string
	Context    string
	Namespace  string
	NoColor    bool
	Verbose    int
}

// App carries what commands depend on: streams, clock, environment and the global flags.
type App struct {
	Streams Streams
	Now     func() time.Time
	Getenv  func(string) string
	Global  Global

	// sandboxNoted: the "workloads are simulated" note was already shown (once is enough).
	sandboxNoted bool
}

// Run builds the command tree, runs it on args (args[0] is the program name) and returns the exit code.
func Run(ctx context.Context, streams Streams, args []string) int {
	a := &App{Streams: streams, Now: time.Now, Getenv: os.Getenv}
	return a.Run(ctx, args)
}

// Run runs the command tree with this App's dependencies.
func (a *App) Run(ctx context.Context, args []string) int {
	a.Global = Global{} // flags of an earlier Run on this App must not leak into this one
	app := a.newApp()
	args, err := reorderArgs(app, args)
	if err != nil {
		fmt.Fprintf(a.Streams.Err, "error: %v\n", err)
		return int(ainerr.Usage)
	}
	err = app.RunContext(ctx, args)
	if err == nil {
		return 0
	}
	var exitErr ucli.ExitCoder
	if errors.As(err, &exitErr) && !isAinErr(err) {
		// urfave reports its own flag parsing errors this way.
		fmt.Fprintf(a.Streams.Err, "error: %v\n", err)
		return int(ainerr.Usage)
	}
	err = exitError(err)
	code := ainerr.CodeOf(err)
	if code == ainerr.Failure && isUsageFromCLI(err) {
		code = ainerr.Usage
	}
	if ctx.Err() != nil && errors.Is(err, context.Canceled) && code != ainerr.Cancelled {
		// An interrupt that reached a command through an error it did not classify (a read or
		// an API call cut short) is still an interrupt, whatever the command took it for.
		code = ainerr.Cancelled
	}
	if !errors.Is(err, errQuiet) {
		fmt.Fprintf(a.Streams.Err, "error: %v\n", err)
	}
	a.printHints(err)
	return int(code)
}

// errQuiet marks an error whose explanation the command already printed.
var errQuiet = errors.New("already reported")

// quiet wraps an *ainerr.Error so that Run prints nothing more than its hint.
func quiet(code ainerr.Code) error { return ainerr.New(code, errQuiet, "") }

func isAinErr(err error) bool {
	var e *ainerr.Error
	return errors.As(err, &e)
}

func isUsageFromCLI(err error) bool {
	msg := err.Error()
	return strings.HasPrefix(msg, "flag provided but not defined") ||
		strings.HasPrefix(msg, "invalid value") ||
		strings.Contains(msg, "Required flag")
}

// flagParseError is the Go flag package's "invalid value %q for flag -%s: %v" (urfave/cli parses
// with it): one dash, and "parse error" for a number that is not one.
var flagParseError = lazyre.New(`^invalid value "(.*)" for flag -([^:]+): (.*)$`)

// flagValueError says a bad flag value the way ain's own checks do: the flag as typed (--name),
// the value, and what the flag takes (from its type among flags; "parse error" says nothing).
func flagValueError(err error, flags []ucli.Flag) error {
	m := flagParseError().FindStringSubmatch(err.Error())
	if m == nil {
		return err
	}
	why := m[3]
	if why == "parse error" {
		why = "not a valid value (see --help)"
		for _, f := range flags {
			if !slices.Contains(f.Names(), m[2]) {
				continue
			}
			switch f.(type) {
			case *ucli.DurationFlag:
				why = "not a duration (e.g. 90s, 30m, 2h)"
			case *ucli.IntFlag, *ucli.Int64Flag, *ucli.UintFlag, *ucli.Uint64Flag:
				why = "not a whole number"
			case *ucli.Float64Flag:
				why = "not a number"
			case *ucli.BoolFlag:
				why = "give true or false"
			}
		}
	}
	return fmt.Errorf("--%s %q: %s", m[2], m[1], why)
}

func (a *App) newApp() *ucli.App {
	app := &ucli.App{
		Name:                      "ain",
		Usage:                     "RDMA-aware training, benchmarking and serving on GPU clusters",
		Version:                   Version,
		Reader:                    a.Streams.In,
		Writer:                    a.Streams.Out,
		ErrWriter:                 a.Streams.Err,
		EnableBashCompletion:      true,
		HideVersion:               true,
		DisableSliceFlagSeparator: true,
		Description: "ain turns recipe files into Kubernetes workloads (TrainJob, MPIJob, PyTorchJob, vLLM Deployments) with the RDMA\n" +
			"resources and NCCL settings of your fabric, checks that InfiniBand/RoCE is really used, and measures it.",
		Flags: []ucli.Flag{
			&ucli.StringFlag{Name: "kubeconfig", Usage: "path to the kubeconfig (default: $KUBECONFIG, ~/.kube/config, else the local sandbox)", Destination: &a.Global.Kubeconfig},
			&ucli.StringFlag{Name: "context", Usage: "kubeconfig context to use", Destination: &a.Global.Context},
			&ucli.StringFlag{Name: "namespace", Aliases: []string{"n"}, Usage: "namespace (default: the context's, else \"default\")", Destination: &a.Global.Namespace},
			&ucli.BoolFlag{Name: "no-color", Usage: "no colour in output (also NO_COLOR)", Destination: &a.Global.NoColor},
			&ucli.BoolFlag{Name: "verbose", Aliases: []string{"v"}, Usage: "more detail; repeat for more", Count: &a.Global.Verbose},
		},
		Commands: a.commands(),
		Before: func(c *ucli.Context) error {
			kube.QuietClientLogs(a.Global.Verbose)
			if err := checkNamespaceFlag(a.Global.Namespace); err != nil {
				return err
			}
			return a.checkProbeImageEnv(c.Args().Slice())
		},
		ExitErrHandler: func(*ucli.Context, error) {
			// Run maps errors to exit codes in one place.
		},
	}
	app.OnUsageError = usageError("ain")
	setUsageErrors(app.Commands, "ain")
	return app
}

// usageError reports a flag the command does not take in one line with a pointer to its help,
// instead of urfave/cli's whole help page.
func usageError(path string) ucli.OnUsageErrorFunc {
	return func(c *ucli.Context, err error, _ bool) error {
		var flags []ucli.Flag
		if c != nil && c.Command != nil {
			flags = c.Command.Flags
		}
		if c != nil && c.App != nil {
			flags = append(flags, c.App.Flags...)
		}
		return ainerr.New(ainerr.Usage, flagValueError(err, flags), "see `"+path+" --help`")
	}
}

func setUsageErrors(cmds []*ucli.Command, parent string) {
	for _, c := range cmds {
		path := parent + " " + c.Name
		c.OnUsageError = usageError(path)
		setUsageErrors(c.Subcommands, path)
	}
}

// commands lists the command groups; each lives in its own file.
func (a *App) commands() []*ucli.Command {
	return []*ucli.Command{
		a.versionCommand(),
		a.recipesCommand(),
		a.profileCommand(),
		a.renderCommand(),
		a.trainCommand(),
		a.listCommand(),
		a.statusCommand(),
		a.logsCommand(),
		a.deleteCommand(),
		a.releaseCommand(),
		a.sandboxCommand(),
		a.doctorCommand(),
		a.reportCommand(),
		a.benchCommand(),
		a.serveCommand(),
		a.modelsCommand(),
		a.chatCommand(),
		a.preflightCommand(),
		a.completionCommand(),
		a.demoCommand(),
	}
}

// checkNamespaceFlag refuses a -n/--namespace that no namespace can be named (a DNS-1123
// label), for every command: offline ones print it into objects (render), the others would
// send it to the API server, whose 404 or 400 does not name the flag.
func checkNamespaceFlag(ns string) error {
	if ns == "" {
		return nil
	}
	if errs := validation.IsDNS1123Label(ns); len(errs) > 0 {
		return ainerr.Usagef("-n/--namespace %q is not a namespace name: give at most 63 lowercase letters, digits and '-', starting and ending with a letter or digit (e.g. team-a)", ns)
	}
	return nil
}

// checkProbeImageEnv refuses a $AIN_PROBE_IMAGE that is not an image reference the kubelet would
// pull, as --probe-image is refused at parsing: the commands that run probe pods (preflight and
// the gates of train and bench, profile detect, doctor job/counters/topo, bench rdma) take their
// image from there, and such a pod sits in InvalidImageName until the probe timeout. args are the
// command line after the global flags; the other commands, and any --help, run anyway.
func (a *App) checkProbeImageEnv(args []string) error {
	if len(args) == 0 || !probingCommands[args[0]] || slices.Contains(args, "--help") || slices.Contains(args, "-h") {
		return nil
	}
	v := a.Getenv("AIN_PROBE_IMAGE")
	if v == "" {
		return nil
	}
	if err := image.Check(v); err != nil {
		return ainerr.Usagef("$AIN_PROBE_IMAGE %q: %v: set it to an image reference such as busybox:1.36, or unset it for the default (%s)", v, err, preflight.DefaultProbeImage)
	}
	return nil
}

// probingCommands are the top-level commands with a subcommand that makes probe pods (the
// callers of preflightOptions).
var probingCommands = map[string]bool{"preflight": true, "profile": true, "train": true, "bench": true, "doctor": true}
