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
	done  int
	total int
	now   string
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
	b := &demoBuild{start: time.Now(), total: len(missing), now: missing[0], fin: make(chan struct{})}
	go func() {
		defer close(b.fin)
		// The per-component lines of EnsureBinaries are replaced by line(); a failure carries
		// the command and its output (BuildError).
		err := sandbox.EnsureStack(ctx, cache, sandbox.DefaultStack, io.Discard, func(done, total int, building string) {
			b.mu.Lock()
			b.done, b.total, b.now = done, total, building
			b.mu.Unlock()
		})
		b.mu.Lock()
		b.err = err
		b.mu.Unlock()
	}()
	return b
}

// line is the progress line: components done/total, elapsed, and an estimate from the pace of
// the components done so far (components differ in cost, kubernetes being the largest, so the
// estimate is rough until it is built).
func (b *demoBuild) line() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	el := time.Since(b.start).Round(time.Second)
	est := "estimate after the first component"
	if b.done > 0 && b.done < b.total {
		left := time.Duration(float64(time.Since(b.start)) / float64(b.done) * float64(b.total-b.done))
		est = fmt.Sprintf("about %s left", left.Round(10*time.Second))
	}
	if b.done == b.total {
		return fmt.Sprintf("sandbox build: %d/%d components done in %s", b.done, b.total, el)
	}
	return fmt.Sprintf("sandbox build: %d/%d components done, building %s, %s elapsed, %s", b.done, b.total, b.now, el, est)
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
