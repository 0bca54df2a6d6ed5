package sandbox

import (
	"context"
	"fmt"
	"io"
	"sync"
	"time"
)

// Missing lists the components of comps not yet built in cache, in build order.
func Missing(cache string, comps []Component) []string {
	var missing []string
	for _, c := range comps {
		if !c.Built(cache) {
			missing = append(missing, c.Name)
		}
	}
	return missing
}

// BuildClock follows a build of components (in build order) and words its progress: what is
// building, the time spent, and the time left from the components' known cold costs scaled by
// this machine's pace so far (BuildEstimate).
type BuildClock struct {
	comps    []string
	now      func() time.Time
	start    time.Time
	done     int
	building string
	since    time.Time // when the component building now started
}

// NewBuildClock starts a clock for a build of comps, in build order.
func NewBuildClock(comps []string, now func() time.Time) *BuildClock {
	t := now()
	c := &BuildClock{comps: comps, now: now, start: t, since: t}
	if len(comps) > 0 {
		c.building = comps[0]
	}
	return c
}

// Step records that done components are built and building has started.
func (c *BuildClock) Step(done int, building string) {
	c.done, c.building, c.since = done, building, c.now()
}

// Line is the progress: components done/total, what is building, elapsed, and about how long is left.
func (c *BuildClock) Line() string {
	t := c.now()
	el := t.Sub(c.start).Round(time.Second)
	if c.done >= len(c.comps) {
		return fmt.Sprintf("%d/%d components done in %s", c.done, len(c.comps), el)
	}
	left := BuildEstimate(c.comps, c.done, c.since.Sub(c.start), t.Sub(c.since))
	return fmt.Sprintf("%d/%d components done, building %s, %s elapsed, about %s left", c.done, len(c.comps), c.building, el, roundLeft(left))
}

// roundLeft rounds an estimate to what it can promise: 10 s under two minutes, else a minute.
func roundLeft(d time.Duration) time.Duration {
	if d < 2*time.Minute {
		return max(d.Round(10*time.Second), 10*time.Second)
	}
	return d.Round(time.Minute)
}

// BackgroundBuild builds a stack's missing components while its caller does other work; Line
// words the progress at any moment, Wait waits for the end.
type BackgroundBuild struct {
	mu    sync.Mutex
	clock *BuildClock
	err   error
	fin   chan struct{}
}

// StartBuild starts the build of every component of stack missing from cache; nil when none is.
// The per-component lines of the build are not written: Line replaces them; a failure carries
// the command and its output (BuildError).
func StartBuild(ctx context.Context, cache string, stack Stack, now func() time.Time) *BackgroundBuild {
	missing := Missing(cache, stack.Components())
	if len(missing) == 0 {
		return nil
	}
	b := &BackgroundBuild{clock: NewBuildClock(missing, now), fin: make(chan struct{})}
	go func() {
		defer close(b.fin)
		err := EnsureStack(ctx, cache, stack, io.Discard, func(done, total int, building string) {
			b.mu.Lock()
			b.clock.Step(done, building)
			b.mu.Unlock()
		})
		b.mu.Lock()
		b.err = err
		b.mu.Unlock()
	}()
	return b
}

// Line is the build's progress line.
func (b *BackgroundBuild) Line() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return "sandbox build: " + b.clock.Line()
}

// Wait calls progress with the progress line at once and every interval until the build ends
// (and once more when it succeeded), and returns its error; ctx's error when ctx ends first.
func (b *BackgroundBuild) Wait(ctx context.Context, every time.Duration, progress func(line string)) error {
	t := time.NewTicker(every)
	defer t.Stop()
	select {
	case <-b.fin:
	default:
		progress(b.Line())
	}
	for {
		select {
		case <-b.fin:
			b.mu.Lock()
			err := b.err
			b.mu.Unlock()
			if err == nil {
				progress(b.Line())
			}
			return err
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
			progress(b.Line())
		}
	}
}
