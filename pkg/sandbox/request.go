package sandbox

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/ain-hpc/ain/pkg/next"
)

// Request is what `up` is asked for: Config's fields as given (zero: the default), the stack by
// name (StackSet: it was given; without it a sandbox already in the folder keeps its own) and
// port-forwards as PODPORT=HOST:PORT.
type Request struct {
	Config
	StackName string
	StackSet  bool
	Forwards  []string
}

// Resolve is the configuration of a sandbox in dir that r asks for, defaulted and validated;
// its errors are ConfigErrors.
func (r Request) Resolve(dir string) (Config, error) {
	stack, err := ParseStack(r.StackName)
	if err != nil {
		return Config{}, &ConfigError{err}
	}
	if old, err := LoadState(dir); err == nil && !r.StackSet {
		// Without a stack asked for, `up` restarts or reports the sandbox already in the folder, whatever its stack.
		stack = old.Stack()
	}
	cfg := r.Config
	cfg.Stack = stack
	for _, f := range r.Forwards {
		pf, err := ParsePortForward(f)
		if err != nil {
			return Config{}, &ConfigError{fmt.Errorf("--forward: %v", err)}
		}
		cfg.PortForwards = append(cfg.PortForwards, pf)
	}
	cfg = cfg.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return Config{}, &ConfigError{err}
	}
	return cfg, nil
}

// ConfigError says a setting asked of the sandbox cannot be used; Err says which and why.
type ConfigError struct{ Err error }

func (e *ConfigError) Error() string { return e.Err.Error() }
func (e *ConfigError) Unwrap() error { return e.Err }

// InterruptedError says an interrupt stopped Start: the sandbox in Dir was not started, every
// process started is stopped; Building is the component whose build it cut ("" for none).
type InterruptedError struct{ Dir, Building string }

func (e *InterruptedError) Error() string {
	if e.Building != "" {
		return fmt.Sprintf("interrupted while building %s: the sandbox in %s was not started; nothing half-built is kept (a component counts as built only once its build finished)", e.Building, e.Dir)
	}
	return fmt.Sprintf("interrupted: the sandbox in %s was not started; every process it had started is stopped", e.Dir)
}

// Hint says how to start it again.
func (e *InterruptedError) Hint(cmd func(next.Command) string) string {
	if e.Building != "" {
		return "run `" + cmd("sandbox up") + "` to build and start it again"
	}
	return "run `" + cmd("sandbox up") + "` to start it again (`" + cmd("sandbox status") + "` shows it is not running)"
}

// Hint says where the build's modules come from.
func (e *BuildError) Hint(func(next.Command) string) string {
	return "the sandbox builds its binaries with the Go toolchain from the Go module proxy; check `go env GOPROXY` and network access"
}

// Start is Up whose error, when ctx ended, is an InterruptedError (the interrupt killed the go
// command of a build: not a build failure, and not the network), unless it says the state
// folder or its stack cannot be used.
func Start(ctx context.Context, opts Options) (*State, bool, error) {
	st, running, err := Up(ctx, opts)
	if err == nil || ctx.Err() == nil || errors.As(err, new(*StackMismatchError)) || errors.As(err, new(*StateDirError)) {
		return st, running, err
	}
	ie := &InterruptedError{Dir: opts.Dir}
	if be, ok := errors.AsType[*BuildError](err); ok {
		ie.Building = be.Component
	}
	return nil, false, ie
}

// Build builds the components of the stack named stack ("": every stack's) missing from cache
// and returns the components asked for. out gets the go commands' output; progress a line
// (BuildClock.Line) before each component built.
func Build(ctx context.Context, cache, stack string, now func() time.Time, out io.Writer, progress func(line string)) ([]Component, error) {
	comps := Components()
	var st Stack
	if stack != "" {
		var err error
		if st, err = ParseStack(stack); err != nil {
			return nil, &ConfigError{err}
		}
		comps = st.Components()
	}
	clock := NewBuildClock(Missing(cache, comps), now)
	step := func(done, total int, building string) {
		clock.Step(done, building)
		if done < total {
			progress(clock.Line())
		}
	}
	if stack != "" {
		return comps, EnsureStack(ctx, cache, st, out, step)
	}
	return comps, EnsureBinariesProgress(ctx, cache, out, step)
}

// ExportLine is the shell line that points kubectl at the sandbox: export KUBECONFIG=PATH, the
// path quoted when a shell would split or expand it.
func (s *State) ExportLine() string {
	p := s.Kubeconfig
	if strings.IndexFunc(p, func(r rune) bool {
		return !(r == '/' || r == '.' || r == '-' || r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9')
	}) >= 0 {
		p = "'" + strings.ReplaceAll(p, "'", `'\''`) + "'"
	}
	return "export KUBECONFIG=" + p
}

// Stop is Down that also says which API server the sandbox had (its state is read before purge
// removes it; "" when there was none).
func Stop(ctx context.Context, dir string, purge bool, out io.Writer) (server string, err error) {
	if st, err := LoadState(dir); err == nil {
		server = st.Server
	}
	return server, Down(ctx, dir, purge, out)
}
