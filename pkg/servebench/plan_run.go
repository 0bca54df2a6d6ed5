package servebench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/ain-hpc/ain/pkg/openaiclient"
)

// RunOptions are what a Plan's run needs besides the plan.
type RunOptions struct {
	// Via says how the endpoint was reached (Echo.Path).
	Via string
	Now func() time.Time
	// Progress, when set, is called after each measured request of a point (its label).
	Progress func(label string, done, failed, total int)
	// Wrote, when set, is told each file written (the result JSON of a point, the plot).
	Wrote func(file, what string)
}

// TerminalProgress is a RunOptions.Progress for a terminal: one line per point, rewritten
// as requests end.
func TerminalProgress(w io.Writer) func(label string, done, failed, total int) {
	return func(label string, done, failed, total int) {
		fmt.Fprintf(w, "\r%s: %d/%d requests done, %d failed", label, done, total, failed)
		if done == total {
			fmt.Fprintln(w)
		}
	}
}

// AllFailedError says every request of a point failed.
type AllFailedError struct {
	Label  string
	Failed int
}

func (e *AllFailedError) Error() string {
	return fmt.Sprintf("%s: all %d requests failed", e.Label, e.Failed)
}

// Run runs each point of the plan against c with model (resolved by the caller), writes the
// result JSON of each to SaveResult, and returns the points (Finish follows their report).
func (p *Plan) Run(ctx context.Context, c *openaiclient.Client, model string, o RunOptions) ([]SweepPoint, error) {
	cfg := p.Config
	cfg.Model, cfg.Now = model, o.Now
	rates, concs := p.Rates, p.Concurrencies
	var points []SweepPoint
	for i := 0; i < max(len(rates), len(concs)); i++ {
		pc := cfg
		pc.RequestRate, pc.MaxConcurrency = rates[min(i, len(rates)-1)], int(concs[min(i, len(concs)-1)])
		label := fmt.Sprintf("rate %s, concurrency %s", rateName(pc.RequestRate), concName(pc.MaxConcurrency))
		if o.Progress != nil {
			pc.Progress = func(done, failed int) { o.Progress(label, done, failed, pc.Requests) }
		}
		res, err := Run(ctx, c, pc)
		if err != nil {
			return nil, err
		}
		res.Config.Path = o.Via
		x := pc.RequestRate
		if p.ConcurrencySweep() {
			x = float64(pc.MaxConcurrency)
		}
		if math.IsInf(x, 1) {
			x = 0
		}
		points = append(points, SweepPoint{X: x, Label: label, Result: res})
		if p.SaveResult != "" {
			if err := p.saveResult(i, res, o); err != nil {
				return nil, err
			}
		}
	}
	return points, nil
}

// Finish draws the plot of a sweep to Plot, then says whether a point failed: every request
// of it failed (AllFailedError).
func (p *Plan) Finish(points []SweepPoint, o RunOptions) error {
	if p.Plot != "" {
		if err := p.savePlot(points, o); err != nil {
			return err
		}
	}
	for _, pt := range points {
		if pt.Result.Completed == 0 {
			return &AllFailedError{Label: pt.Label, Failed: pt.Result.Failed}
		}
	}
	return nil
}

// saveResult writes point i's result in vLLM's format: SaveResult, or with a sweep SaveResult
// with -N before the extension.
func (p *Plan) saveResult(i int, res *Result, o RunOptions) error {
	file := p.SaveResult
	if p.Sweeping() {
		ext := filepath.Ext(file)
		file = strings.TrimSuffix(file, ext) + fmt.Sprintf("-%d", i+1) + ext
	}
	b, _ := json.MarshalIndent(res.VLLMResult(p.Label), "", "  ")
	if err := os.WriteFile(file, append(b, '\n'), 0o644); err != nil {
		return err
	}
	if o.Wrote != nil {
		o.Wrote(file, " (vLLM's result format)")
	}
	return nil
}

func (p *Plan) savePlot(points []SweepPoint, o RunOptions) error {
	var buf bytes.Buffer
	xName := "request rate (req/s; inf last)"
	if p.ConcurrencySweep() {
		xName = "max concurrency"
	}
	if err := PlotSweep(&buf, points, xName, plotFormat(p.Plot)); err != nil {
		return &OptionError{Reason: fmt.Sprintf("--plot: %v", err)}
	}
	if err := os.WriteFile(p.Plot, buf.Bytes(), 0o644); err != nil {
		return err
	}
	if o.Wrote != nil {
		o.Wrote(p.Plot, "")
	}
	return nil
}

func plotFormat(file string) string { return strings.TrimPrefix(filepath.Ext(file), ".") }

// Output is what -o json or vllm-json writes of points: one result, or a list with a sweep.
func (p *Plan) Output(points []SweepPoint) any {
	switch {
	case p.Options.Output == "json" && !p.Sweeping():
		return points[0].Result
	case p.Options.Output == "json":
		return points
	case !p.Sweeping():
		return points[0].Result.VLLMResult(p.Label)
	}
	var all []map[string]any
	for _, pt := range points {
		all = append(all, pt.Result.VLLMResult(p.Label))
	}
	return all
}

func rateName(r float64) string {
	if math.IsInf(r, 1) || r == 0 {
		return "inf"
	}
	return strconv.FormatFloat(r, 'g', -1, 64)
}

func concName(c int) string {
	if c == 0 {
		return "no limit"
	}
	return strconv.Itoa(c)
}
