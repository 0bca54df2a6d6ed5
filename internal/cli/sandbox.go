package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	ucli "github.com/urfave/cli/v2"

	"github.com/ain-hpc/ain/internal/ainerr"
	"github.com/ain-hpc/ain/pkg/sandbox"
)

type sandboxOptions struct {
	StateDir string
	// up
	Nodes, GPUs  int
	Fabric       string
	Scenario     string
	RDMAResource string
	RDMACount    int
	Forwards     ucli.StringSlice
	Timeout      time.Duration
	Stack        string
	StackSet     bool // --stack given: a sandbox of another stack in the state folder is an error
	RealPods     bool
	// status
	Output string
	// down
	Purge bool
}

func (a *App) sandboxCommand() *ucli.Command {
	o := &sandboxOptions{}
	stateFlag := &ucli.StringFlag{Name: "state-dir", Usage: "the sandbox's state folder (default: $AIN_SANDBOX_STATE, else $XDG_STATE_HOME/ain/sandbox)", Destination: &o.StateDir}
	return &ucli.Command{
		Name:  "sandbox",
		Usage: "a local Kubernetes control plane with simulated GPU/RDMA nodes, to rehearse without a cluster",
		Description: "Runs etcd, kube-apiserver, kube-controller-manager, kube-scheduler and the job controllers of a stack\n" +
			"(with their admission webhooks) for real on 127.0.0.1, and kwok for the nodes. Only the nodes and the containers\n" +
			"are simulated: pods go through their phases and print recorded log samples chosen by the scenario.\n" +
			"Stacks: current (the default) runs mpi-operator " + sandbox.MPIOperatorVersion + " (kubeflow.org/v2beta1 MPIJob), JobSet " + sandbox.JobSetVersion + "\n" +
			"and Kubeflow Trainer " + sandbox.TrainerVersion + " (trainer.kubeflow.org/v1alpha1 TrainJob); legacy runs the training-operator " + sandbox.TrainingOperatorVersion + "\n" +
			"(kubeflow.org/v1 PyTorchJob, MPIJob). One stack per sandbox: both own mpijobs.kubeflow.org.\n" +
			"The binaries are built from Go modules on first use (minutes) into $AIN_SANDBOX_CACHE or ~/.cache/ain.\n\n" +
			"Examples:\n" +
			"  ain sandbox up --nodes 3 --scenario ib-port-init\n" +
			"  eval \"$(ain sandbox env)\"; kubectl get nodes\n" +
			"  ain sandbox down --purge",
		Subcommands: []*ucli.Command{
			{
				Name:  "up",
				Usage: "start the sandbox (builds its binaries on first use); reports the running one if already up",
				Flags: []ucli.Flag{
					stateFlag,
					&ucli.IntFlag{Name: "nodes", Value: sandbox.DefaultNodes, Usage: "simulated GPU nodes (gpu-node-1..N)", Destination: &o.Nodes, Action: intBetween("nodes", 1, sandbox.MaxNodes)},
					&ucli.IntFlag{Name: "gpus-per-node", Value: sandbox.DefaultGPUsPerNode, Usage: "allocatable nvidia.com/gpu per node", Destination: &o.GPUs, Action: intBetween("gpus-per-node", 1, sandbox.MaxGPUsPerNode)},
					&ucli.StringFlag{Name: "fabric", Value: sandbox.DefaultFabric, Usage: "ib or roce: what the simulated ports and NCCL logs show", Destination: &o.Fabric},
					&ucli.StringFlag{Name: "scenario", Value: sandbox.DefaultScenario, Usage: "one of: " + strings.Join(sandbox.Scenarios(), ", "), Destination: &o.Scenario},
					&ucli.StringFlag{Name: "rdma-resource", Value: sandbox.DefaultRDMAResource, Usage: "the RDMA device plugin's resource name", Destination: &o.RDMAResource},
					&ucli.IntFlag{Name: "rdma-count", Value: sandbox.DefaultRDMACount, Usage: "allocatable RDMA resource per node", Destination: &o.RDMACount, Action: intBetween("rdma-count", 1, sandbox.MaxRDMACount)},
					&ucli.StringSliceFlag{Name: "forward", Usage: "PODPORT=HOST:PORT: port-forwards to any sandbox pod's PODPORT reach this local address (repeatable)", Destination: &o.Forwards},
					&ucli.DurationFlag{Name: "timeout", Value: 3 * time.Minute, Usage: "start-up timeout (not counting the first build)", Destination: &o.Timeout, Action: positiveDuration("timeout")},
					&ucli.BoolFlag{Name: "real-pods", Value: true, Usage: "run the pods of the mapped images as real processes (nccl-tests: sshd, Open MPI; the training image: torchrun with gloo; needs root and scripts/debian-packages.sh, else the sandbox says why and plays recorded samples); --real-pods=false plays every pod from samples; see docs/sandbox-real-pods.md", Destination: &o.RealPods},
					stackFlag(&o.Stack, string(sandbox.DefaultStack), "the job controllers to run: current (mpi-operator, JobSet, Trainer v2) or legacy (training-operator v1); without it, a sandbox already in the state folder keeps its own"),
				},
				Action: func(c *ucli.Context) error {
					o.StackSet = c.IsSet("stack")
					return a.runSandboxUp(c.Context, o)
				},
			},
			{
				Name:   "build",
				Usage:  "only build the sandbox's binaries into the cache (CI warms it with this)",
				Flags:  []ucli.Flag{stackFlag(&o.Stack, "", "build only this stack's components (current or legacy); default: every stack's")},
				Action: func(c *ucli.Context) error { return a.runSandboxBuild(c.Context, o) },
			},
			{
				Name:   "status",
				Usage:  "components, pids, ports, versions, nodes with allocatable, webhook",
				Flags:  []ucli.Flag{stateFlag, outputFlag(&o.Output, "", "json for machines; default a table", "json")},
				Action: func(c *ucli.Context) error { return a.runSandboxStatus(c.Context, o) },
			},
			{
				Name:   "kubeconfig",
				Usage:  "print the path of the sandbox's kubeconfig",
				Flags:  []ucli.Flag{stateFlag},
				Action: func(c *ucli.Context) error { return a.runSandboxKubeconfig(o, false) },
			},
			{
				Name:   "env",
				Usage:  "print `export KUBECONFIG=...` for eval \"$(ain sandbox env)\"",
				Flags:  []ucli.Flag{stateFlag},
				Action: func(c *ucli.Context) error { return a.runSandboxKubeconfig(o, true) },
			},
			{
				Name:  "down",
				Usage: "stop every process of the sandbox, by pid; --purge also removes its state",
				Flags: []ucli.Flag{stateFlag,
					&ucli.BoolFlag{Name: "purge", Usage: "also remove the state folder (etcd data, certificates, kubeconfig, logs)", Destination: &o.Purge}},
				Action: func(c *ucli.Context) error { return a.runSandboxDown(c.Context, o) },
			},
			{
				// The sandbox's container-side simulation, started in the background by `up`.
				Name:   "agent",
				Hidden: true,
				Flags:  []ucli.Flag{stateFlag},
				Action: func(c *ucli.Context) error { return a.runSandboxAgent(c.Context, o) },
			},
		},
	}
}

func (a *App) runSandboxBuild(ctx context.Context, o *sandboxOptions) error {
	cache, err := sandbox.CacheDir(a.Getenv)
	if err != nil {
		return err
	}
	comps, err := sandbox.Build(ctx, cache, o.Stack, a.Now, a.Streams.Err, func(line string) { fmt.Fprintf(a.Streams.Err, "  (%s)\n", line) })
	if err != nil {
		mapped, _ := libError(err, code[*sandbox.ConfigError](ainerr.Usage))
		return mapped
	}
	for _, comp := range comps {
		fmt.Fprintf(a.Streams.Out, "%s %s\t%s\n", comp.Name, comp.Version, comp.Dir(cache))
	}
	return nil
}

func (a *App) sandboxDir(o *sandboxOptions) (string, error) {
	if o.StateDir != "" {
		return o.StateDir, nil
	}
	return sandbox.StateDir(a.Getenv)
}

func (a *App) runSandboxUp(ctx context.Context, o *sandboxOptions) error {
	dir, err := a.sandboxDir(o)
	if err != nil {
		return err
	}
	cache, err := sandbox.CacheDir(a.Getenv)
	if err != nil {
		return err
	}
	cfg, err := sandbox.Request{Config: sandbox.Config{Nodes: o.Nodes, GPUsPerNode: o.GPUs, Fabric: o.Fabric, Scenario: o.Scenario,
		RDMAResource: o.RDMAResource, RDMACount: o.RDMACount, SimulatePods: !o.RealPods},
		StackName: o.Stack, StackSet: o.StackSet, Forwards: o.Forwards.Value()}.Resolve(dir)
	if err != nil {
		return ainerr.New(ainerr.Usage, err, "")
	}
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	// Ctrl-C during up stops what was started (Up cleans up on error).
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	st, running, err := sandbox.Start(ctx, sandbox.Options{
		Dir: dir, Cache: cache, Config: cfg, Out: a.Streams.Err, Timeout: o.Timeout,
		AgentCommand: []string{exe, "sandbox", "agent", "--state-dir", dir},
	})
	if mapped, ok := libError(err, code[*sandbox.StackMismatchError](ainerr.Usage), code[*sandbox.StateDirError](ainerr.Usage),
		code[*sandbox.InterruptedError](ainerr.Cancelled), code[*sandbox.BuildError](ainerr.Failure)); ok {
		return mapped
	} else if err != nil {
		return ainerr.WithHint(err, "component logs are in "+sandbox.Layout{Dir: dir}.Logs()+"; every process it had started is stopped; run `ain sandbox up` to try again")
	}
	w := a.Streams.Out
	st.WriteUp(w, running, cfg, "run `ain sandbox down` first to change them")
	fmt.Fprintf(w, "Use it:  eval \"$(ain sandbox env)\"   (KUBECONFIG=%s)\n", st.Kubeconfig)
	return nil
}

// stackFlag is --stack.
func stackFlag(dst *string, value, usage string) *ucli.StringFlag {
	return &ucli.StringFlag{Name: "stack", Value: value, Usage: usage, Destination: dst}
}

func (a *App) runSandboxStatus(ctx context.Context, o *sandboxOptions) error {
	if o.Output != "" && o.Output != "json" {
		return ainerr.Usagef("-o %s: status prints json or a table", o.Output)
	}
	dir, err := a.sandboxDir(o)
	if err != nil {
		return err
	}
	s, err := sandbox.GetStatus(ctx, dir)
	if err != nil {
		if errors.Is(err, sandbox.ErrNotRunning) {
			return ainerr.New(ainerr.Failure, err, "start one with `ain sandbox up`")
		}
		return err
	}
	if o.Output == "json" {
		return a.writeJSON(s)
	}
	s.WriteText(a.Streams.Out, "run `ain sandbox up` to restart it or `ain sandbox down`")
	if !s.Running {
		return quiet(ainerr.Failure)
	}
	return nil
}

func (a *App) runSandboxKubeconfig(o *sandboxOptions, export bool) error {
	dir, err := a.sandboxDir(o)
	if err != nil {
		return err
	}
	st, err := sandbox.LoadState(dir)
	if err != nil {
		return ainerr.New(ainerr.Failure, fmt.Errorf("%w in %s", sandbox.ErrNotRunning, dir), "start one with `ain sandbox up`")
	}
	if export {
		fmt.Fprintln(a.Streams.Out, st.ExportLine())
		return nil
	}
	fmt.Fprintln(a.Streams.Out, st.Kubeconfig)
	return nil
}

func (a *App) runSandboxDown(ctx context.Context, o *sandboxOptions) error {
	dir, err := a.sandboxDir(o)
	if err != nil {
		return err
	}
	server, err := sandbox.Stop(ctx, dir, o.Purge, a.Streams.Err)
	if errors.Is(err, sandbox.ErrNotRunning) {
		fmt.Fprintf(a.Streams.Out, "No sandbox in %s.\n", dir)
	} else if err != nil {
		return err
	} else {
		fmt.Fprintln(a.Streams.Out, "Sandbox stopped.")
	}
	if o.Purge {
		// The sandbox's cached preflight results go with it (issue 19: --purge left them behind).
		n, err := a.preflightCache().PurgeCluster(server)
		if err != nil {
			return fmt.Errorf("removing the sandbox's cached preflight results: %w", err)
		}
		if n > 0 {
			fmt.Fprintf(a.Streams.Out, "Removed %d cached preflight result(s) of %s.\n", n, server)
		}
	}
	return nil
}

func (a *App) runSandboxAgent(ctx context.Context, o *sandboxOptions) error {
	dir := o.StateDir
	if dir == "" {
		dir = a.Getenv("AIN_SANDBOX_STATE")
	}
	if dir == "" {
		return ainerr.Usagef("sandbox agent: --state-dir is required")
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	return sandbox.RunAgent(ctx, dir, a.Streams.Err)
}
