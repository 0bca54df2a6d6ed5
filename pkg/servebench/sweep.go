package servebench

import (
	"io"

	"github.com/ain-hpc/ain/pkg/figure"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// SweepPoint is one run of a request-rate or concurrency sweep.
type SweepPoint struct {
	// X is the swept setting: requests/s (0 for inf) or the concurrency.
	X      float64 `json:"x"`
	Label  string  `json:"label"`
	Result *Result `json:"result"`
}

// Knee is the index of the last point before the serving stops keeping up: with goodput
// targets, the last whose goodput is at least 90% of its request throughput; without, the
// last before TTFT p99 exceeds three times the first point's. -1 when every point keeps up.
func Knee(points []SweepPoint) int {
	if len(points) == 0 {
		return -1
	}
	base := points[0].Result.TTFTMs.P99
	for i, p := range points {
		r := p.Result
		bad := false
		if r.RequestGoodput != nil {
			bad = *r.RequestGoodput < 0.9*r.RequestThroughput
		} else {
			bad = base > 0 && r.TTFTMs.P99 > 3*base
		}
		if bad {
			return i - 1
		}
	}
	return -1
}

// PlotSweep draws TTFT p99 and ITL p99 (ms) against the swept setting, and goodput (req/s)
// when targets were given, marking the knee; format "png" or "svg", drawn by figure.Render
// like ain's other plots. An infinite rate (X 0) is placed after the others, by its index.
func PlotSweep(w io.Writer, points []SweepPoint, xName, format string) error {
	p := plot.New()
	p.Title.Text = "serving sweep: latency p99 vs " + xName
	p.X.Label.Text = xName
	p.Y.Label.Text = "ms (goodput: req/s)"
	x := func(i int) float64 {
		if points[i].X == 0 {
			return float64(i + 1)
		}
		return points[i].X
	}
	series := []struct {
		name string
		get  func(*Result) (float64, bool)
	}{
		{"TTFT p99 (ms)", func(r *Result) (float64, bool) { return r.TTFTMs.P99, true }},
		{"ITL p99 (ms)", func(r *Result) (float64, bool) { return r.ITLMs.P99, true }},
		{"goodput (req/s)", func(r *Result) (float64, bool) {
			if r.RequestGoodput == nil {
				return 0, false
			}
			return *r.RequestGoodput, true
		}},
	}
	for si, s := range series {
		var xy plotter.XYs
		for i, pt := range points {
			if v, ok := s.get(pt.Result); ok {
				xy = append(xy, plotter.XY{X: x(i), Y: v})
			}
		}
		if len(xy) == 0 {
			continue
		}
		l, pts, err := plotter.NewLinePoints(xy)
		if err != nil {
			return err
		}
		l.Color, pts.Color = figure.Palette[si], figure.Palette[si]
		p.Add(l, pts)
		p.Legend.Add(s.name, l)
	}
	if k := Knee(points); k >= 0 {
		knee, _ := plotter.NewScatter(plotter.XYs{{X: x(k), Y: points[k].Result.TTFTMs.P99}})
		knee.GlyphStyle.Shape = draw.RingGlyph{}
		knee.GlyphStyle.Radius = vg.Points(8)
		p.Add(knee)
		p.Legend.Add("knee: "+points[k].Label, knee)
	}
	p.Legend.Top = true
	return figure.Render(w, p, figure.Options{Format: format})
}
