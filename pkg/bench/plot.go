package bench

import (
	"fmt"
	"image/color"
	"io"
	"math"
	"sort"
	"strconv"

	"github.com/ain-hpc/ain/pkg/figure"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
)

// LineRateColor draws the line-rate reference.
var LineRateColor = color.RGBA{R: 0x50, G: 0x50, B: 0x50, A: 0xff}

// Plot draws busbw against message size (log x) with one line per series and a dashed line at
// each distinct line rate, and writes it as PNG or SVG.
func Plot(w io.Writer, series []Series, o figure.Options) error {
	o, err := o.Sized()
	if err != nil {
		return err
	}
	p := plot.New()
	p.Title.Text = o.Title
	if p.Title.Text == "" {
		p.Title.Text = "all_reduce_perf bus bandwidth"
	}
	p.X.Label.Text = "message size (bytes, log scale)"
	p.Y.Label.Text = "busbw (GB/s, out-of-place)"
	p.X.Scale = plot.LogScale{}
	p.X.Tick.Marker = sizeTicks{}
	// Bottom right is empty on a busbw curve (large sizes sit near the top).
	p.Legend.Top = false
	p.Legend.Left = false
	p.Legend.XOffs = -vg.Points(40)
	p.Y.Tick.Marker = linearTicks{}
	p.Add(plotter.NewGrid())
	var lo, hi, top float64
	n := 0
	for i, s := range series {
		var xy plotter.XYs
		for _, pt := range s.Points {
			if pt.Size > 0 {
				xy = append(xy, plotter.XY{X: float64(pt.Size), Y: pt.Busbw})
				if lo == 0 || float64(pt.Size) < lo {
					lo = float64(pt.Size)
				}
				hi = math.Max(hi, float64(pt.Size))
				top = math.Max(top, pt.Busbw)
			}
		}
		if len(xy) == 0 {
			continue
		}
		l, err := plotter.NewLine(xy)
		if err != nil {
			return err
		}
		l.Color = figure.Palette[i%len(figure.Palette)]
		l.Width = vg.Points(2)
		p.Add(l)
		label := s.Label
		if !s.Valid {
			label += " (INVALID)"
		}
		p.Legend.Add(label, l)
		n++
	}
	if n == 0 {
		return fmt.Errorf("nothing to plot: no series has measurements")
	}
	if lo == hi {
		lo, hi = lo/2, hi*2
	}
	rates := map[float64]bool{}
	for _, s := range series {
		if s.LineRateGBps > 0 {
			rates[s.LineRateGBps] = true
		}
	}
	var rl []float64
	for r := range rates {
		rl = append(rl, r)
	}
	sort.Float64s(rl)
	for _, r := range rl {
		l, err := plotter.NewLine(plotter.XYs{{X: lo, Y: r}, {X: hi, Y: r}})
		if err != nil {
			return err
		}
		l.Color = LineRateColor
		l.Width = vg.Points(1.5)
		l.Dashes = []vg.Length{vg.Points(6), vg.Points(4)}
		p.Add(l)
		p.Legend.Add(fmt.Sprintf("line rate %.4g GB/s", r), l)
		top = math.Max(top, r)
	}
	p.X.Min, p.X.Max = lo, hi
	p.Y.Min, p.Y.Max = 0, top*1.08
	if p.Y.Max == 0 {
		p.Y.Max = 1
	}
	hpt := vg.Length(float64(o.Height) * 72 / figure.DPI)
	p.Legend.YOffs = hpt * 0.2 // above the TCP baseline's plateau, below the RDMA curves
	return figure.Render(w, p, o)
}

// sizeTicks labels powers of two on a log axis in binary units (8 B, 1 KiB, 1 MiB, 1 GiB),
// keeping at most ~10 labelled ticks.
type sizeTicks struct{}

func (sizeTicks) Ticks(min, max float64) []plot.Tick {
	if !(min > 0) || max < min {
		return nil
	}
	var exps []int
	for e := int(math.Ceil(math.Log2(min))); e <= int(math.Floor(math.Log2(max))); e++ {
		exps = append(exps, e)
	}
	step := 1
	for len(exps)/step > 10 {
		step++
	}
	// Prefer steps that land on KiB/MiB/GiB boundaries.
	for _, s := range []int{1, 2, 5, 10} {
		if s >= step {
			step = s
			break
		}
	}
	var ticks []plot.Tick
	for _, e := range exps {
		t := plot.Tick{Value: math.Pow(2, float64(e))}
		if e%step == 0 {
			t.Label = SizeLabel(int64(t.Value))
		}
		ticks = append(ticks, t)
	}
	return ticks
}

// linearTicks labels about six round values (1, 2 or 5 x 10^k apart).
type linearTicks struct{}

func (linearTicks) Ticks(lo, hi float64) []plot.Tick {
	if !(hi > lo) {
		return []plot.Tick{{Value: lo, Label: fmt.Sprintf("%g", lo)}}
	}
	raw := (hi - lo) / 6
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	step := mag
	for _, m := range []float64{1, 2, 5, 10} {
		if m*mag >= raw {
			step = m * mag
			break
		}
	}
	decimals := max(0, int(-math.Floor(math.Log10(step))))
	var ticks []plot.Tick
	for i := math.Ceil(lo / step); i*step <= hi+step*1e-9 && len(ticks) < 50; i++ {
		v := i * step
		ticks = append(ticks, plot.Tick{Value: v, Label: strconv.FormatFloat(v, 'f', decimals, 64)})
	}
	return ticks
}
