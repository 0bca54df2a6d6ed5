package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/ain-hpc/ain/pkg/sandbox"
)

// demoBuild builds the sandbox's components in the background while the demo's offline steps
// run, so a first run shows the course within seconds instead of after the ~12-minute cold build
// (issue 16). Only the demo's goroutine prints: line() is called between steps and while waiting.
type demoBuild struct {
	start time.Time
	mu    sync.Mutex
	clock *buildClock
	err   error
	fin   chan struct{}
}

// startDemoBuild starts the build of every component missing from cache; nil when none is.
func startDemoBuild(ctx context.Context, cache string) *demoBuild {
	var missing []string
	// The demo runs on the default stack (its sandbox is `ain sandbox up` without --stack).
	for _, c := range sandbox.DefaultStack.Components() {
		if !c.Built(cache) {
			missing = append(missing, c.Name)
		}
	}
	if len(missing) == 0 {
		return nil
	}
	b := &demoBuild{start: time.Now(), clock: newBuildClock(missing, time.Now), fin: make(chan struct{})}
	go func() {
		defer close(b.fin)
		// The per-component lines of EnsureBinaries are replaced by line(); a failure carries
		// the command and its output (BuildError).
		err := sandbox.EnsureStack(ctx, cache, sandbox.DefaultStack, io.Discard, func(done, total int, building string) {
			b.mu.Lock()
			b.clock.step(done, building)
			b.mu.Unlock()
		})
		b.mu.Lock()
		b.err = err
		b.mu.Unlock()
	}()
	return b
}

// line is the progress line: components done/total, elapsed, and the time left (buildClock).
func (b *demoBuild) line() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return "sandbox build: " + b.clock.line()
}

// buildClock follows a build of components (in build order) and words its progress: what is
// building, the time spent, and the time left from the components' known cold costs scaled by
// this machine's pace so far (sandbox.BuildEstimate).
type buildClock struct {
	comps    []string
	now      func() time.Time
	start    time.Time
	done     int
	building string
	since    time.Time // when the component building now started
}

func newBuildClock(comps []string, now func() time.Time) *buildClock {
	t := now()
	c := &buildClock{comps: comps, now: now, start: t, since: t}
	if len(comps) > 0 {
		c.building = comps[0]
	}
	return c
}

// step records that done components are built and building has started.
func (c *buildClock) step(done int, building string) {
	c.done, c.building, c.since = done, building, c.now()
}

func (c *buildClock) line() string {
	t := c.now()
	el := t.Sub(c.start).Round(time.Second)
	if c.done >= len(c.comps) {
		return fmt.Sprintf("%d/%d components done in %s", c.done, len(c.comps), el)
	}
	left := sandbox.BuildEstimate(c.comps, c.done, c.since.Sub(c.start), t.Sub(c.since))
	return fmt.Sprintf("%d/%d components done, building %s, %s elapsed, about %s left", c.done, len(c.comps), c.building, el, roundLeft(left))
}

// roundLeft rounds an estimate to what it can promise: 10 s under two minutes, else a minute.
func roundLeft(d time.Duration) time.Duration {
	if d < 2*time.Minute {
		return max(d.Round(10*time.Second), 10*time.Second)
	}
	return d.Round(time.Minute)
}

// wait prints the progress line every interval until the build ends, and returns its error.
func (b *demoBuild) wait(ctx context.Context, w io.Writer, every time.Duration) error {
	t := time.NewTicker(every)
	defer t.Stop()
	select {
	case <-b.fin:
	default:
		fmt.Fprintf(w, "⧗ %s\n", b.line())
	}
	for {
		select {
		case <-b.fin:
			b.mu.Lock()
			err := b.err
			b.mu.Unlock()
			if err == nil {
				fmt.Fprintf(w, "⧗ %s\n", b.line())
			}
			return err
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
			fmt.Fprintf(w, "⧗ %s\n", b.line())
		}
	}
}

// demoOfflineSteps are the course steps that need no cluster: what a recipe's fields mean and
// what it becomes, NCCL's cost model for the demo's fabric, and the doctor on the recorded NCCL log
// of one rank of the QLoRA job on InfiniBand (written into out from the sandbox's samples).
func demoOfflineSteps(out string) ([]demoStep, error) {
	d := sandbox.SampleData{Pod: "qlora-worker-1", Namespace: "default", Node: "gpu-node-2", NodeIndex: 2,
		PodIP: "10.244.2.5", Job: "qlora", Role: "worker", Rank: 1, WorldSize: 3, Fabric: "ib",
		Env: map[string]string{}, PID: 41, GPUs: 1, Time: time.Date(2026, 12, 2, 14, 25, 28, 0, time.UTC)}
	log, err := sandbox.RenderSample("nccl/pytorch-rank.txt", d)
	if err != nil {
		return nil, err
	}
	logFile := filepath.Join(out, "recorded-nccl-rank1.log")
	if err := os.WriteFile(logFile, []byte(log), 0o644); err != nil {
		return nil, err
	}
	fixed := func(args ...string) func() []string { return func() []string { return args } }
	return []demoStep{
		{"what each field of the QLoRA recipe means (12.2)", fixed("recipes", "show", "qlora"), false, ""},
		{"the Kubernetes objects it becomes, no cluster needed (12.2.1)", fixed("render", "qlora"), false, ""},
		{"NCCL's cost model: ring vs tree on 3 nodes x 8 GPUs, 400 Gb/s (10.4)", fixed("bench", "model", "--nodes", "3", "--gpus-per-node", "8", "--link", "400Gb"), false, ""},
		{"doctor on a recorded NCCL log of one rank: which transport it really used (10.6)", fixed("doctor", "nccl-log", logFile), false, ""},
	}, nil
}
