package vllm

import (
	"fmt"
	"image/color"
	"io"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
	"gonum.org/v1/plot/vg/vgsvg"
)

// SweepPoint is one run of a request-rate or concurrency sweep.
type SweepPoint struct {
	// X is the swept setting: requests/s (0 for inf) or the concurrency.
	X      float64      `json:"x"`
	Label  string       `json:"label"`
	Result *BenchResult `json:"result"`
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
// when targets were given, marking the knee; format "png" or "svg".
func PlotSweep(w io.Writer, points []SweepPoint, xName, format string) error {
	p := plot.New()
	p.Title.Text = "serving sweep: latency p99 vs " + xName
	p.X.Label.Text = xName
	p.Y.Label.Text = "ms (goodput: req/s)"
	series := []struct {
		name string
		get  func(*BenchResult) (float64, bool)
		col  color.RGBA
	}{
		{"TTFT p99 (ms)", func(r *BenchResult) (float64, bool) { return r.TTFTMs.P99, true }, color.RGBA{R: 0x1f, G: 0x77, B: 0xb4, A: 0xff}},
		{"ITL p99 (ms)", func(r *BenchResult) (float64, bool) { return r.ITLMs.P99, true }, color.RGBA{R: 0xd6, G: 0x27, B: 0x28, A: 0xff}},
		{"goodput (req/s)", func(r *BenchResult) (float64, bool) {
			if r.RequestGoodput == nil {
				return 0, false
			}
			return *r.RequestGoodput, true
		}, color.RGBA{R: 0x2c, G: 0xa0, B: 0x2c, A: 0xff}},
	}
	for _, s := range series {
		var xy plotter.XYs
		for i, pt := range points {
			if v, ok := s.get(pt.Result); ok {
				x := pt.X
				if x == 0 {
					x = float64(i + 1) // inf: placed after the others by index
				}
				xy = append(xy, plotter.XY{X: x, Y: v})
			}
		}
		if len(xy) == 0 {
			continue
		}
		l, pts, err := plotter.NewLinePoints(xy)
		if err != nil {
			return err
		}
		l.Color, pts.Color = s.col, s.col
		p.Add(l, pts)
		p.Legend.Add(s.name, l)
	}
	if k := Knee(points); k >= 0 {
		pt := points[k]
		knee, _ := plotter.NewScatter(plotter.XYs{{X: pt.X, Y: pt.Result.TTFTMs.P99}})
		knee.GlyphStyle.Shape = draw.RingGlyph{}
		knee.GlyphStyle.Radius = vg.Points(8)
		p.Add(knee)
		p.Legend.Add("knee: "+pt.Label, knee)
	}
	p.Legend.Top = true
	width, height := vg.Points(750), vg.Points(450)
	switch strings.ToLower(format) {
	case "svg":
		c := vgsvg.New(width, height)
		p.Draw(draw.New(c))
		_, err := c.WriteTo(w)
		return err
	case "png":
		c := vgimg.PngCanvas{Canvas: vgimg.New(width, height)}
		p.Draw(draw.New(c))
		_, err := c.WriteTo(w)
		return err
	}
	return fmt.Errorf("plot format %q: want png or svg", format)
}
