package bench

import (
	"fmt"
	"image/color"
	"io"
	"math"
	"sort"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
	"gonum.org/v1/plot/vg/vgsvg"
)

// PlotOptions size and format the busbw plot.
type PlotOptions struct {
	Format string // png or svg
	// Width and Height in pixels at 96 dpi (SVG sizes are written in points: pixels x 0.75).
	Width, Height int
	Title         string
}

// Default plot size in pixels.
const (
	DefaultPlotWidth  = 1000
	DefaultPlotHeight = 600
	plotDPI           = 96
)

// Palette is the colour of series i (cycled); the line rate is drawn in LineRateColor.
var Palette = []color.RGBA{
	{R: 0x1f, G: 0x77, B: 0xb4, A: 0xff}, // blue
	{R: 0xd6, G: 0x27, B: 0x28, A: 0xff}, // red
	{R: 0x2c, G: 0xa0, B: 0x2c, A: 0xff}, // green
	{R: 0xff, G: 0x7f, B: 0x0e, A: 0xff}, // orange
	{R: 0x94, G: 0x67, B: 0xbd, A: 0xff}, // purple
	{R: 0x8c, G: 0x56, B: 0x4b, A: 0xff}, // brown
	{R: 0xe3, G: 0x77, B: 0xc2, A: 0xff}, // pink
	{R: 0x17, G: 0xbe, B: 0xcf, A: 0xff}, // cyan
	{R: 0xbc, G: 0xbd, B: 0x22, A: 0xff}, // olive
}

// LineRateColor draws the line-rate reference.
var LineRateColor = color.RGBA{R: 0x50, G: 0x50, B: 0x50, A: 0xff}

// Plot draws busbw against message size (log x) with one line per series and a dashed line at
// each distinct line rate, and writes it as PNG or SVG.
func Plot(w io.Writer, series []Series, o PlotOptions) error {
	o, err := o.sized()
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
		l.Color = Palette[i%len(Palette)]
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
	hpt := vg.Length(float64(o.Height) * 72 / plotDPI)
	p.Legend.YOffs = hpt * 0.2 // above the TCP baseline's plateau, below the RDMA curves
	return Render(w, p, o)
}

// Render draws a plot as PNG or SVG (o.Format) of o.Width x o.Height pixels at 96 dpi; other
// commands' plots (train compare's loss curves) use it so every ain plot looks the same.
func Render(w io.Writer, p *plot.Plot, o PlotOptions) error {
	o, err := o.sized()
	if err != nil {
		return err
	}
	wpt := vg.Length(float64(o.Width) * 72 / plotDPI)
	hpt := vg.Length(float64(o.Height) * 72 / plotDPI)
	var c interface {
		vg.CanvasSizer
		io.WriterTo
	}
	switch strings.ToLower(o.Format) {
	case "png":
		c = vgimg.PngCanvas{Canvas: vgimg.NewWith(vgimg.UseWH(wpt, hpt), vgimg.UseDPI(plotDPI))}
	case "svg":
		c = vgsvg.New(wpt, hpt)
	default:
		return fmt.Errorf("plot format %q: use png or svg", o.Format)
	}
	p.Draw(draw.New(c))
	_, err = c.WriteTo(w)
	return err
}

// sized fills in the default size and checks the limit.
func (o PlotOptions) sized() (PlotOptions, error) {
	if o.Width <= 0 {
		o.Width = DefaultPlotWidth
	}
	if o.Height <= 0 {
		o.Height = DefaultPlotHeight
	}
	if o.Width > 10000 || o.Height > 10000 {
		return o, fmt.Errorf("plot size %dx%d: at most 10000 pixels a side", o.Width, o.Height)
	}
	return o, nil
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
